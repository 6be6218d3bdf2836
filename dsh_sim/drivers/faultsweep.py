"""Failure-path sweep: an I/O error, and a cancellation, at every named point of every
durability sequence a scenario runs.

Crash exploration asks what a *crash* at each point leaves; this asks what a *failed
operation* leaves while the process lives on.  Every durability sequence — the directory
chain, first publication (temp, fsync, link, directory fsync), the append and its rollback,
the torn-tail truncation, the rewrite that makes a found log durable at open, migration's
stage — must undo what it made on its failure paths: close every descriptor it opened,
remove every temp name it created, and leave a log the oracles accept.

1. Record: run the scenario once and note, per primary lifetime, every announcement of a
   faultable filesystem point (:data:`SWEPT_POINTS`).  Announcements of the same point on
   the same file in the same durability sequence from the same runtime function are one
   *position* (the second append of a batch runs the same code as the first); the first of
   each is swept.  Barriers (the checkpoints' flushes) are the exception: each one is its own
   position, because the same code meets different company — a flush that the flushes of a
   parallel tool group wait on fails all of them at once.
2. Sweep: for every position and action (an ``error`` — ENOSPC for a write, EIO elsewhere —
   and, where a cleanup follows, a ``cancel``: of the running turn, or during boot of the
   application's session open), replay the scenario with one
   more fault rule striking exactly there, and judge the run with every invariant and oracle
   (``no_residue``: descriptors and stray names; ``eventually_durable``, the reference model,
   ``errors_documented``...).  Each violation comes with the scenario that replays it.  A
   scenario that expects a violation is judged against its own run without the fault: a
   violation it shows there (same invariant, message and call) is not a finding, any other is;
   a scenario that does not hold as written is reported, not swept.
3. Bridge: a fault often changes the run's course — it kills the process or fails its boot,
   so a later prompt finds no process; or the scenario's own crash point is never reached, so
   its next boot finds the process still running.  Such a run would end there, before the
   recovery that is the point of the exercise.  Instead the sweep inserts the step that lets
   it go on (:attr:`StepNotApplicable.bridge`: a boot — the operator restarts the
   application; or a kill between steps) and runs the variant again, up to
   :data:`MAX_BRIDGES` times; the repro of a finding carries its bridges.  A run that still
   cannot go on ends at that step, judged up to there, and is counted apart: a recorded power
   cut the fault made impossible, or a step no bridge helps (a second writer before any log is
   published, a retry of unknown outcomes when the restart recovered none, a prompt while a
   turn is blocked).

Cost: one replay per position and action, and one more per bridge — a few dozen replays of a
small scenario (the whole corpus: about 1.5 replays per faulted run).
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from typing import Any

import attrs

from dsh_sim.drivers.replay import RunResult, judge, run_scenario, run_steps, simulation_for
from dsh_sim.engine.faults import FaultRule
from dsh_sim.engine.lifetime import Lifetime
from dsh_sim.engine.observer import Observer
from dsh_sim.evidence.invariants import Violation
from dsh_sim.mutants import catalogue as mutants
from dsh_sim.scenario.model import Expectation, Scenario
from runtime.persistence import context as durability

SWEPT_POINTS = ("fs.open", "fs.write", "fs.fsync", "fs.fsync_dir", "fs.link", "fs.ftruncate", "fs.mkdir", "fs.unlink")
_TOKEN = re.compile(r"\.[0-9a-f]{8,}\.")  # the random token of a temp or stage name
# Barriers (every one is a position of its own: see the module's docstring)
_BARRIERS = {durability.PRE_STEP, durability.LLM_STREAM, durability.TOOLS_EXECUTE, durability.EXPLICIT_FLUSH}
MAX_BRIDGES = 3  # steps a variant may have inserted to go on past a fault (see the module's docstring)


# Failure-path sweeps (dsh_sim.drivers.faultsweep): an error, and a cancellation, at every
# position of every durability sequence these scenarios run, judged by every invariant
# (no_residue sees a descriptor or temp name a failure path left).  First publication in a
# process that stops cleanly; make-durable at open and the torn-tail truncation (cancelled opens
# meet the shielded cleanups); the rollback-heal of open_for_append; migration's stage; the
# checkpoint flushes of a parallel tool group, where the flushes of later calls wait on the first.
SWEEP_SET = (
    "write-path-publication-then-appends",
    "write-path-torn-tail-then-append",
    "write-path-rollback-fails-then-heal-then-close",
    "migration-link-not-yet-durable-then-append",
    "tools-parallel-group-mixed-outcomes",
)


@attrs.frozen
class Position:
    """One swept place: the ``hit``-th announcement of ``point`` in lifetime ``lifetime``."""

    lifetime: int
    point: str
    hit: int
    path: str
    sequence: str | None  # the runtime's durability sequence (None: outside one)
    caller: str  # the runtime function that made the call (the rollback's ftruncate is not the heal's)

    def key(self) -> tuple[Any, ...]:
        where = (self.lifetime, self.point, _TOKEN.sub(".*.", self.path), self.sequence, self.caller)
        return (*where, self.hit) if self.sequence in _BARRIERS else where

    def describe(self) -> str:
        within = f" in {self.sequence}" if self.sequence else ""
        return f"{self.point} #{self.hit} of lifetime {self.lifetime} ({self.path}{within})"


@attrs.frozen
class SweepViolation:
    position: Position
    action: str
    violation: Violation
    repro: Scenario


@attrs.frozen
class SweepResult:
    """One scenario swept: the positions, the runs (bridged, ended early), every violation
    with the scenario replaying it, or why nothing was swept (``baseline``)."""

    scenario: str
    positions: tuple[Position, ...]
    runs: int
    violations: tuple[SweepViolation, ...]
    seconds: float
    not_applicable: int = 0  # runs that ended early: a step could not run after the fault (why: in their result)
    bridged: int = 0  # runs that went on past the fault through inserted steps (a restart, a kill) to the end
    replays: int = 0  # scenario runs in all (a bridged run is run once per bridge, and once more)
    baseline: tuple[str, ...] = ()  # the scenario itself does not hold (then nothing is swept)

    def runs_text(self) -> str:
        """``N runs`` and, where any, how many went on past their fault and how many ended early."""
        apart = [f"{self.bridged} went on past the fault through a restart or kill"] if self.bridged else []
        apart += [f"{self.not_applicable} ended early: a step could not run after the fault"] if self.not_applicable else []
        return f"{self.runs} runs" + (f" ({'; '.join(apart)})" if apart else "")


class _Counter(Observer):
    def __init__(self, primary: Callable[[Lifetime], bool]) -> None:
        self._primary = primary
        self.seen: dict[tuple[int, str], int] = {}
        self.positions: dict[tuple[Any, ...], Position] = {}

    def on_point(self, life: Lifetime, name: str, details: dict[str, Any]) -> None:
        if name not in SWEPT_POINTS:
            return
        count = self.seen[(life.index, name)] = self.seen.get((life.index, name), 0) + 1
        if not self._primary(life):
            return
        position = Position(life.index, name, count, str(details.get("path", "")), durability.current().step, _runtime_caller())
        self.positions.setdefault(position.key(), position)


def _runtime_caller() -> str:
    """The innermost runtime function on the stack (the recording run only: a stack walk)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("runtime."):
            return f"{frame.f_globals['__name__']}.{frame.f_code.co_name}"
        frame = frame.f_back  # type: ignore[assignment]
    return "?"


def positions(scenario: Scenario) -> list[Position]:
    """The distinct faultable positions the scenario's run passes through, in run order."""
    sim, checker = simulation_for(scenario, trace=False)
    counter = _Counter(lambda life: life is sim.primary)
    sim.observers.append(counter)
    with mutants.enabled(scenario.mutants):
        try:
            run_steps(sim, scenario.steps)
        finally:
            sim.shutdown()
    return list(counter.positions.values())


def rule_for(position: Position, action: str) -> FaultRule:
    errno = "ENOSPC" if position.point == "fs.write" else "EIO"
    return FaultRule(position.point, action, hit=position.hit, lifetime=position.lifetime, errno=errno)


CANCELLED_POINTS = ("fs.write", "fs.fsync", "fs.fsync_dir", "fs.link", "fs.ftruncate")  # cleanups follow these


def actions_for(scenario: Scenario, position: Position) -> tuple[str, ...]:
    """``cancel`` cancels the running turn, or during boot the application's session open:
    swept where a cleanup follows (an open that is never reached has nothing to undo)."""
    return ("error", "cancel") if position.point in CANCELLED_POINTS else ("error",)


def variant(scenario: Scenario, position: Position, action: str) -> Scenario:
    """``scenario`` with one more fault: ``action`` at ``position``; it must hold like the original."""
    return attrs.evolve(
        scenario,
        name=f"{scenario.name}-sweep-{action}-{position.point.removeprefix('fs.')}-{position.lifetime}-{position.hit}",
        description=f"failure-path sweep of {scenario.name}: {action} at {position.describe()}",
        fault_plan=(*scenario.fault_plan, rule_for(position, action)),
        expect=scenario.expect if scenario.expect.outcome == "violation" else Expectation(outcome="pass"),
        trace_digest=None,
        origin={"found_by": "faultsweep", "from": scenario.name},
    )


def run_bridged(faulted: Scenario) -> tuple[RunResult, Scenario]:
    """Run a variant; where a step cannot run after the fault but has a bridge, insert the
    bridge before it and run again (at most :data:`MAX_BRIDGES` times).  Returns the last run
    and the variant that made it (its repro: the bridges are steps of its own)."""
    repro, inserted = faulted, list[str]()
    while True:
        result, _ = run_scenario(repro)
        stopped = result.stopped
        if stopped is None or stopped.bridge is None or len(inserted) == MAX_BRIDGES:
            return result, repro
        index, step = stopped.index, stopped.bridge
        inserted.append(f"{step.op} before step {index}")
        repro = attrs.evolve(
            repro,
            steps=(*repro.steps[:index], step, *repro.steps[index:]),
            description=f"{faulted.description}; bridged: {', '.join(inserted)}",
        )


def _baseline(scenario: Scenario) -> tuple[frozenset[tuple[str, str, str | None]], tuple[str, ...]]:
    """The scenario without any extra fault: the violations it shows (a scenario that expects one
    may break more than the invariant it names — the same violation, same message and call,
    under a fault is not the sweep's finding; any other is), and its problems if it does not
    hold as written (then there is nothing to compare the faulted runs with)."""
    result, _ = run_scenario(scenario)
    shown = frozenset((v.invariant, v.message, v.call_id) for v in result.violations)
    return shown, tuple(judge(scenario, result, check_digest=False))


def sweep(
    scenario: Scenario,
    *,
    stop_on_violation: bool = False,
    on_violation: Callable[[Scenario], str] | None = None,
    between: Callable[[int, int], None] | None = None,
) -> SweepResult:
    """Replay ``scenario`` once per position and action with that fault added; every run judged.
    ``between(runs so far, runs in all)`` is called after each run: a campaign reports progress
    there and stops there when asked (it raises)."""
    started = time.perf_counter()
    found: list[SweepViolation] = []
    expected, problems = _baseline(scenario)
    if problems:
        return SweepResult(scenario.name, (), 1, (), time.perf_counter() - started, baseline=problems)
    places = positions(scenario)
    runs = not_applicable = bridged = replays = 0
    plan = [(p, a) for p in places for a in actions_for(scenario, p)]
    for position, action in plan:
        faulted = variant(scenario, position, action)
        result, repro = run_bridged(faulted)
        runs += 1
        replays += 1 + len(repro.steps) - len(faulted.steps)
        not_applicable += result.not_applicable is not None
        bridged += result.not_applicable is None and repro is not faulted
        unexpected = [v for v in result.violations if (v.invariant, v.message, v.call_id) not in expected]
        if unexpected:
            if on_violation is not None:
                on_violation(repro)
            found.append(SweepViolation(position, action, unexpected[0], repro))
            if stop_on_violation:
                break
        if between is not None:
            between(runs, len(plan))
    return SweepResult(scenario.name, tuple(places), runs, tuple(found), time.perf_counter() - started, not_applicable, bridged, replays)
