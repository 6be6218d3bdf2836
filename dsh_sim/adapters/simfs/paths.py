"""Path resolution in SimFS, the way Linux does it, symbolic links included.

Every intermediate component that is a symbolic link is followed (an absolute target
restarts at the root, a relative one continues in the link's directory, ``..`` climbs the
directories actually walked); the final component is followed only when the operation
follows links (``open`` without ``O_NOFOLLOW``, ``stat``, ``truncate``...), not by ``lstat``,
``unlink``, ``mkdir``, ``link`` or an exclusive create.  More than 40 links in one lookup is
``ELOOP``, as in Linux.  The runtime's symlink refusals are exercised in simulation against
exactly this behaviour, and ``tests/test_simfs_conformance.py`` compares it with the real OS.
"""

from __future__ import annotations

import errno
import os
import posixpath
from collections import deque
from typing import NamedTuple

from dsh_sim.adapters.simfs.disk import ROOT_INO, DirNode, Disk, SymlinkNode

MAX_SYMLINKS = 40  # Linux's MAXSYMLINKS


def os_error(code: int, path: str | None = None) -> OSError:
    return OSError(code, os.strerror(code), path) if path is not None else OSError(code, os.strerror(code))


class Lookup(NamedTuple):
    """Where a path leads: the directory holding the final name, the name, and its inode.

    ``ino`` is None when the final name does not exist (its directory does); ``name`` is ""
    when the path ends on a directory reached without naming an entry (``/``, or a link
    whose target ends in ``..``).  A named tuple, not an attrs class: one is built on every
    filesystem call.
    """

    parent: int
    name: str
    ino: int | None


# A Lookup built as its tuple directly: the named tuple's own ``__new__`` is a Python function
# that does only this, and a lookup runs on nearly every filesystem call.
_new_lookup = tuple.__new__


def lookup(disk: Disk, path: str, *, follow: bool) -> Lookup:
    """Resolve an absolute ``path``; ``follow``: whether a final symbolic link is followed.

    Most paths name no symbolic link: they are walked directly; the first link to follow
    sends the lookup to the general walk (:func:`_walk`), which starts over (a lookup changes
    nothing, so starting over gives what the general walk alone gives)."""
    if not path.startswith("/"):
        raise os_error(errno.ENOENT, path)
    if "//" in path or "/." in path or path.endswith("/"):
        parts = [part for part in posixpath.normpath(path).split("/") if part]
    else:  # already normal (what normpath would return): split it as it is
        parts = path.split("/")[1:]
    if not parts:
        return Lookup(ROOT_INO, "", ROOT_INO)
    nodes = disk.nodes
    parent = ROOT_INO
    here = nodes[ROOT_INO]
    # a normal absolute path has no "." or ".." component (normpath removes them all)
    for part in parts[:-1]:  # the directories leading to the final name
        if not isinstance(here, DirNode):
            if isinstance(here, SymlinkNode):
                return _walk(disk, path, parts, follow)
            raise os_error(errno.ENOTDIR, path)
        for entry_name, ino in here.entries:
            if entry_name == part:
                parent = ino
                break
        else:
            raise os_error(errno.ENOENT, path)
        here = nodes[parent]
    if not isinstance(here, DirNode):
        if isinstance(here, SymlinkNode):
            return _walk(disk, path, parts, follow)
        raise os_error(errno.ENOTDIR, path)
    name = parts[-1]
    for entry_name, ino in here.entries:
        if entry_name == name:
            if follow and isinstance(nodes[ino], SymlinkNode):
                return _walk(disk, path, parts, follow)
            return _new_lookup(Lookup, (parent, name, ino))
    return _new_lookup(Lookup, (parent, name, None))


def _walk(disk: Disk, path: str, path_parts: list[str], follow: bool) -> Lookup:
    """The general walk: symbolic links followed as Linux follows them (see the module)."""
    pending = deque(path_parts)
    stack = [ROOT_INO]
    hops = 0
    while pending:
        part = pending.popleft()
        if part == ".":
            continue
        if part == "..":
            if len(stack) > 1:
                stack.pop()
            continue
        here = disk.nodes[stack[-1]]
        if not isinstance(here, DirNode):
            raise os_error(errno.ENOTDIR, path)
        child = here.lookup(part)
        last = not pending
        if child is None:
            if last:
                return Lookup(stack[-1], part, None)
            raise os_error(errno.ENOENT, path)
        node = disk.nodes[child]
        if isinstance(node, SymlinkNode) and (follow or not last):
            hops += 1
            if hops > MAX_SYMLINKS:
                raise os_error(errno.ELOOP, path)
            if not node.target:
                raise os_error(errno.ENOENT, path)
            if node.target.startswith("/"):
                stack = [ROOT_INO]
            pending.extendleft(reversed([p for p in node.target.split("/") if p]))
            continue
        if last:
            return Lookup(stack[-1], part, child)
        stack.append(child)
    return Lookup(stack[-2] if len(stack) > 1 else ROOT_INO, "", stack[-1])


def existing(disk: Disk, path: str, *, follow: bool) -> int:
    """The inode ``path`` names; ``ENOENT`` when it does not exist."""
    found = lookup(disk, path, follow=follow)
    if found.ino is None:
        raise os_error(errno.ENOENT, path)
    return found.ino


def _link_target(disk: Disk, path: str) -> str | None:
    """The target if ``path`` is a symbolic link (not followed), else None (also when absent)."""
    try:
        found = lookup(disk, path, follow=False)
    except OSError:
        return None
    node = disk.nodes.get(found.ino) if found.ino is not None else None
    return node.target if isinstance(node, SymlinkNode) else None


def realpath(disk: Disk, filename: str) -> str:
    """``os.path.realpath`` (non-strict) over the simulated disk: CPython's algorithm, ported."""
    path, _ = _join_real(disk, "", filename, {})
    return posixpath.normpath(path)


def _join_real(disk: Disk, path: str, rest: str, seen: dict[str, str | None]) -> tuple[str, bool]:
    if rest.startswith("/"):
        rest, path = rest[1:], "/"
    while rest:
        name, _, rest = rest.partition("/")
        if not name or name == ".":
            continue
        if name == "..":
            if path:
                path, name = posixpath.split(path)
                if name == "..":
                    path = posixpath.join(path, "..", "..")
            else:
                path = ".."
            continue
        newpath = posixpath.join(path, name)
        target = _link_target(disk, newpath)
        if target is None:
            path = newpath
            continue
        if newpath in seen:
            cached = seen[newpath]
            if cached is not None:
                path = cached
                continue
            return posixpath.join(newpath, rest), False  # a loop: the rest stays unresolved
        seen[newpath] = None
        path, ok = _join_real(disk, path, target, seen)
        if not ok:
            return posixpath.join(path, rest), False
        seen[newpath] = path
    return path, True
