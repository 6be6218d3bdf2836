"""Running a scenario without Hypothesis, and judging the run against its expectation.

Replay is a plain loop over the steps.  A run's verdict has three parts: the invariants
(pass, or which one failed), the fault plan (every rule must have fired — otherwise the
scenario no longer reaches its crash point and says so), and the trace digest (same seed
and steps must give the same digest, in any process).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from typing import Any

import attrs

from dsh_sim.engine.faults import FaultPlan, FaultRule
from dsh_sim.engine.machine import Simulation
from dsh_sim.evidence.checker import Checker
from dsh_sim.evidence.invariants import Violation
from dsh_sim.mutants import catalogue as mutants
from dsh_sim.scenario.args import Step
from dsh_sim.scenario.codec import describe_step
from dsh_sim.scenario.model import Scenario
from dsh_sim.scenario.steps import StepNotApplicable, apply


@attrs.frozen
class Stopped:
    """A run stopped at a step that cannot run: its index in the scenario, why, and the step
    that would let it run (:attr:`StepNotApplicable.bridge`)."""

    index: int
    step: Step
    why: str
    bridge: Step | None

    def sentence(self) -> str:
        return f"step {self.index} ({describe_step(self.step)}) cannot run: {self.why}"


@attrs.frozen
class RunResult:
    name: str
    digest: str
    session_sha256: str | None
    outcomes: tuple[str, ...]
    violations: tuple[Violation, ...]
    unfired: tuple[tuple[int, FaultRule, int], ...]  # (position, rule, matching announcements seen)
    not_applicable: str | None
    stats: dict[str, Any]
    seconds: float
    cases: tuple[dict[str, Any], ...] = ()  # coverage: one per crash + recovery
    stopped: Stopped | None = None  # the step the run stopped at, unable to run (its sentence: not_applicable)

    @property
    def invariant(self) -> str | None:
        return self.violations[0].invariant if self.violations else None


def simulation_for(
    scenario: Scenario,
    *,
    seed: int | None = None,
    plan: FaultPlan | None = None,
    keep_trace: bool = False,
    trace: bool = True,
    source: str = "replay",
) -> tuple[Simulation, Checker]:
    """A fresh simulation for ``scenario`` with a checker attached: its seed, configuration
    and fault plan (unless given), running the agent (durability machine) or a storage-only
    process (the others)."""
    kind = "agent" if scenario.machine == "durability" else "storage"
    sim = Simulation(
        scenario.seed if seed is None else seed,
        scenario.sim_config(),
        FaultPlan(scenario.fault_plan) if plan is None else plan,
        keep_trace=keep_trace,
        kind=kind,
        trace=trace,
    )
    return sim, Checker.attach(sim, source=source)


def run_steps(
    sim: Simulation, steps: Sequence[Step], *, checker: Checker | None = None, until: str | None = None, first: int = 0
) -> tuple[list[str], Stopped | None]:
    """Apply ``steps`` in order; stop at the first violation ``checker`` reports (if given) —
    or, with ``until``, at the first violation of that invariant (a scenario that expects it
    may pass an earlier, stronger check on its way) — or at a step that cannot run (returned
    as the second value, naming the step by its index in the scenario: ``first`` is the index
    of ``steps[0]``)."""
    outcomes: list[str] = []
    for index, step in enumerate(steps, first):
        try:
            outcomes.append(apply(sim, step))
        except StepNotApplicable as err:
            return outcomes, Stopped(index, step, str(err), err.bridge)
        stop = checker is not None and checker.violations and (until is None or any(v.invariant == until for v in checker.violations))
        if stop:
            break
    return outcomes, None


def unfit_at_stop(sim: Simulation) -> str | None:
    """Why the run's final stop could not run as written: a crash rule it met recorded a power
    cut that does not fit the disk (:attr:`Simulation.unfit`, set after the last step)."""
    return f"the final stop cannot run: {sim.unfit}" if sim.unfit is not None else None


def simulation_stats(sim: Simulation, checker: Checker) -> dict[str, Any]:
    obs = checker
    return {
        "lifetimes": len(sim.lifetimes),
        "crashes": [
            {
                "point": c.point,
                "kind": c.kind,
                "label": c.label,
                "phase": c.phase,
                "barrier": c.barrier,
                "step": c.step,
                "boundaries": c.boundaries,
            }
            for c in sim.history.crashes
        ],
        "recoveries": obs.recoveries,
        "verdicts": [[code, applied, n] for (code, applied), n in sorted(obs.verdict_counts.items())],
        "checked": dict(obs.checked),
        "faults": sim.history.describe_faults(),
        "points": dict(sorted(sim.point_hits.items())),
        "virtual_seconds": sim.now(),
        "refused_dead_ops": len(sim.disk.fidelity_errors),
        "ledger": len(sim.world.ledger),
    }


def run_scenario(scenario: Scenario, *, keep_trace: bool = False) -> tuple[RunResult, Simulation]:
    started = time.perf_counter()
    sim, checker = simulation_for(scenario, keep_trace=keep_trace)
    with mutants.enabled(scenario.mutants):
        try:
            until = scenario.expect.invariant if scenario.expect.outcome == "violation" else None
            outcomes, stopped = run_steps(sim, scenario.steps, checker=checker, until=until)
        finally:
            sim.shutdown()
    not_applicable = stopped.sentence() if stopped is not None else unfit_at_stop(sim)
    data = sim.disk.read_path(sim.config.log_path)
    session_sha256 = hashlib.sha256(data).hexdigest() if data is not None else None
    sim.trace.record("session-bytes", session_sha256)  # same digest ⇒ same session bytes
    result = RunResult(
        name=scenario.name,
        digest=sim.trace.digest(),
        session_sha256=session_sha256,
        outcomes=tuple(outcomes),
        violations=tuple(checker.violations),
        unfired=tuple(sim.plan.unfired()),
        not_applicable=not_applicable,
        stats=simulation_stats(sim, checker),
        seconds=time.perf_counter() - started,
        cases=tuple(checker.cases),
        stopped=stopped,
    )
    return result, sim


def judge(scenario: Scenario, result: RunResult, *, check_digest: bool = True) -> list[str]:
    """Problems with a run, as lines a maintainer can act on (empty: the scenario holds)."""
    problems: list[str] = []
    if result.not_applicable:
        problems.append(result.not_applicable)
    if scenario.expect.require_fired:
        for index, rule, seen in result.unfired:
            problems.append(f"fault rule #{index} ({rule.describe()}) never fired: {_why_unfired(rule, seen, result)}")
    if scenario.expect.outcome == "pass" and result.violations:
        problems.extend(f"invariant violated: {v.describe()}" for v in result.violations)
    if scenario.expect.outcome == "violation":
        if not result.violations:
            problems.append(f"expected a violation of {scenario.expect.invariant}, but every invariant held")
        elif scenario.expect.invariant and scenario.expect.invariant not in {v.invariant for v in result.violations}:
            problems.append(f"expected a violation of {scenario.expect.invariant}, got {sorted({v.invariant for v in result.violations})}")
    if check_digest and scenario.trace_digest and scenario.trace_digest != result.digest:
        problems.append(f"trace digest {result.digest[:16]}… differs from the recorded {scenario.trace_digest[:16]}…")
    return problems


def _why_unfired(rule: FaultRule, seen: int, result: RunResult) -> str:
    """Why a rule never fired, from what the run announced (the point was reached or not)."""
    announced = int(result.stats["points"].get(rule.point, 0))
    if announced == 0:
        return f"{rule.point} was never announced: the scenario no longer reaches its crash point"
    where = f" in lifetime {rule.lifetime}" if rule.lifetime is not None else ""
    if seen == 0:
        return f"{rule.point} was announced {announced} time(s), none matching{where}: the scenario no longer reaches its crash point"
    return f"{rule.point} matched {seen} time(s){where}, fewer than hit {rule.hit}: the scenario no longer reaches its crash point"
