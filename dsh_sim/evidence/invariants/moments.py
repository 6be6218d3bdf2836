"""The moments invariants are judged at: what the checker knows at each hook, handed to every
check registered there (:class:`~dsh_sim.evidence.invariants.base.Invariant`).

The checker builds one moment per hook call, so what several invariants read — the events a
boot recovered, the log as the disk holds it after repair, the faults a step met — is worked out
once and shared, and no check depends on when another one ran.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from dsh_sim.evidence.oracles.spec_log import read_recoverable
from dsh_sim.evidence.oracles.spec_records import SpecViolation

if TYPE_CHECKING:
    from dsh_sim.engine.crash import CrashRecord
    from dsh_sim.engine.hang import Hung
    from dsh_sim.engine.history import FaultFired
    from dsh_sim.engine.lifetime import Lifetime
    from dsh_sim.engine.observer import ReaderView
    from dsh_sim.evidence.invariants.base import Judge
    from runtime.session.events import Event


@attrs.frozen
class Acknowledged:
    """``batch`` acknowledged as durable; the log held ``before`` at the previous acknowledgement
    (or at open) and holds ``after`` now."""

    life: Lifetime
    batch: tuple[Event, ...]
    before: bytes
    after: bytes | None


@attrs.frozen
class Point:
    """A live process announced the named point ``name`` with ``details``."""

    life: Lifetime
    name: str
    details: dict[str, Any]


@attrs.frozen
class BeforeBoot:
    """A process is about to boot from the image ``crash`` left."""

    crash: CrashRecord


@attrs.define(slots=False)
class Boot:
    """Process ``life`` booted; ``crash`` is the latest crash before it (``None``: none yet).

    At the ``recovery`` hook ``crash`` is set and this boot is the first to recover from it."""

    judge: Judge
    life: Lifetime
    crash: CrashRecord | None
    first: bool  # no process booted before this one in this simulation

    @property
    def accepted(self) -> bool:
        """The boot opened the session (no error): what it recovered can be judged."""
        return self.life.boot_error is None and self.life.session is not None

    @functools.cached_property
    def live(self) -> tuple[Event, ...]:
        """The session as the booted process holds it (recovered events, closers, what followed)."""
        session = self.life.session
        return tuple(session.events) if session is not None else ()

    @functools.cached_property
    def stored(self) -> tuple[Event, ...]:
        """The events recovery read from the log."""
        report = self.life.report
        return tuple(report.events) if report is not None else ()

    @functools.cached_property
    def closers(self) -> tuple[Event, ...]:
        """The events repair appended to close what the crash left open."""
        report = self.life.report
        return tuple(getattr(report, "closers", ())) if report is not None else ()

    @property
    def full(self) -> tuple[Event, ...]:
        """The recovered log: stored events and the closers."""
        return self.stored + self.closers

    @functools.cached_property
    def on_disk(self) -> tuple[Any, ...] | None:
        """The repaired log as the disk holds it now, read by the spec (``None``: unreadable)."""
        sim = self.judge.sim
        data = sim.disk.read_path(sim.config.log_path)
        if data is None:
            return None
        try:
            return read_recoverable(data, sim.config.compression).records
        except SpecViolation:
            return None

    @property
    def after_repair(self) -> Sequence[Any]:
        """The repaired log as the disk holds it, or the live session when the disk cannot say."""
        return self.on_disk if self.on_disk is not None else self.live


def accepted(check: Callable[[Judge, Boot], None]) -> Callable[[Judge, Boot], None]:
    """``check`` at every boot that opened the session (a refused open is judged by
    recovery_succeeds, corrupt_frame_refused and links_not_followed)."""

    def judge(obs: Judge, boot: Boot) -> None:
        if boot.accepted:
            check(obs, boot)

    return judge


@attrs.frozen
class Process:
    """Something happened to process ``life`` (a second writer tried the session)."""

    life: Lifetime


@attrs.frozen
class Step:
    """A step ran: ``op`` with ``args`` ended ``outcome``; ``faults`` fired during it.

    ``life`` is the primary process when it is alive with an open session (else ``None``);
    ``current`` the process the step ran in (its error is the step's); ``quiet``: no fault
    fired and the step did not crash."""

    op: str
    outcome: str
    args: Any
    faults: tuple[FaultFired, ...]
    quiet: bool
    life: Lifetime | None
    current: Lifetime | None


@attrs.frozen
class Live:
    """The live log of ``life`` gained ``fresh`` events since the last look (maybe none);
    ``recovered`` is what the process started from (its recovered, closed log)."""

    life: Lifetime
    fresh: tuple[Event, ...]
    recovered: tuple[Event, ...]


@attrs.frozen
class Hang:
    """A command of process ``life`` hung (``hang``); the harness killed it."""

    life: Lifetime
    hang: Hung


@attrs.frozen
class Failure:
    """An operation of process ``life`` raised ``error``; ``quiet``: no fault fired since the step began."""

    life: Lifetime
    error: BaseException
    quiet: bool


@attrs.frozen
class Reader:
    """A read-only reader beside process ``life`` saw ``view``."""

    life: Lifetime
    view: ReaderView


@attrs.frozen
class Shutdown:
    """Process ``life`` stopped (``faults_during``: a fault fired while it stopped); ``primary``:
    it is the simulation's primary process (not a reader or second writer beside it)."""

    life: Lifetime
    faults_during: bool
    primary: bool
