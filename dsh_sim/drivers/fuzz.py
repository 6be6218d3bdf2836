"""``dsh-sim fuzz``: run a state machine under a time budget, save what it finds.

Hypothesis runs in batches (each with its own seed, derived from ``--seed``) until the
budget or the example count is used.  The budget is looked at between batches, so a run ends
up to one batch after it (25 examples: about 2 CPU-s at the profile's 50 rules per example).  A seed and an example count give the same examples in
any process (:mod:`dsh_sim.drivers.constants`: Hypothesis' pool of source literals is fixed).  On a violation, Hypothesis shrinks (under a cap), the
final minimal run's steps become a scenario, :mod:`dsh_sim.drivers.minimize` makes it 1-minimal,
its trace digest is recorded, and it is saved under ``scenarios/found/`` named after the
invariant.  Every example's crashes feed the coverage counts of the result document: they
are tallied as each example ends (:class:`~dsh_sim.evidence.tally.CaseTally`), never kept, so
a run's memory does not grow with its budget.

Memory stays flat for hours, for three more reasons (found with tracemalloc and object
censuses over long runs; ``benchmarks/bench_soak.py`` measures it): the run uses one machine
class, not one per batch (Hypothesis keeps every class it ran, and each held a simulation);
the decode memos are emptied after every example (:func:`forget_decodes`); and a full
collection runs after every batch, and after every few hundred rules of finished examples
(:class:`~dsh_sim.engine.collector.ExampleCollector`).  Under the raised collector thresholds of
:class:`~dsh_sim.engine.collector.CollectorPolicy` each example's simulation — cyclic garbage
— was promoted to the oldest generation and freed only by a rare full collection, so the
process's size kept climbing to new peaks (180 MB after 1,500 examples, against 71 MB with a
collection per batch of 25 examples, for about 4 % more CPU).  The collection points are
fixed by the example count, never by time, so they cannot make two runs differ.
"""

from __future__ import annotations

import gc
import random
import sys
import time
from collections.abc import Callable
from typing import Any, cast

import attrs
from hypothesis import seed as hypothesis_seed
from hypothesis import settings
from hypothesis.errors import HypothesisException, StopTest, UnsatisfiedAssumption
from hypothesis.reporting import with_reporter
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from dsh_sim.drivers import profiles
from dsh_sim.drivers.constants import fixed_constants
from dsh_sim.drivers.machines.base import SimulationMachine
from dsh_sim.drivers.machines.durability import DurabilityMachine
from dsh_sim.drivers.machines.storage import StorageMachine
from dsh_sim.drivers.minimize import minimize, set_hypothesis_shrink_budget
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.engine.collector import CollectorPolicy, ExampleCollector
from dsh_sim.engine.config import SimConfig
from dsh_sim.evidence.document import Meta, PointCounts, ResultsDocument, Violation
from dsh_sim.evidence.invariants import recovery
from dsh_sim.evidence.oracles import event_records, reference, spec_log, whole_records
from dsh_sim.evidence.tally import CaseTally
from dsh_sim.mutants import catalogue as mutants
from dsh_sim.scenario.codec import describe_step
from dsh_sim.scenario.files import save_found
from dsh_sim.scenario.model import Expectation, Scenario
from runtime.persistence import decode_memo

MACHINES = {"durability": DurabilityMachine, "storage": StorageMachine}


@attrs.frozen
class Found:
    invariant: str
    message: str
    path: str
    steps: tuple[str, ...]
    time_to_find: float  # until the first violating example (before any shrinking)
    shrink_seconds: float  # our 1-minimal pass and the final replay (Hypothesis' shrink is capped separately)
    steps_before: int
    steps_after: int
    digest: str


@attrs.define
class FuzzRun:
    """A fuzzing run of one state machine: its seed, the examples, steps and crash recoveries
    checked, and the first violation found (shrunk and saved), if any."""

    machine: str
    seed: int
    # the examples Hypothesis counts (``max_examples``): up to the first violating one
    examples: int = 0
    discarded: int = 0  # executions Hypothesis discards and does not count (buffer overrun, an unmet assume)
    shrink_replays: int = 0  # executions after the first violation Hypothesis saw: shrinking it
    shrinking: bool = False  # an example failed in Hypothesis' sight (not one it discarded): it shrinks now
    steps: int = 0
    rules_per_example: int = 0  # at most (Hypothesis' stateful_step_count)
    seconds: float = 0.0
    batches: int = 0
    found: Found | None = None
    tally: CaseTally = attrs.field(factory=CaseTally)  # the crash-recovery cases, counted
    checked: dict[str, int] = attrs.field(factory=dict)
    points: dict[str, int] = attrs.field(factory=dict)
    started: float = attrs.field(factory=time.perf_counter)
    first_failure: float | None = None  # seconds until the first violating example ended
    reports: list[str] = attrs.field(factory=list)  # Hypothesis' own output (the printed program)
    between_examples: Callable[[], None] | None = attrs.field(default=None, repr=False, eq=False)

    @property
    def recoveries(self) -> int:
        """Crash recoveries checked so far."""
        return self.tally.cases

    def document(self, meta: Meta) -> ResultsDocument:
        """The run's results document under ``meta`` (what ran it: the command or the campaign task)."""
        violations: tuple[Violation, ...] = ()
        if self.found is not None:
            violations = (Violation(self.found.invariant, self.found.message, self.found.path, "fuzz"),)
        run_meta = attrs.evolve(
            meta,
            kind="fuzz",
            machine=self.machine,
            seed=self.seed,
            examples=self.examples,
            discarded_examples=self.discarded,
            shrink_replays=self.shrink_replays,
            steps=self.steps,
            max_rules_per_example=self.rules_per_example,
            seconds=round(self.seconds, 3),
        )
        return ResultsDocument(
            meta=run_meta,
            case_tally=self.tally,
            checked=self.checked,
            points={name: PointCounts(hits=n) for name, n in self.points.items()},
            violations=violations,
        )


def _machine_class(machine: str, config: SimConfig, run: FuzzRun) -> type[SimulationMachine]:
    """The run's one machine class (Hypothesis runs it through :func:`_factory`).

    One class per run, not per batch: Hypothesis keeps every state-machine class it ran in a
    class-level cache for the life of the process, and each class holds its ``last`` instance
    (a whole simulation).  A class per batch leaked a simulation every few seconds."""
    base = MACHINES[machine]
    finished = ExampleCollector()

    def teardown(self: Any) -> None:
        sim = self.sim
        checker = self.checker
        # an example Hypothesis discards ends with its StopTest (or UnsatisfiedAssumption) in flight
        discarded = isinstance(sys.exc_info()[1], StopTest | UnsatisfiedAssumption)
        shrinking = run.shrinking
        try:
            base.teardown(self)
        finally:
            if getattr(self, "failure", None):
                if run.first_failure is None:
                    run.first_failure = time.perf_counter() - run.started
                # a failure Hypothesis saw is shrunk next; one in an example it discards is not
                # (the driver reports that one after the batch: SimulationMachine.unreported)
                run.shrinking = run.shrinking or not discarded
            if sim is not None:
                if shrinking:
                    run.shrink_replays += 1
                elif discarded:
                    run.discarded += 1
                else:
                    run.examples += 1
                run.steps += len(self.steps)
                run.tally.add_all(checker.cases)
                for name, n in checker.checked.items():
                    run.checked[name] = run.checked.get(name, 0) + n
                for name, n in sim.point_hits.items():
                    run.points[name] = run.points.get(name, 0) + n
            forget_decodes()
            finished.after(len(self.steps))
        if run.between_examples is not None:
            run.between_examples()  # (a stop raises here: a KeyboardInterrupt, which Hypothesis lets through)

    namespace = {"config": config, "teardown": teardown, "last": None}
    # type() makes a subclass of base; its static type says only "type"
    cls = cast(type[SimulationMachine], type(f"{base.__name__}Fuzz", (base,), namespace))
    cls.keeps_unreported = True  # read and reset after every batch (see fuzz)
    return cls


def _factory(cls: type[SimulationMachine]) -> Callable[[], SimulationMachine]:
    """What Hypothesis runs each batch: a function making an instance of ``cls``, not ``cls``.

    Hypothesis digests the state-machine factory on every run (for its example database,
    which fuzzing does not use): for a class it looks for the class's source by parsing its
    whole module, which for the run's class (made by :func:`_machine_class`, so never found)
    cost ~8 ms per batch of 25 examples; a function's digest is its few lines.  The digest
    seeds nothing here: each batch's seed is set on the factory (what ``@seed`` does)."""

    def make() -> SimulationMachine:
        return cls()

    return make


def scenario_from(
    machine: str, instance: Any, invariant: str, config: SimConfig, active_mutants: tuple[str, ...], seed: int, rules: int
) -> Scenario:
    return Scenario(
        name=f"found-{invariant}",
        seed=instance.seed,
        steps=tuple(instance.steps),
        config=instance.sim.config if instance.sim is not None else config,
        machine=machine,
        description=f"found by dsh-sim fuzz (seed {seed}, at most {rules} rules per example): {invariant}",
        expect=Expectation("violation", invariant),
        mutants=active_mutants,
        origin={"found_by": "fuzz", "fuzz_seed": seed, "max_rules_per_example": rules},
    )


def fuzz(
    machine: str = "durability",
    *,
    budget: float = 60.0,
    examples: int | None = None,
    seed: int | None = None,
    config: SimConfig | None = None,
    out_dir: str = "scenarios/found",
    active_mutants: tuple[str, ...] = (),
    progress: Callable[[FuzzRun], None] | None = None,
    between_examples: Callable[[], None] | None = None,
    minimize_budget: float = 30.0,
    shrink_budget: float = 10.0,
    on_found: Callable[[Scenario], str] | None = None,
    steps: int | None = None,
) -> FuzzRun:
    """Fuzz ``machine`` until ``budget`` seconds or ``examples`` examples of at most ``steps``
    rules each (default: the ``fuzz`` profile's); a violation is shrunk and handed to
    ``on_found`` (default: saved under ``out_dir``), which returns its path.  ``examples``
    counts as Hypothesis' ``max_examples`` does: a run that finds nothing within the budget runs
    exactly that many (the executions Hypothesis discards are counted apart)."""
    config = config or SimConfig()
    save = on_found if on_found is not None else (lambda scenario: save_found(scenario, out_dir))
    seed = seed if seed is not None else random.SystemRandom().randrange(2**32)
    run = FuzzRun(machine, seed, between_examples=between_examples)
    started = run.started
    set_hypothesis_shrink_budget(shrink_budget)
    base_settings = profiles.fuzz_settings(steps)
    run.rules_per_example = base_settings.stateful_step_count
    cls = _machine_class(machine, config, run)
    factory = _factory(cls)

    def found(instance: Any, invariant: str, message: str) -> Found:
        """Shrink, minimise and save what ``instance`` found (timed from the run's start)."""
        found_at = run.first_failure if run.first_failure is not None else time.perf_counter() - started
        return _save_found(
            machine, instance, invariant, message, config, active_mutants, seed, save, found_at, minimize_budget, run.rules_per_example
        )

    try:
        with mutants.enabled(active_mutants), CollectorPolicy() as collector, fixed_constants():
            collector.freeze()  # what was imported and set up lives as long as the run: never traverse it
            while True:
                elapsed = time.perf_counter() - started
                if elapsed >= budget or (examples is not None and run.examples >= examples):
                    break
                batch = base_settings.max_examples if examples is None else min(base_settings.max_examples, examples - run.examples)
                hypothesis_seed((seed * 1_000_003 + run.batches) % 2**32)(factory)  # the batch's seed
                cls.last = cls.unreported = None
                run.batches += 1
                try:
                    # Hypothesis' ReporterT takes object, but its base_report asserts every report is a str
                    with with_reporter(cast(Callable[[object], None], _Reports(run.reports, shrink_budget).add)):
                        # typed as taking a class; documented as "a class or a function"
                        run_state_machine_as_test(cast(Any, factory), settings=settings(base_settings, max_examples=batch))
                except HypothesisException:
                    raise
                except Exception as err:  # the machine's invariant failed (or the harness broke)
                    instance = cls.last
                    invariant = getattr(instance, "failure", None)
                    if instance is None or invariant is None:
                        raise
                    run.found = found(instance, invariant, str(err))
                    break
                else:
                    if cls.unreported is not None:  # a failed stop Hypothesis discarded (see SimulationMachine.teardown)
                        instance, message = cls.unreported
                        invariant = instance.failure
                        assert invariant is not None, "an unreported stop failed an invariant"
                        run.found = found(instance, invariant, message)
                        break
                finally:
                    gc.collect()  # the batch's simulations (cyclic garbage) go now: see the module doc
                    run.seconds = time.perf_counter() - started
                    if progress is not None:
                        progress(run)
    finally:
        _forget(cls)
    run.seconds = time.perf_counter() - started
    return run


def forget_decodes() -> None:
    """Empty the decode memos of the runtime and of the oracles after each example.

    The memos pay off within one simulated history, which reads its logs again and again
    (recovery, resume, every oracle after every crash).  The next example is a new history
    with logs of its own; across examples they were hardly ever hit (same speed measured with
    and without clearing), but as they filled to capacity a long fuzz run's memory grew for
    minutes (tens of MB).  Cleared, it stays at one example's working set."""
    decode_memo.clear_all()
    spec_log.clear_memos()
    reference.clear_memos()
    event_records.clear()
    whole_records.clear_caches()
    recovery.forget_survivors()


def _forget(cls: type[SimulationMachine]) -> None:
    """Let the run's class and its last simulation go (Hypothesis' per-class cache keeps them)."""
    cls.last = cls.unreported = None
    getattr(RuleBasedStateMachine, "_setup_state_per_class", {}).pop(cls, None)


def _save_found(
    machine: str,
    instance: Any,
    invariant: str,
    message: str,
    config: SimConfig,
    active_mutants: tuple[str, ...],
    seed: int,
    save: Callable[[Scenario], str],
    found_at: float,
    minimize_budget: float,
    rules: int,
) -> Found:
    shrink_started = time.perf_counter()
    scenario = scenario_from(machine, instance, invariant, config, active_mutants, seed, rules)
    small = minimize(scenario, invariant, budget=minimize_budget)
    result, _ = run_scenario(small.scenario)
    final = attrs.evolve(
        small.scenario, trace_digest=result.digest, origin={**small.scenario.origin, "shrunk_from_steps": small.steps_before}
    )
    path = save(final)
    message = result.violations[0].describe() if result.violations else message
    return Found(
        invariant=invariant,
        message=message,
        path=path,
        steps=tuple(describe_step(s) for s in final.steps),
        time_to_find=found_at,
        shrink_seconds=time.perf_counter() - shrink_started,
        steps_before=small.steps_before,
        steps_after=small.steps_after,
        digest=result.digest,
    )


@attrs.frozen
class _Reports:
    """Hypothesis' reports of a run, kept in :attr:`FuzzRun.reports` — its note that it gave
    up shrinking says "five minutes", its own constant, which the driver lowers to its cap."""

    kept: list[str]
    shrink_budget: float

    def add(self, text: str) -> None:
        if "spent more than five minutes working to shrink" in text:
            text = (
                f"Hypothesis stopped shrinking at the fuzz driver's cap of {self.shrink_budget:g} s; dsh-sim's own 1-minimal pass followed"
            )
        self.kept.append(text)
