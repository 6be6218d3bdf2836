"""``no_residue``: a process that stops without a crash leaves nothing open and no stray name
in the session directory (spec §3.6)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from dsh_sim.evidence.invariants.base import Invariant, Judge, fail
from dsh_sim.evidence.invariants.moments import Boot, Process, Shutdown, Step
from runtime.persistence import layout

if TYPE_CHECKING:
    from dsh_sim.engine.lifetime import Lifetime

RESIDUE = "no_residue"


_STRAY: dict[tuple[Any, ...], frozenset[str]] = {}  # (entries, lock name, parser) -> the stray names


def stray_names(obs: Judge) -> set[str]:
    """Names in the session directory that are neither a log generation nor the lock file.

    Remembered per directory listing: judged after every step, boot and shutdown, and the
    listing seldom changes.  The key is all the answer depends on — the entries (a frozen
    tuple of names and inodes), the lock file's name and the generation-name parser."""
    lock, parse = layout.LOCK_FILENAME, layout.parse_generation_filename
    disk = obs.sim.disk
    ino = disk.resolve(obs.sim.config.log_path.rsplit("/", 1)[0])
    if ino is None or not disk.is_dir(ino):  # (a link planted in place of the directory)
        return set()
    key = (disk.dir(ino).entries, lock, parse)
    known = _STRAY.get(key)
    if known is None:
        known = frozenset(name for name, _ in key[0] if name != lock and parse(name) is None)
        if len(_STRAY) >= 4096:
            _STRAY.clear()
        _STRAY[key] = known
    return set(known)


CLEANUP_POINTS = ("fs.unlink",)  # a fault here fails a removal itself: a stray name is then by design


def cleanup_faulted(obs: Judge, life: Lifetime) -> bool:
    """Whether a fault struck one of ``life``'s removals (the only way a failed durability
    sequence may leave its temp file: the next write open removes it, spec §3.6)."""
    return any(f.lifetime == life.index and f.point in CLEANUP_POINTS for f in obs.faults)


def check_residue(obs: Judge, life: Lifetime, faults_in_life: bool, stray_at_boot: set[str]) -> None:
    """After a clean stop, or an exit on an error: nothing left open — every durability
    sequence closes what it opened on its failure paths too (a leaked descriptor is fd
    exhaustion in production).  And unless a fault struck a removal (``faults_in_life``), no
    stray name this process made: a failed write, fsync, link or directory fsync, or a
    cancellation, still removes the temp file it created (what a crashed predecessor left
    is not this process's to clean, unless it opened the log for write — then the spec's
    write open removes stale temps)."""
    obs.count(RESIDUE)
    still_open = life.view.open_paths()
    if still_open:
        fail(obs, RESIDUE, f"process {life.index} stopped with descriptors still open: {still_open}")
    if faults_in_life:
        return
    stray = sorted(stray_names(obs) - stray_at_boot)
    if stray:
        fail(obs, RESIDUE, f"process {life.index} ended without a crash but left {stray} in the session directory")


@attrs.define
class _Seen:
    """The stray names a process cannot be blamed for: those there when the last step ended
    (a boot that fails is judged against them) and those there when each process booted."""

    before_step: set[str]
    at_boot: dict[int, set[str]] = attrs.field(factory=dict)


def _boot(obs: Judge, boot: Boot) -> None:
    seen: _Seen = obs.memory(RESIDUE)
    life = boot.life
    seen.at_boot[life.index] = stray_names(obs)
    if life.boot_error is not None and life.crash is None:  # the process exited: what it opened is closed
        check_residue(obs, life, faults_in_life=cleanup_faulted(obs, life), stray_at_boot=seen.before_step)


def _step(obs: Judge, _: Step) -> None:
    seen: _Seen = obs.memory(RESIDUE)
    seen.before_step = stray_names(obs)


def _second_writer(obs: Judge, process: Process) -> None:
    if process.life.crash is None:
        check_residue(obs, process.life, faults_in_life=True, stray_at_boot=set())  # (the directory belongs to the primary)


def _shutdown(obs: Judge, end: Shutdown) -> None:
    life = end.life
    if not end.primary or life.crash is not None:
        return
    erred = life.boot_error is not None or life.exit_error is not None  # (descriptors only)
    faulted = erred or cleanup_faulted(obs, life)
    seen: _Seen = obs.memory(RESIDUE)
    check_residue(obs, life, faults_in_life=faulted, stray_at_boot=seen.at_boot.get(life.index, set()))


NO_RESIDUE = Invariant(
    RESIDUE,
    (
        "a process that stops cleanly leaves no descriptor open, and — when no fault struck it — no temp "
        "file or other stray name in the session directory"
    ),
    checks={"boot": _boot, "step": _step, "second_writer": _second_writer, "shutdown": _shutdown},
    memory=lambda obs: _Seen(stray_names(obs)),  # (explore starts from a crash image that may hold some)
)
