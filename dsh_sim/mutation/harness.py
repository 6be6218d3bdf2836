"""The harness as a mutation-testing test command: corpus, bounded explore, a short fixed-seed fuzz.

A mutation tool (``dsh-sim mutants --tool``, :mod:`dsh_sim.mutation.tool`) needs a test command
that passes on the runtime as shipped and fails when one of dsh-sim's own methods notices a
mutant.  ``tests_mutation/test_harness_kills.py`` wraps the checks below as pytest items; they
live here so the job, the tests and a maintainer at a prompt all run the same selection.

What counts as noticing: an invariant or oracle violation — the progress ones included
(``turn_progress`` predicts every quiet turn's outcome from its own script, so a runtime that
fails closed on an internal error no longer satisfies everything vacuously) — or the harness
failing (an exception out of the runtime, a hang).  Nothing is compared with a recorded run
of the shipped runtime: that would count any change of behaviour as a kill.  What does *not*
count either: a changed trace digest or a fault rule that no longer fires.  Those detect *any* change of behaviour (an equivalent mutant that
reorders two independent writes changes the digest) and would turn the kill rate into a
change detector; :func:`replay_changes` reports them separately, for triage only.

Everything is deterministic — fixed seeds, an example budget rather than wall time — so a mutant
is killed or survives the same way on every run, and the order is cheap first: a replay of the
whole corpus costs about as much as one bounded explore of a large scenario.
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from dsh_sim.drivers import faultsweep, readers
from dsh_sim.drivers.explore import explore
from dsh_sim.drivers.faultsweep import sweep
from dsh_sim.drivers.fuzz import fuzz
from dsh_sim.drivers.replay import judge, run_scenario
from dsh_sim.scenario.files import discover, load
from dsh_sim.scenario.model import Scenario

CORPUS_DIRS = ("scenarios/starter", "scenarios/regressions")

# Explored with a bound on the states per crash point (sampled with the scenario's seed): one
# scenario per family of durability code — a call boundary, both compressions and the torn-tail
# reader, a failed fsync, two writers, a keyed retry after recovery, and the three regressions
# (unsynced frames after a kill, publication, migration).  Chosen for cost: a surviving mutant
# runs every item that reaches its function, and on two shared cores the whole command must
# stay near ten seconds for a run over the priority modules to finish in hours, not days.
EXPLORE_SET = (
    "boundary-3-4-pay",
    "torn-zstd-checksum",
    "torn-none-mid-line",
    "fsync-fail-on-append",
    "two-writers-storage",
    "idempotent-retry-converges",
    "kill-leaves-unsynced-frame-then-power-loss",
    "migration-link-not-yet-durable-then-append",
    "publication-retry-after-dir-fsync-failure",
    "corrupt-complete-frame-refused",
)
# corrupt-complete-frame-refused was once left out: its explore reported reference_model
# violations on the shipped runtime — a harness false positive, the oracle's history check read
# a log the harness had corrupted on purpose (the spec reader refuses it, so every acknowledged
# event looked lost).  check_reference now steps aside when the medium was damaged (the refusal
# is corrupt_frame_refused's to judge); all 654 states hold, 130 at this bound.
EXPLORE_BOUND = 1  # states per crash point: the kill or one power-loss state

SWEEP_SET = faultsweep.SWEEP_SET  # the scenarios swept (see there)

# (machine, examples, seed): an example budget, never wall time, so the run is reproducible.
FUZZ_RUNS = (("durability", 8, 1), ("storage", 8, 1))
# Rules per example of those runs: the count they were chosen and timed at (the fuzz profile's
# until it moved to 50), so the mutation tool's test command costs and catches what it did.
FUZZ_RULES_PER_EXAMPLE = 12


# The reader differential (dsh_sim.drivers.readers): the logs of these scenarios and the
# synthetic ones, cut, damaged and bloated, read through every runtime read entry point;
# sampled (seeded) so that all its items together cost about two seconds.
READER_SCENARIOS = readers.READER_SCENARIOS
READER_PLAN = readers.Plan(seed=1, tear_limit=12, flips=12, bomb_limit=10)


class MutantNoticed(AssertionError):
    """One of dsh-sim's methods noticed the mutant; the message says which and how."""


def project_root() -> Path:
    """The directory holding ``scenarios/`` (the test command may run from a copy of the tree)."""
    env = os.environ.get("DSH_SIM_ROOT")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "scenarios" / "starter").is_dir():
            return parent
    return Path.cwd()


def corpus(root: Path | None = None) -> list[Scenario]:
    """Every committed scenario that passes on the runtime as shipped (self-tests excluded:
    they expect a violation or switch on a catalogue mutant)."""
    root = root or project_root()
    out = []
    for folder in CORPUS_DIRS:
        for path in discover(str(root / folder)):
            scenario = load(path)
            if scenario.passes_clean:
                out.append(attrs.evolve(scenario, origin={**scenario.origin, "path": path}))
    return out


def named(scenarios: list[Scenario], names: tuple[str, ...], what: str) -> list[Scenario]:
    """The scenarios called ``names``, in that order; a name the corpus lacks is an error."""
    by_name = {s.name: s for s in scenarios}
    missing = [name for name in names if name not in by_name]
    if missing:
        raise LookupError(f"{what} names scenarios that are not in the corpus: {missing}")
    return [by_name[name] for name in names]


def explore_set(scenarios: list[Scenario]) -> list[Scenario]:
    return named(scenarios, EXPLORE_SET, "explore set")


def check_replay(scenario: Scenario) -> None:
    """No invariant or oracle fails (safety and progress alike)."""
    result, _ = run_scenario(scenario)
    if result.violations:
        raise MutantNoticed(f"replay {scenario.name}: " + "; ".join(v.describe() for v in result.violations[:3]))


def check_explore(scenario: Scenario, bound: int = EXPLORE_BOUND) -> None:
    result = explore(scenario, bound=bound, stop_on_violation=True)
    violations = [v for _, v in result.violations] or list(result.record_violations)
    if violations:
        raise MutantNoticed(f"explore {scenario.name} ({len(result.states)} states): {violations[0].describe()}")


def sweep_set(scenarios: list[Scenario]) -> list[Scenario]:
    return named(scenarios, SWEEP_SET, "sweep set")


def check_sweep(scenario: Scenario) -> None:
    """Every failure path of the scenario's durability sequences leaves what the oracles accept."""
    result = sweep(scenario, stop_on_violation=True)
    if result.baseline:
        raise MutantNoticed(f"sweep {scenario.name}: the scenario itself does not hold: {result.baseline[0]}")
    if result.violations:
        found = result.violations[0]
        raise MutantNoticed(f"sweep {scenario.name}: {found.action} at {found.position.describe()}: {found.violation.describe()}")


def check_fuzz(machine: str, examples: int, seed: int) -> None:
    with tempfile.TemporaryDirectory(prefix="dsh-mutation-fuzz-") as out_dir:
        run = fuzz(
            machine,
            budget=float("inf"),
            examples=examples,
            seed=seed,
            out_dir=out_dir,
            minimize_budget=0.0,
            shrink_budget=1.0,
            steps=FUZZ_RULES_PER_EXAMPLE,
        )
    if run.found is not None:
        raise MutantNoticed(f"fuzz {machine} seed {seed}: {run.found.invariant} after {run.examples} examples: {run.found.message}")


def check_readers(group: str, scenarios: list[Scenario]) -> None:
    """The runtime's readers agree exactly with the spec's reader on one group of cases."""
    originals = readers.corpus_originals(named(scenarios, READER_SCENARIOS, "reader set")) if group == "corpus" else []
    run = readers.differential(readers.default_sources(READER_PLAN.seed), originals, READER_PLAN, groups=(group,))
    if run.mismatches:
        raise MutantNoticed(f"readers {group} ({run.cases} cases): {len(run.mismatches)} mismatches, first: {run.mismatches[0]}")


def dsh_reference_path() -> Path:
    """Where the test command finds the real DSH's recorded readings (``dsh-sim mutants --tool``
    records them in its work directory and names them in ``DSH_SIM_DSH_REFERENCE``)."""
    env = os.environ.get("DSH_SIM_DSH_REFERENCE")
    return Path(env) if env else project_root() / "reports" / "mutation" / "work" / "dsh-reference.jsonl.zst"


@functools.lru_cache(maxsize=1)
def dsh_reference() -> list[Any]:
    from dsh_sim.dsh.reference import load

    return load(str(dsh_reference_path()))


def check_dsh_reference(family: str) -> None:
    """The runtime's v0 reader and migration read every log of one family as the real DSH did,
    or differ only by the finding pinned for it."""
    from dsh_sim.dsh.reference import judge_recorded, pinned_findings

    unexplained = list(judge_recorded(dsh_reference(), (family,), pinned_findings()))
    if unexplained:
        raise MutantNoticed(f"DSH reference {family}: {len(unexplained)} unexplained differences, first: {unexplained[0]}")


def replay_changes(scenarios: list[Scenario]) -> Iterator[tuple[str, list[str]]]:
    """Triage aid, not a kill: per scenario, what :func:`judge` says beyond the invariants
    (a changed digest, a fault that no longer fires, a step that cannot run)."""
    for scenario in scenarios:
        result, _ = run_scenario(scenario)
        problems = judge(scenario, result)
        if problems:
            yield scenario.name, problems
