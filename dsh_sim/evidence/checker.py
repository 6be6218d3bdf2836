"""The checker: runs the invariant registry at every hook of a simulation.

It observes the kernel through :class:`~dsh_sim.engine.observer.Observer` hooks; at each one it
builds the moment (:mod:`dsh_sim.evidence.invariants.moments`) and runs every check the
registry (:mod:`dsh_sim.evidence.invariants.registry`) holds for that hook — live checks at the
named point, recovery checks after every boot, storage checks at shutdown, the second writer, a
failed flush — counting every check and keeping every violation.  What no single invariant
owns stays here: when a step began and what it met, which crash a boot recovers from, what a
live log gained since the last look.  It also turns each crash + recovery into a coverage case.
A driver attaches one per simulation (:meth:`Checker.attach`); the kernel never imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dsh_sim.engine.observer import Observer
from dsh_sim.evidence.coverage import case_from_recovery
from dsh_sim.evidence.invariants import moments
from dsh_sim.evidence.invariants.base import Hook, Violation
from dsh_sim.evidence.invariants.links import refused_for_a_link
from dsh_sim.evidence.invariants.recovery import io_fault_refused
from dsh_sim.evidence.invariants.registry import INVARIANTS, checks_at, checks_at_point, with_memory

if TYPE_CHECKING:
    from dsh_sim.engine.crash import CrashRecord
    from dsh_sim.engine.hang import Hung
    from dsh_sim.engine.history import Corruption, FaultFired, History
    from dsh_sim.engine.lifetime import Lifetime
    from dsh_sim.engine.machine import Simulation
    from dsh_sim.engine.observer import ReaderView
    from runtime.session.events import Event


FOREIGN_STEPS = ("second_writer", "read_only")  # steps that run a process beside the primary


class Checker(Observer):
    def __init__(self, sim: Simulation, *, source: str = "fuzz", torn_class: str | None = None, keep_cases: bool = True) -> None:
        self.sim = sim
        self.keep_cases = keep_cases  # explore builds its cases after the continuation: none here
        self.source = source  # what produced the simulation, for coverage cases
        self.torn_class = torn_class  # explore: the torn-write class of the starting state
        self.violations: list[Violation] = []
        self.checked: dict[str, int] = dict.fromkeys(INVARIANTS, 0)
        self.recoveries: list[dict[str, Any]] = []
        self.verdict_counts: dict[tuple[str, bool], int] = {}
        self.recovered_from: list[CrashRecord] = []
        self.cases: list[dict[str, Any]] = []  # coverage cases (one per crash + recovery)
        self._fed: dict[int, int] = {}  # per lifetime: events of the live log judged so far
        self._faults_before_step = 0
        self._paused_until = float("-inf")
        self._memory: dict[str, Any] = {invariant.name: invariant.memory(self) for invariant in with_memory() if invariant.memory}

    @classmethod
    def attach(cls, sim: Simulation, **kw: Any) -> Checker:
        checker = cls(sim, **kw)
        sim.observers.append(checker)
        return checker

    @classmethod
    def of(cls, sim: Simulation) -> Checker:
        """The checker attached to ``sim``."""
        for observer in sim.observers:
            if isinstance(observer, cls):
                return observer
        raise LookupError("no checker is attached to this simulation")

    # -- the run's facts, as the invariants read them ----------------------------------------

    @property
    def history(self) -> History:
        return self.sim.history

    @property
    def acked(self) -> dict[int, Event]:
        return self.sim.history.acked

    @property
    def acked_bytes(self) -> bytes:
        return self.sim.history.acked_bytes

    @property
    def faults(self) -> list[FaultFired]:
        return self.sim.history.faults

    @property
    def corruptions(self) -> list[Corruption]:
        return self.sim.history.corruptions

    @property
    def crashes(self) -> list[CrashRecord]:
        """Every crash so far, the one a simulation started after (explore's) first."""
        prior = self.sim.history.prior_crash
        return ([prior] if prior is not None else []) + self.sim.history.crashes

    @property
    def paused_until(self) -> float:
        """When the primary process last stood still while another one ran (a second writer,
        a reader beside it): the simulator steps one process at a time, so virtual time a
        foreign step spends passes the primary by — its window timer cannot fire meanwhile."""
        return self._paused_until

    def report(self, violation: Violation) -> None:
        self.violations.append(violation)

    def count(self, name: str) -> None:
        self.checked[name] += 1

    def memory(self, name: str) -> Any:
        return self._memory[name]

    # -- hooks ----------------------------------------------------------------------------------

    def _run(self, hook: Hook, moment: object) -> None:
        for check in checks_at(hook):
            check(self, moment)

    def on_acknowledged(self, life: Lifetime, batch: tuple[Event, ...], before: bytes, after: bytes | None) -> None:
        self._run("acknowledged", moments.Acknowledged(life, batch, before, after))

    def on_point(self, life: Lifetime, name: str, details: dict[str, Any]) -> None:
        checks = checks_at_point(name)  # (refuses an undeclared name)
        if checks:
            at = moments.Point(life, name, details)
            for check in checks:
                check(self, at)

    def before_boot(self, last_crash: CrashRecord | None) -> None:
        if last_crash is not None:
            self._run("before_boot", moments.BeforeBoot(last_crash))

    def on_second_writer(self, life: Lifetime) -> None:
        self._run("second_writer", moments.Process(life))

    def on_boot(self, life: Lifetime) -> None:
        """Every boot's invariants; after a crash, the first boot that recovers from it is judged
        against the reference model too, and makes the crash's coverage case."""
        previous = [other for other in self.sim.lifetimes if other.index < life.index]
        crash = next((other.crash for other in reversed(previous) if other.crash is not None), self.history.prior_crash)
        boot = moments.Boot(self, life, crash, first=not previous)
        self._run("boot", boot)
        if boot.accepted:
            report = life.report
            self.recoveries.append(
                {"lifetime": life.index, "verdicts": dict(report.verdicts) if report else {}, "torn": bool(report and report.torn)}
            )
        if crash is not None and crash not in self.recovered_from and io_fault_refused(self, life):
            # a boot an injected fault failed may have written before it gave up (a repair append
            # whose rollback the cancellation stopped): the crash image is no longer what the next
            # boot reads, so the reference model has nothing exact to say about this crash
            self.recovered_from.append(crash)
        if refused_for_a_link(self, life.boot_error):
            return  # the boot met a planted link: the recovery is judged when one gets past it (remove_links)
        if crash is not None and crash not in self.recovered_from:
            if life.crash is None:  # (a boot that crashed itself is judged at the next boot)
                self._run("recovery", boot)
            self.recovered_from.append(crash)
            if self.keep_cases:
                self.cases.append(
                    case_from_recovery(self.sim, [v.invariant for v in self.violations], crash, life, self.source, self.torn_class)
                )

    def on_hang(self, life: Lifetime, hang: Hung) -> None:
        self._run("hang", moments.Hang(life, hang))

    def on_flush_failed(self, life: Lifetime, error: BaseException) -> None:
        self._run("flush_failed", moments.Failure(life, error, quiet=len(self.history.faults) == self._faults_before_step))

    def on_reader(self, life: Lifetime, view: ReaderView) -> None:
        self._run("reader", moments.Reader(life, view))

    def on_reader_failed(self, life: Lifetime, error: BaseException) -> None:
        self._run("reader_failed", moments.Failure(life, error, quiet=len(self.history.faults) == self._faults_before_step))

    def on_step(self, op: str, outcome: str, args: Any = None) -> None:
        faults = tuple(self.history.faults[self._faults_before_step :])
        self._faults_before_step = len(self.history.faults)
        if op in FOREIGN_STEPS:
            self._paused_until = self.sim.now()
        life = self.sim.primary
        alive = life if life is not None and not life.dead and life.session is not None else None
        quiet = not faults and not outcome.startswith("crashed")
        self._run("step", moments.Step(op, outcome, args, faults, quiet, alive, self.sim.current))
        if life is not None and not life.dead and self.sim.kind == "agent":  # (a dead process's memory holds its unwinding)
            self._judge_live(life)

    def _judge_live(self, life: Lifetime) -> None:
        """Hand what the live log gained since the last look to the invariants that follow it."""
        fresh: tuple[Event, ...] = ()
        recovered: tuple[Event, ...] = ()
        if life.session is not None:
            report = life.report
            recovered = (*report.events, *getattr(report, "closers", ())) if report is not None else ()
            fed = self._fed.setdefault(life.index, len(recovered))  # a resumed log is judged from its recovered end on
            events = life.session.events
            fresh = tuple(events[fed:])
            self._fed[life.index] = len(events)
        self._run("live", moments.Live(life, fresh, recovered))

    def on_shutdown(self, life: Lifetime, faults_during: bool) -> None:
        end = moments.Shutdown(life, faults_during, primary=life is self.sim.primary)
        self._run("shutdown", end)
        if end.primary and life.session is not None and self.sim.kind == "agent":
            self._judge_live(life)
            self._run("end", end)
