"""What every invariant is made of: its definition (:class:`Invariant`), the judge it reads and
reports to (:class:`Judge`), and the violation record every check reports.

The registry of all of them is :mod:`dsh_sim.evidence.invariants.registry`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

import attrs

from runtime.session.events import Event

if TYPE_CHECKING:
    from dsh_sim.engine.crash import CrashRecord
    from dsh_sim.engine.history import Corruption, FaultFired, History
    from dsh_sim.engine.machine import Simulation

NO_HANG = "no_hang"


@attrs.frozen
class Violation:
    invariant: str
    message: str
    call_id: str | None = None
    evidence: tuple[str, ...] = ()

    def describe(self) -> str:
        call = f" [call {self.call_id}]" if self.call_id else ""
        lines = [f"{self.invariant}{call}: {self.message}"] + [f"  evidence: {e}" for e in self.evidence]
        return "\n".join(lines)


class Judge(Protocol):
    """What a check reads and where it reports (the checker, :mod:`dsh_sim.evidence.checker`)."""

    sim: Simulation
    violations: list[Violation]
    recoveries: list[dict[str, Any]]
    verdict_counts: dict[tuple[str, bool], int]

    @property
    def history(self) -> History: ...
    @property
    def acked(self) -> dict[int, Event]: ...
    @property
    def acked_bytes(self) -> bytes: ...
    @property
    def faults(self) -> list[FaultFired]: ...
    @property
    def corruptions(self) -> list[Corruption]: ...
    @property
    def crashes(self) -> list[CrashRecord]: ...
    @property
    def paused_until(self) -> float: ...
    def report(self, violation: Violation) -> None: ...
    def count(self, name: str) -> None: ...
    def memory(self, name: str) -> Any:
        """What invariant ``name`` remembers across this simulation (its ``Invariant.memory``)."""
        ...


Hook = Literal[
    "acknowledged",  # the runtime acknowledged a batch as durable (moments.Acknowledged)
    "point",  # a live process announced a named point (moments.Point)
    "before_boot",  # a process is about to boot after a crash (moments.BeforeBoot)
    "boot",  # a process booted: every boot, whatever it found (moments.Boot)
    "recovery",  # the first boot that recovered from a given crash (moments.Boot, its crash set)
    "second_writer",  # a second writer tried the session beside the first (moments.Process)
    "step",  # a step of the scenario or rule handed control back (moments.Step)
    "live",  # what a live process's log gained since the last look (moments.Live)
    "hang",  # a command hung and the harness killed it (moments.Hang)
    "flush_failed",  # a flush raised (moments.Failure)
    "reader",  # a read-only reader beside the writer finished (moments.Reader)
    "reader_failed",  # that reader was refused (moments.Failure)
    "shutdown",  # a process stopped (moments.Shutdown)
    "end",  # a process stopped, after its log's last live judgement (moments.Shutdown)
]

Check = Callable[[Judge, Any], None]  # (the judge, the hook's moment) -> reports through fail()


@attrs.frozen(eq=False)
class Invariant:
    """One named invariant: what must hold, the moments it is judged at and how.

    ``checks`` maps each hook it listens to onto its check there; the checker
    (:mod:`dsh_sim.evidence.checker`) runs every registered check at its hook, in the
    registry's order.  ``points`` narrows the ``point`` hook to those named points (``None``:
    every point the runtime announces).  ``memory`` builds what it remembers across a
    simulation (a model fed as the run goes, what it saw last), reached with
    :meth:`Judge.memory`.  An invariant judged outside a simulation's checker (by a
    differential of its own) names where in ``judged_by`` and has no checks."""

    name: str
    description: str
    checks: Mapping[Hook, Check] = attrs.field(factory=dict)
    points: frozenset[str] | None = None
    memory: Callable[[Judge], object] | None = None
    judged_by: str | None = None

    def __attrs_post_init__(self) -> None:
        if bool(self.checks) == bool(self.judged_by):
            raise ValueError(f"invariant {self.name}: either checks at hooks or judged_by, exactly one")
        if self.points is not None and "point" not in self.checks:
            raise ValueError(f"invariant {self.name}: points named without a check at the point hook")


def fail(obs: Judge, name: str, message: str, call_id: str | None = None, *evidence: str) -> None:
    violation = Violation(name, message, call_id, tuple(evidence))
    if violation not in obs.violations:  # a check that runs after every step reports once
        obs.report(violation)


def call_seq(events: Sequence[Event], call_id: str) -> int | None:
    for event in events:
        if event.type == "tool/call" and event.data["callId"] == call_id:
            return event.seq
    return None
