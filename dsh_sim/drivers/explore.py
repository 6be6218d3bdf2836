"""Systematic crash-point exploration (ALICE/CrashMonkey style) for one scenario.

1. Record: run the scenario once; at every named point capture the state a crash there
   would leave (disk image, world ledger, what was acknowledged, the in-memory log, where
   each call stood among the four moments).
2. Explore: for every recorded point and every post-crash state the crash model allows —
   kill, and power loss with each torn-length class and each choice of unsynced directory
   entries — start from the recorded state (no replay of the prefix), recover, continue one
   turn, and check every invariant.  Cost is linear in the number of states; identical
   post-crash states are recovered once and their result shared.
3. Every violation comes with a scenario file that replays it.

Above ``bound`` states at one point, the states are sampled (seeded) and reported as such.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable
from typing import Any

import attrs

from dsh_sim.adapters.simfs.crash import PowerCut, apply_power_cut, crash_states
from dsh_sim.adapters.simfs.digest import NodeDigests
from dsh_sim.adapters.simfs.disk import Disk, DiskImage, WriteOp
from dsh_sim.adapters.simfs.torn import classify, codec_cut_points
from dsh_sim.drivers.replay import run_steps, simulation_for, unfit_at_stop
from dsh_sim.dsh import against as dsh_against
from dsh_sim.engine.collector import CollectorPolicy
from dsh_sim.engine.crash import CrashPoint, crash_phase
from dsh_sim.engine.determinism import derive_seed
from dsh_sim.engine.faults import CrashSpec, FaultRule
from dsh_sim.engine.lifetime import Lifetime
from dsh_sim.engine.machine import Simulation
from dsh_sim.engine.observer import Observer
from dsh_sim.engine.points import POINTS
from dsh_sim.evidence.case_counts import CaseCounter, CaseFacts
from dsh_sim.evidence.checker import Checker
from dsh_sim.evidence.coverage import barrier_of, phase_group, recovery_facts
from dsh_sim.evidence.invariants import Violation
from dsh_sim.evidence.oracles.shared_prefix import shared_length
from dsh_sim.evidence.tally import CaseTally
from dsh_sim.mutants import catalogue as mutants
from dsh_sim.scenario.args import AppendArgs, ArmArgs, ModelResponse, PromptArgs, Step
from dsh_sim.scenario.model import Expectation, Scenario
from dsh_sim.scenario.steps import apply


class Recorder(Observer):
    """Captures a crash point at every named point of primary processes."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.points: list[CrashPoint] = []
        self.step_index = 0
        self._occurrences: dict[tuple[int, str], int] = {}

    def on_point(self, life: Lifetime, name: str, details: dict[str, Any]) -> None:
        if life is not self.sim.primary:
            return
        key = (life.index, name)
        self._occurrences[key] = self._occurrences.get(key, 0) + 1
        self.points.append(
            self.sim.capture(life, name, details, index=len(self.points), step_index=self.step_index, occurrence=self._occurrences[key])
        )


@attrs.frozen
class StateResult:
    point: int
    kind: str
    cut: str | None
    phase: str
    torn_class: str | None
    verdicts: dict[str, str]
    applied: dict[str, bool]
    violations: tuple[Violation, ...]
    shared: bool  # outcome reused from an identical post-crash state
    repro: str | None = None


@attrs.frozen
class ExploreResult:
    """Every crash state of one scenario: the crash points recorded, each state recovered and
    checked (its violations, the scenario replaying it), the counts possible and explored."""

    scenario: str
    points: tuple[CrashPoint, ...]
    states: tuple[StateResult, ...]
    possible: dict[str, int]  # point name -> states the model allows
    explored: dict[str, int]  # point name -> states checked (exhaustive or sampled)
    sampled: dict[str, int]  # point name -> points where sampling was used
    seconds: float
    record_violations: tuple[Violation, ...]
    tally: CaseTally = attrs.field(factory=CaseTally)  # every state's crash case, counted
    cells: dict[str, Any] = attrs.field(factory=dict)  # matrix -> row -> col -> {possible, explored}
    not_applicable: str | None = None  # the recording stopped at a step that cannot run (why)

    @property
    def violations(self) -> list[tuple[StateResult, Violation]]:
        return [(s, v) for s in self.states for v in s.violations]


def _power_states(disk: Disk, model: str) -> list[PowerCut]:
    return list(crash_states(disk, model, codec_cut_points))


def _cut_class(disk: Disk, cut: PowerCut, classes: dict[int, tuple[WriteOp, dict[int, str]]]) -> str | None:
    """The torn-write class of ``cut`` (``classes``: each write's cut classes, by the write:
    a write stays pending across many points, and classifying it walks all its bytes)."""
    for choice in cut.files:
        if choice.torn_bytes is None:
            continue
        node = disk.file(choice.ino)
        op = node.pending[choice.keep_ops]
        if isinstance(op, WriteOp):
            known = classes.get(id(op))
            if known is None or known[0] is not op:
                known = classes[id(op)] = (op, classify(op.data))  # (holding the write keeps its id its own)
            return known[1].get(choice.torn_bytes, "byte")
    return None


class _PointKeys:
    """What every state of one point shares besides the disk: the ledger, which seqs were
    acknowledged and their bytes, the corruptions (as a digest; equal digests, equal facts).

    The points of one recording see one ledger grow and one set of acknowledged seqs grow,
    so both are digested by prefix: the ledger entry by entry (a running hash per entry; a
    ledger that is not an extension of the one seen is digested again from where they part),
    the acknowledged seqs once per dict (a history's snapshots share it until it changes).
    Digesting each point's whole ledger and seqs again made recording quadratic."""

    def __init__(self, digests: NodeDigests) -> None:
        self._digests = digests
        self._entries: list[Any] = []  # the ledger entries digested so far, in order
        self._running = [hashlib.sha256(b"ledger")]  # [i]: the digest state after i entries
        self._acked: dict[int, tuple[dict[int, Any], bytes]] = {}  # id(acked) -> (acked, digest)

    def of(self, cp: CrashPoint) -> bytes:
        h = hashlib.sha256(self._ledger(cp.world.ledger))
        h.update(self._seqs(cp.history.acked))
        h.update(self._digests.content(cp.evidence.acked_bytes))  # the same bytes object for every point until the next ack
        h.update(repr(cp.history.corruptions).encode())
        return h.digest()

    def _ledger(self, ledger: list[Any]) -> bytes:
        known = self._entries
        same = shared_length(ledger, known)
        if same < len(known) and same < len(ledger):
            del known[same:], self._running[same + 1 :]  # (another ledger: digested again from where they part)
        for entry in ledger[len(known) :]:
            state = self._running[-1].copy()
            state.update(repr((entry.service, entry.call_id, entry.applied)).encode())
            known.append(entry)
            self._running.append(state)
        return self._running[len(ledger)].digest()

    def _seqs(self, acked: dict[int, Any]) -> bytes:
        known = self._acked.get(id(acked))
        if known is None or known[0] is not acked:
            if len(self._acked) >= 4096:
                self._acked.clear()
            known = self._acked[id(acked)] = (acked, hashlib.sha256(repr(sorted(acked)).encode()).digest())
        return known[1]


# One crash state a point allows: the crash, the power cut (None for kill), the phase it leaves
# the log in, the torn-write class of the cut, the digest of the post-crash disk and its image
# (a recovery starts from a copy of it; ``None`` once the options are remembered for a later
# point with the same image: holding every state's image made memory grow with the square of
# the session's length — the cut is applied again for a state whose recovery is not shared).
CrashOption = tuple[CrashSpec, PowerCut | None, str, str | None, bytes, DiskImage | None]


class _CrashLayouts:
    """The crash states of each recorded point, computed once per distinct disk image.

    Identical post-crash states share a key: the digest of the post-crash disk (byte for byte)
    with the point's facts (:class:`_PointKeys`).  Most points change nothing on the disk
    (a stat, a read, a model chunk), and images share unchanged nodes, so the options of a
    point whose image has exactly the same nodes as an earlier one are that point's options —
    the enumeration, the cuts and the digests are not redone."""

    def __init__(self, crash: str, model: str, log_path: str) -> None:
        self._crash, self._model, self._log_path = crash, model, log_path
        self.digests = NodeDigests()
        self._seen: dict[tuple[int, tuple[tuple[int, int], ...]], list[CrashOption]] = {}
        self._classes: dict[int, tuple[WriteOp, dict[int, str]]] = {}

    def of(self, cp: CrashPoint) -> list[CrashOption]:
        image = cp.image
        self.digests.remember(image)  # pins the image's nodes: their ids stay theirs
        identity = (image.next_ino, tuple((ino, id(node)) for ino, node in image.nodes))
        options = self._seen.get(identity)
        if options is None:
            options = self._compute(cp)
            self._seen[identity] = [(*option[:5], None) for option in options]
        return options

    def _compute(self, cp: CrashPoint) -> list[CrashOption]:
        disk = Disk.from_image(cp.image)  # the state at the point, before any cut (read only)
        specs: list[tuple[CrashSpec, PowerCut | None]] = []
        if self._crash in ("kill", "both"):
            specs.append((CrashSpec("kill"), None))
        if self._crash in ("power", "both"):
            specs.extend((CrashSpec("power", "cut"), c) for c in _power_states(disk, self._model))
        out: list[CrashOption] = []
        for spec, cut in specs:
            phase = crash_phase(disk, self._log_path, spec.kind, cut)
            cls = _cut_class(disk, cut, self._classes) if cut is not None else None
            after = post_crash_disk(cp, cut).image()
            out.append((spec, cut, phase, cls, self.digests.image(after), after))
        return out


def post_crash_disk(cp: CrashPoint, cut: PowerCut | None) -> Disk:
    """The disk a crash at ``cp`` leaves: the recorded image, cut by ``cut`` (power loss)."""
    disk = Disk.from_image(cp.image)
    if cut is not None:
        apply_power_cut(disk, cut)
    return disk


def recover_from(
    scenario: Scenario,
    cp: CrashPoint,
    crash: CrashSpec,
    cut: PowerCut | None,
    disk: Disk,
    phase: str,
    *,
    continue_turn: bool = True,
    torn_class: str | None = None,
) -> tuple[Simulation, Checker]:
    """A fresh simulation starting from the post-crash ``disk`` (see :func:`post_crash_disk`,
    ``phase`` is its crash phase); boot, recover, continue.  The simulation takes ``disk`` over."""
    seed = derive_seed(scenario.seed, "explore", cp.index, crash.label(), cut.describe() if cut else "-")
    kind = "agent" if scenario.machine == "durability" else "storage"
    sim = Simulation.from_crash_point(cp, crash, cut, disk, phase, seed=seed, config=scenario.sim_config(), kind=kind)
    checker = Checker.attach(sim, source="explore", torn_class=torn_class, keep_cases=False)  # (cases: see explore)
    try:
        apply(sim, Step("boot"))
        if continue_turn:
            for step in continuation(scenario.machine):
                if sim.alive:
                    apply(sim, step)
    finally:
        sim.shutdown()
    return sim, checker


def _crash_rule_before(rule: FaultRule, lifetime: int) -> bool:
    """Keep a crash rule of the original only if it belongs to an earlier lifetime (it is part
    of the path to the explored point); later ones would fire at or after that point."""
    return rule.action != "crash" or (rule.lifetime is not None and rule.lifetime < lifetime)


def continuation(machine: str) -> tuple[Step, ...]:
    """What explore does after every recovery: one more turn (or append) and a flush."""
    if machine == "durability":
        first = Step("prompt", PromptArgs("continue", (ModelResponse("continuing"),)))
    else:
        first = Step("append", AppendArgs(1))
    return (first, Step("flush"))


def repro_scenario(scenario: Scenario, cp: CrashPoint, crash: CrashSpec, cut: PowerCut | None, violation: Violation) -> Scenario:
    """Replays the explored state: the original path to the point, the crash there, recovery,
    and the continuation explore ran."""
    spec = CrashSpec("power", "cut", cut=cut or PowerCut()) if crash.kind == "power" else CrashSpec(crash.kind)
    rule = FaultRule(cp.point, "crash", hit=cp.occurrence, lifetime=cp.lifetime, crash=spec)
    steps = tuple(
        step
        for step in scenario.steps[: cp.step_index + 1]
        if not isinstance(step.args, ArmArgs) or _crash_rule_before(step.args.rule, cp.lifetime)
    )
    steps += (Step("boot"),) + continuation(scenario.machine)
    plan = tuple(r for r in scenario.fault_plan if _crash_rule_before(r, cp.lifetime)) + (rule,)
    return Scenario(
        name=f"{scenario.name}-explore-{violation.invariant}-{cp.index}",
        seed=scenario.seed,
        steps=steps,
        config=scenario.config,
        fault_plan=plan,
        machine=scenario.machine,
        description=f"found by explore: {violation.describe()}",
        # other faults of the original may not be reached on this shorter path; the crash is
        # proved by the violation itself
        expect=Expectation("violation", violation.invariant, require_fired=False),
        mutants=scenario.mutants,
        origin={
            "found_by": "explore",
            "scenario": scenario.name,
            "point": cp.point,
            "crash": crash.label(),
            "cut": cut.describe() if cut else None,
        },
    )


def record(scenario: Scenario) -> tuple[list[CrashPoint], Simulation, Checker, str | None]:
    """The recording run: its crash points, and why it stopped early (a step that cannot run,
    as replay reports it; the steps after it are never explored, and never silently skipped)."""
    sim, checker = simulation_for(scenario)
    recorder = Recorder(sim)
    sim.observers.append(recorder)
    stopped: str | None = None
    try:
        for index, step in enumerate(scenario.steps):
            recorder.step_index = index
            _, halt = run_steps(sim, [step], first=index)
            if halt is not None:
                stopped = halt.sentence()
                break
    finally:
        sim.shutdown()
    stopped = stopped or unfit_at_stop(sim)
    return recorder.points, sim, checker, stopped


def explore(
    scenario: Scenario,
    *,
    crash: str = "both",
    model: str = "prefix",
    bound: int | None = None,
    continue_turn: bool = True,
    on_violation: Any = None,
    cache: dict[str, Any] | None = None,
    stop_on_violation: bool = False,
    on_point: Callable[[int, int], None] | None = None,
) -> ExploreResult:
    """Explore every crash state of ``scenario``; ``cache`` may be shared by several calls
    (recoveries of identical post-crash states under the same configuration are reused).
    ``on_point(done, total)`` is called after each crash point: progress for a display, and
    the place where a campaign may stop the exploration (it raises)."""
    started = time.perf_counter()
    with mutants.enabled(scenario.mutants), CollectorPolicy() as collector:
        points, recorded, recorded_checker, stopped = record(scenario)
        collector.freeze()  # the recording lives as long as the exploration: never traverse it again
        rng = random.Random(derive_seed(scenario.seed, "explore-sample"))
        cache = {} if cache is None else cache
        cells: dict[str, dict[str, dict[str, dict[str, int]]]] = {"boundary": {}, "barrier": {}}
        # a recovery judged without DSH is not one judged with it (--against dsh): not shared across
        config_key = repr((scenario.machine, scenario.config, scenario.mutants, continue_turn, dsh_against.active() is not None))
        states: list[StateResult] = []
        tally = CaseTally()
        counter = CaseCounter(tally)
        interned: dict[frozenset[str], frozenset[str]] = {}  # the call-id sets of the facts, shared
        saved: dict[tuple[str, str, str], str] = {}
        possible: dict[str, int] = dict.fromkeys(POINTS, 0)
        explored: dict[str, int] = dict.fromkeys(POINTS, 0)
        sampled: dict[str, int] = {}
        log_path = recorded.config.log_path
        layouts = _CrashLayouts(crash, model, log_path)
        point_keys = _PointKeys(layouts.digests)
        for cp in points:
            options = layouts.of(cp)
            point_key = point_keys.of(cp)
            possible[cp.point] += len(options)
            barrier = barrier_of(cp.evidence.barrier, cp.evidence.step)
            rows = _rows(cp)
            for spec, _, phase, _, _, _ in options:
                _cell(cells, rows, barrier, phase_group(spec.kind, phase), "possible")
            if bound is not None and len(options) > bound:
                options = rng.sample(options, bound)
                sampled[cp.point] = sampled.get(cp.point, 0) + 1
            for spec, cut, phase, cls, disk_digest, after_image in options:
                key = hashlib.sha256(disk_digest + point_key).hexdigest() + spec.kind + config_key
                shared = key in cache
                if not shared:
                    # what post_crash_disk(cp, cut) returns (not cut again when the image is at hand)
                    after = Disk.from_image(after_image) if after_image is not None else post_crash_disk(cp, cut)
                    sim, checker = recover_from(scenario, cp, spec, cut, after, phase, continue_turn=continue_turn, torn_class=cls)
                    report = sim.primary.report if sim.primary is not None else None
                    verdicts = dict(report.verdicts) if report is not None else {}
                    applied = {c: bool(sim.world.applied_for(c)) for c in verdicts}
                    facts = CaseFacts.of(recovery_facts(sim, sim.primary, ()), interned) if sim.primary is not None else None
                    cache[key] = (verdicts, applied, tuple(checker.violations), facts)
                verdicts, applied, violations, facts = cache[key]
                if facts is not None:
                    counter.count(spec.kind, phase, barrier, cls, cp.evidence.boundaries, facts)
                repro = None
                if violations and on_violation is not None:
                    # one replayable scenario per (invariant, point, crash kind): every invariant a
                    # state violates gets its own, so one failing first does not hide another
                    # (a dsh_agrees difference comes after reference_model's verdict on the same state)
                    for violation in violations:
                        klass = (violation.invariant, cp.point, spec.kind)
                        if klass not in saved:
                            saved[klass] = on_violation(repro_scenario(scenario, cp, spec, cut, violation))
                    repro = saved[(violations[0].invariant, cp.point, spec.kind)]
                states.append(
                    StateResult(
                        cp.index, spec.kind, cut.describe() if cut else None, phase, cls, verdicts, applied, violations, shared, repro
                    )
                )
                explored[cp.point] += 1
                _cell(cells, rows, barrier, phase_group(spec.kind, phase), "explored")
                if stop_on_violation and violations:
                    break
            if on_point is not None:
                on_point(cp.index + 1, len(points))
            if stop_on_violation and states and states[-1].violations:
                break
    return ExploreResult(
        scenario=scenario.name,
        points=tuple(points),
        states=tuple(states),
        possible={k: v for k, v in possible.items() if v},
        explored={k: v for k, v in explored.items() if v},
        sampled=sampled,
        seconds=time.perf_counter() - started,
        record_violations=tuple(recorded_checker.violations),
        tally=tally,
        cells=cells,
        not_applicable=stopped,
    )


def _cell(cells: dict[str, Any], rows: list[str], barrier: str, col: str, key: str) -> None:
    """Count one crash state in every matrix cell it belongs to (a cell per call boundary:
    ``rows``, see :func:`_rows`)."""
    for row in rows:
        slot = cells["boundary"].setdefault(row, {}).setdefault(col, {"possible": 0, "explored": 0})
        slot[key] += 1
    slot = cells["barrier"].setdefault(barrier, {}).setdefault(col, {"possible": 0, "explored": 0})
    slot[key] += 1


def _rows(cp: CrashPoint) -> list[str]:
    """The boundary rows of ``cp``'s states: one per boundary a call stood at, else "no call"."""
    return sorted(set(cp.evidence.boundaries.values())) or ["no call"]
