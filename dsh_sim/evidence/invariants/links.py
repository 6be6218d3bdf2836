"""``links_not_followed``: a symbolic link planted at a session path is never followed.

Another program may put a link where the project or session directory, the log or the lock
file goes (``plant_link``).  Whatever the runtime does about it — refuse the open, report the
path as unsafe — it must never create, write, truncate or remove anything through it: the
link's target, outside the sessions root, holds exactly what it held when the link was
planted.  Complete by construction for "reached through": any operation that followed the link
and changed something shows in the target's tree.
"""

from __future__ import annotations

from dsh_sim.engine import links
from dsh_sim.evidence.invariants.base import Invariant, Judge, fail
from runtime.persistence.errors import (
    GenerationTargetConflictError,
    SessionAlreadyExistsError,
    SessionPersistenceCorruptionError,
    UnsafeSessionPathError,
)

# what a runtime rightly answers when another process's file sits at the log's name
FOREIGN_REFUSALS = (SessionAlreadyExistsError, GenerationTargetConflictError, SessionPersistenceCorruptionError)

NAME = "links_not_followed"


def check_links_not_followed(obs: Judge) -> None:
    """After every step and boot: each planted link's target is as it was planted."""
    disk = obs.sim.disk
    for planted in obs.sim.history.planted:
        obs.count(NAME)
        now = disk.tree(planted.target)
        if now != planted.contents:
            before, after = dict(planted.contents), dict(now)
            changed = sorted(
                n for n in set(before) | set(after) if before.get(n, b"?") != after.get(n, b"?") or (n in before) != (n in after)
            )
            fail(
                obs,
                NAME,
                f"the link planted at {planted.path} was followed: its target {planted.target} changed ({', '.join(changed[:5])})",
            )


def foreign_log(obs: Judge) -> bool:
    """Another process's file (``target_exists``) stands at the session log's name (as it was
    put there, or as the harness's own corrupt fault left it)."""
    foreign = obs.history.foreign_files
    if not foreign:
        return False  # (nearly every run: nothing planted)
    log = obs.sim.config.log_path
    corrupted = any(corruption.path == log for corruption in obs.corruptions)
    return any(path == log and (corrupted or obs.sim.disk.read_path(path) == data) for path, data in foreign)


def refused_for_a_link(obs: Judge, error: BaseException | None) -> bool:
    """Whether ``error`` is the refusal a planted link calls for — an unsafe-path error naming
    a planted link that is still in place — or one that another process's file at the log's
    name calls for (the log already exists, differs from the migrated one, or is not a log).
    Such a refusal is the runtime doing its job: a boot or a stop it fails is not a failed
    recovery or a lost session."""
    if isinstance(error, FOREIGN_REFUSALS) and foreign_log(obs):
        return True
    if not isinstance(error, UnsafeSessionPathError):
        return False
    return any(planted.path == error.path for planted in links.standing(obs.sim.disk, obs.sim.history))


def blocked_by_a_link(obs: Judge) -> bool:
    """Whether a planted link stands at the log, at the lock file (a first publication takes the
    lock) or at a directory above them — or another process's file at the log's name: while it
    does, every write of the session may be refused (whatever the judges of timeliness expect)."""
    if foreign_log(obs):
        return True
    if not obs.history.planted:
        return False  # (nearly every run: nothing planted)
    paths = obs.sim.config.paths
    return any(
        planted.path in (paths.log, paths.lock) or paths.log.startswith(planted.path + "/")
        for planted in links.standing(obs.sim.disk, obs.sim.history)
    )


def _judge(obs: Judge, _: object) -> None:
    check_links_not_followed(obs)


LINKS_NOT_FOLLOWED = Invariant(
    NAME,
    (
        "a symbolic link another program planted where a session path goes (project or session directory,"
        " log, lock file) is never followed: its target outside the sessions root holds exactly what it "
        "held when the link was planted"
    ),
    checks={"boot": _judge, "step": _judge, "shutdown": _judge},  # (explore's recovery runs take no steps; the final drain is a write too)
)
