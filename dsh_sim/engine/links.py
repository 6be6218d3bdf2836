"""Symbolic links another program plants at session paths, and their removal.

The runtime promises that session files are never reached through links (it refuses them:
``UnsafeSessionPathError``).  The simulator tests that promise the way the world breaks it:
a link planted where a session path goes between two processes (the ``plant_link`` step), or
in place of the very file a process is about to open (the ``linked`` fault at ``fs.open``: the
race between the runtime's checks and its open, which only ``O_NOFOLLOW`` closes).  A file
that was at the name is moved aside (as ``mv`` would) and put back when the operator removes
the links.  Each link points outside the sessions root at something of its own kind holding
known bytes; the judges hold the runtime to leaving it exactly so (``links_not_followed``).
"""

from __future__ import annotations

import posixpath

from dsh_sim.adapters.simfs import Disk
from dsh_sim.engine.history import History, PlantedLink

OUTSIDE = "/sim/outside"  # beside the sessions root, never under it
SENTINEL = b"not a session file\n"


def plant(disk: Disk, history: History, path: str, *, directory: bool) -> PlantedLink:
    """Put a link at ``path`` to a new directory (holding one file) or file outside the root;
    whatever was at ``path`` is moved aside, durably, until :func:`remove_all`."""
    n = len(history.planted)
    displaced = None
    if disk.resolve(path) is not None:
        displaced = f"{OUTSIDE}/displaced-{n}"
        disk.rename_durable(path, displaced)
    target = f"{OUTSIDE}/{posixpath.basename(path)}-{n}"
    disk.write_file_durable(f"{target}/keep" if directory else target, SENTINEL)
    disk.symlink_durable(path, target)
    planted = PlantedLink(path, target, disk.tree(target), displaced)
    history.planted.append(planted)
    return planted


def standing(disk: Disk, history: History) -> list[PlantedLink]:
    """The planted links still where they were planted (and still pointing where they did)."""
    return [planted for planted in history.planted if disk.link_target(planted.path) == planted.target]


def remove_all(disk: Disk, history: History) -> int:
    """The operator removes every planted link still in place and puts back what each one
    displaced; returns how many links were removed."""
    removed = 0
    for planted in reversed(history.planted):  # (the latest first: a name planted twice unwinds in order)
        if disk.link_target(planted.path) != planted.target:  # (checked as it unwinds: an earlier removal restores names)
            continue
        disk.remove_links([planted.path])
        removed += 1
        if planted.displaced is not None and disk.resolve(planted.displaced) is not None:
            disk.rename_durable(planted.displaced, planted.path)
    return removed


def in_place(disk: Disk, history: History) -> bool:
    """Whether any planted link is still where it was planted."""
    return bool(standing(disk, history))


FOREIGN_BYTES = b"a file another process put here\n"


def plant_file(disk: Disk, history: History, path: str) -> None:
    """Another process puts a file of its own at ``path`` (durably), unless something is there
    already: the runtime's link to that name must then fail, and the file stay as it is."""
    if disk.resolve(path) is None:
        disk.write_file_durable(path, FOREIGN_BYTES)
        history.foreign_files.append((path, FOREIGN_BYTES))
