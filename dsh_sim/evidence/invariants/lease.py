"""``lease_held`` and ``foreign_files_kept``: who may change a session's files, and what the
runtime must leave alone.

The lease (spec §10.3): one writer at a time, by an exclusive ``flock`` on the session's lock
file.  SimFS knows who holds which lock, so every operation that changes a session file — a
write, a truncation, a link, an unlink of a log, a temp file or a migration stage — is judged at
the instant it starts: the process doing it must hold the lock on the file the lock path names
*now* (a lock on a file removed or replaced under it, or none at all, is no lease).  And a file
another process put at a name the runtime publishes (``target_exists``) is never removed or
rewritten: the link refuses, or an identical file is taken as the publication.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dsh_sim.evidence.invariants.base import Invariant, Judge, fail
from dsh_sim.evidence.invariants.links import blocked_by_a_link

if TYPE_CHECKING:
    from dsh_sim.engine.lifetime import Lifetime

LEASE = "lease_held"
FOREIGN = "foreign_files_kept"
MUTATIONS = frozenset({"fs.write", "fs.ftruncate", "fs.truncate", "fs.link", "fs.unlink"})


def check_lease(obs: Judge, life: Lifetime, name: str, details: dict[str, Any]) -> None:
    """``name`` (one of :data:`MUTATIONS`) on ``details["path"]`` by ``life``: held under the lease?"""
    paths = obs.sim.config.paths
    path = str(details.get("path"))
    if not path.startswith(paths.session_dir + "/") or path == paths.lock:
        return
    obs.count(LEASE)
    disk = obs.sim.disk
    lock = disk.resolve(paths.lock)
    holder = disk.locks.get(lock) if lock is not None else None
    if holder is not None and holder[0] == life.index:
        return
    if blocked_by_a_link(obs):
        return  # (a planted link: links_not_followed judges what the runtime does there)
    whose = "no process" if holder is None else f"process {holder[0]}"
    what = "there is no lock file" if lock is None else f"{whose} holds the lock on the file the lock path names now"
    fail(obs, LEASE, f"process {life.index} ran {name} on {path} without the lease: {what}", None, f"lock path {paths.lock}")


def check_foreign_files(obs: Judge) -> None:
    """Every file another process put at a session name still holds exactly what it put there."""
    disk = obs.sim.disk
    # the harness's own doings: its corrupt faults, and links it planted there (moving the file aside)
    damaged = {corruption.path for corruption in obs.corruptions} | {planted.path for planted in obs.history.planted}
    for path, data in obs.history.foreign_files:
        if path in damaged:
            continue
        obs.count(FOREIGN)
        now = disk.read_path(path)
        if now != data:
            what = "was removed" if now is None else f"now holds {len(now)} other bytes"
            fail(obs, FOREIGN, f"the file another process put at {path} {what}: the runtime must never remove or overwrite it")


LEASE_HELD = Invariant(
    LEASE,
    (
        "every operation that changes a session file (a write, truncation, link or unlink of a log, a "
        "temp file or a migration stage) is done by the process that holds the exclusive lock on the file"
        " the lock path names at that instant (spec §10.3): never without it, never under a lock on a "
        "file removed or replaced since"
    ),
    checks={"point": lambda obs, at: check_lease(obs, at.life, at.name, at.details)},
    points=MUTATIONS,
)
FOREIGN_FILES_KEPT = Invariant(
    FOREIGN,
    (
        "a file another process put at a name the runtime publishes (target_exists) still holds exactly "
        "what it held: the link refuses, or an identical file is taken as the publication, never removed "
        "or overwritten"
    ),
    checks={"step": lambda obs, _: check_foreign_files(obs)},
)
