"""Harness self-test: does each known durability bug get caught, and how fast?

Every mutant of :data:`dsh_sim.mutants.catalogue.CATALOGUE` is switched on by name (no file edits)
and attacked three ways, each timed on its own:

* ``corpus`` — replay the committed scenarios that pass on the correct runtime;
* ``explore`` — systematic crash-state exploration of a few representative scenarios;
* ``fuzz`` — the state machines, under a time budget.

A mutant is *killed* when an invariant fails.  The kill matrix records, per mutant, which
methods killed it, the time each took, and the size of the shrunk scenario fuzzing saved.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from dsh_sim.drivers.explore import StateResult, explore
from dsh_sim.drivers.fuzz import fuzz
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.evidence.document import KillRow, unstructure
from dsh_sim.evidence.document import MethodResult as MethodRecord
from dsh_sim.evidence.invariants import Violation
from dsh_sim.mutants.catalogue import CATALOGUE
from dsh_sim.scenario.files import discover, load, save
from dsh_sim.scenario.model import Scenario

EXPLORE_SET = (
    "boundary-1-2-pay",
    "boundary-3-4-pay",
    "torn-zstd-checksum",
    "torn-none-mid-line",
    "fsync-fail-on-append",
    "two-writers-storage",
    "approval-answerer-fails",
    "idempotent-retry-converges",
)
STORAGE_PREFIXES = ("persist.", "read.", "write_behind.", "lease.")


@attrs.frozen
class MethodResult:
    killed: bool
    seconds: float
    invariant: str | None = None
    example: str | None = None  # the scenario that shows the kill
    examples: int = 0  # scenarios replayed / states explored / fuzz examples until the kill
    scenario_steps: int | None = None


@attrs.frozen
class KillResult:
    """One catalogue mutant attacked: each method's result (killed, how fast, by which
    invariant); killed when any method caught it."""

    mutant: str
    description: str
    methods: dict[str, MethodResult]

    @property
    def killed(self) -> bool:
        return any(m.killed for m in self.methods.values())

    @property
    def fastest(self) -> tuple[str, MethodResult] | None:
        kills = [(name, m) for name, m in self.methods.items() if m.killed]
        return min(kills, key=lambda kv: kv[1].seconds) if kills else None

    def kill_row(self) -> KillRow:
        """The mutant's row of the kill matrix (a results document's ``kill_matrix``)."""
        fastest = self.fastest
        fuzz_result = self.methods.get("fuzz")
        return KillRow(
            mutant=self.mutant,
            description=self.description,
            killed=self.killed,
            method=fastest[0] if fastest else None,
            time_to_kill=round(fastest[1].seconds, 3) if fastest else None,
            invariant=fastest[1].invariant if fastest else None,
            examples=fastest[1].examples if fastest else None,
            scenario=fastest[1].example if fastest else None,
            scenario_steps=fuzz_result.scenario_steps if fuzz_result and fuzz_result.killed else None,
            by_method={
                name: MethodRecord(m.killed, m.seconds, m.invariant, m.example, m.examples, m.scenario_steps)
                for name, m in self.methods.items()
            },
        )

    def row(self) -> dict[str, Any]:
        """:meth:`kill_row` as JSON."""
        return unstructure(self.kill_row())


def passing_corpus(corpus_dir: str) -> list[Scenario]:
    out = []
    for path in discover(corpus_dir):
        scenario = load(path)
        if scenario.passes_clean:
            out.append(attrs.evolve(scenario, origin={**scenario.origin, "path": path}))
    return out


def by_corpus(mutant: str, corpus: list[Scenario], between: Callable[[], None] | None = None) -> MethodResult:
    """The corpus replayed with ``mutant`` on until a scenario fails.  ``between()`` before each
    scenario (a campaign stops there when asked: it raises)."""
    started = time.perf_counter()
    for count, scenario in enumerate(corpus, 1):
        if between is not None:
            between()
        result, _ = run_scenario(attrs.evolve(scenario, mutants=(mutant,)))
        if result.violations:
            return MethodResult(True, time.perf_counter() - started, result.invariant, scenario.origin.get("path"), count)
    return MethodResult(False, time.perf_counter() - started, examples=len(corpus))


def by_explore(mutant: str, corpus: list[Scenario], out_dir: str) -> MethodResult:
    started = time.perf_counter()
    chosen = [s for s in corpus if s.name in EXPLORE_SET]
    states = 0
    for scenario in chosen:
        saved: list[str] = []

        def keep(repro: Scenario, saved: list[str] = saved) -> str:
            path = os.path.join(out_dir, f"{mutant}-{repro.name}.json")
            if not saved:
                save(repro, path, overwrite=True)
                saved.append(path)
            return saved[0]

        result = explore(attrs.evolve(scenario, mutants=(mutant,)), stop_on_violation=True, on_violation=keep)
        states += len(result.states)
        violations: Sequence[tuple[StateResult | None, Violation]] = result.violations or [(None, v) for v in result.record_violations]
        if violations:
            example = saved[0] if saved else scenario.origin.get("path")
            return MethodResult(True, time.perf_counter() - started, violations[0][1].invariant, example, states)
    return MethodResult(False, time.perf_counter() - started, examples=states)


def by_fuzz(mutant: str, budget: float, seed: int, out_dir: str) -> MethodResult:
    started = time.perf_counter()
    machines = ["durability", "storage"] if mutant.startswith(STORAGE_PREFIXES) else ["durability"]
    examples = 0
    for index, machine in enumerate(machines):
        remaining = budget - (time.perf_counter() - started)
        if remaining <= 0:
            break
        share = remaining / (len(machines) - index)
        run = fuzz(machine, budget=share, seed=seed, out_dir=out_dir, active_mutants=(mutant,), minimize_budget=15.0)
        examples += run.examples
        if run.found is not None:
            ttk = (time.perf_counter() - started) - run.seconds + (run.found.time_to_find or 0.0)
            return MethodResult(True, ttk, run.found.invariant, run.found.path, examples, run.found.steps_after)
    return MethodResult(False, time.perf_counter() - started, examples=examples)


def run_mutants(
    names: list[str] | None = None,
    *,
    corpus_dir: str = "scenarios/starter",
    fuzz_budget: float = 20.0,
    methods: tuple[str, ...] = ("corpus", "explore", "fuzz"),
    seed: int = 1,
    out_dir: str | None = None,
    progress: Callable[[KillResult], None] | None = None,
) -> list[KillResult]:
    out_dir = out_dir or tempfile.mkdtemp(prefix="dsh-mutants-")
    corpus = passing_corpus(corpus_dir)
    results = []
    for name in names or sorted(CATALOGUE):
        if name not in CATALOGUE:
            raise KeyError(f"unknown mutant {name!r}")
        found: dict[str, MethodResult] = {}
        if "corpus" in methods:
            found["corpus"] = by_corpus(name, corpus)
        if "explore" in methods:
            found["explore"] = by_explore(name, corpus, out_dir)
        if "fuzz" in methods:
            found["fuzz"] = by_fuzz(name, fuzz_budget, seed, out_dir)
        result = KillResult(name, CATALOGUE[name], found)
        results.append(result)
        if progress is not None:
            progress(result)
    return results


def summary(results: list[KillResult]) -> dict[str, Any]:
    times = [r.fastest[1].seconds for r in results if r.fastest]
    return {
        "mutants": len(results),
        "killed": sum(r.killed for r in results),
        "median_time_to_kill": round(statistics.median(times), 3) if times else None,
        "survivors": [r.mutant for r in results if not r.killed],
    }
