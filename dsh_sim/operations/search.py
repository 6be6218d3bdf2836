"""Searching for crash states: systematic exploration and fuzzing.

Here because both save what they find as replayable scenarios and write results documents
for the report; the command line, the campaign and library callers share them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from dsh_sim.drivers import fuzz as fuzz_driver
from dsh_sim.drivers.explore import ExploreResult
from dsh_sim.drivers.explore import explore as explore_driver
from dsh_sim.drivers.fuzz import FuzzRun
from dsh_sim.dsh import against
from dsh_sim.engine.config import SimConfig
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.errors import InputError, one_of
from dsh_sim.evidence.document import DshAgainst, ResultsDocument, structure_as
from dsh_sim.evidence.results import explore_document, meta, write
from dsh_sim.mutants.catalogue import CATALOGUE
from dsh_sim.operations import dsh as dsh_operations
from dsh_sim.operations.scenarios import Target, expand, load, scenario_of
from dsh_sim.outputs import check_output_dir, check_output_file
from dsh_sim.scenario.codec import to_json
from dsh_sim.scenario.files import save_found
from dsh_sim.scenario.model import Scenario

__all__ = ["Explorations", "ExploreResult", "Explored", "FuzzRun", "check_mutants", "explore", "explore_files", "fuzz"]


def explore(
    target: Target,
    *,
    crash: str = "both",
    model: str = "prefix",
    bound: int | None = None,
    found_dir: str | None = "scenarios/found",
    cache: dict[str, Any] | None = None,
    on_point: Callable[[int, int], None] | None = None,
) -> ExploreResult:
    """Every crash state of one scenario, recovered and checked; each violation class is saved
    as a replayable scenario under ``found_dir`` (``None``: not saved).  ``on_point(done,
    total)`` after each crash point (progress; a campaign's stop raises there)."""
    scenario, _ = scenario_of(target)
    if crash not in ("kill", "power", "both") or model not in ("prefix", "reorder"):
        raise InputError(f"explore: crash must be kill|power|both and model prefix|reorder, got {crash!r}, {model!r}")
    if bound is not None and bound < 1:
        raise InputError(f"explore: bound must be at least 1, got {bound}")
    on_violation: Callable[[Scenario], str] | None = None
    if found_dir is not None:
        check_output_dir(found_dir, "found directory")
        directory = found_dir

        def on_violation(repro: Scenario) -> str:
            return save_found(repro, directory)

    with capture_runtime_logs():
        return explore_driver(scenario, crash=crash, model=model, bound=bound, on_violation=on_violation, cache=cache, on_point=on_point)


@attrs.frozen
class Explored:
    """One scenario file explored: the driver's result, its results document, and (compared
    with DSH) the comparison's counts over this exploration."""

    path: str
    result: ExploreResult
    document: ResultsDocument
    against: dict[str, Any] | None = None

    def row(self) -> dict[str, Any]:
        """The JSON object ``dsh-sim explore --json`` prints for this file."""
        result = self.result
        row: dict[str, Any] = {
            "scenario": result.scenario,
            "crash_points": len(result.points),
            "states": len(result.states),
            "recoveries_run": sum(not s.shared for s in result.states),
            "possible": sum(result.possible.values()),
            "explored": sum(result.explored.values()),
            "sampled_points": result.sampled,
            "per_point": {
                name: {"possible": result.possible[name], "explored": result.explored.get(name, 0)} for name in sorted(result.possible)
            },
            "violations": [
                {
                    "invariant": v.invariant,
                    "point": result.points[s.point].point,
                    "crash": s.kind,
                    "state": s.cut,
                    "phase": s.phase,
                    "message": v.describe(),
                    "scenario": s.repro,
                }
                for s, v in result.violations
            ],
            "seconds": round(result.seconds, 3),
            "not_applicable": result.not_applicable,
        }
        if self.against is not None:
            row["against_dsh"] = self.against
        return row

    @property
    def failed(self) -> bool:
        """A violation was found, or the steps after one that could not run were not explored."""
        return bool(self.result.violations or self.result.not_applicable)


@attrs.frozen
class Explorations:
    """Scenario files explored one after another: each file's exploration, the files its
    results documents went to, and the whole comparison with DSH when it ran."""

    explored: tuple[Explored, ...]
    results: tuple[str, ...] = ()
    against: dict[str, Any] | None = None  # DshOracle.summary() after the last file

    @property
    def failed(self) -> bool:
        """Some file's exploration found a violation or left steps unexplored."""
        return any(e.failed for e in self.explored)


def explore_files(
    paths: Sequence[str],
    *,
    crash: str = "both",
    model: str = "prefix",
    bound: int | None = None,
    found_dir: str = "scenarios/found",
    results: str | None = None,
    against_dsh: bool = False,
    progress: Callable[[Explored], None] | None = None,
) -> Explorations:
    """What ``dsh-sim explore`` does: every scenario file under ``paths`` (each checked before
    the first exploration starts) explored in turn, ``progress`` called after each; with
    ``results``, one results document per file (``-N`` added before the suffix when there are
    several); with ``against_dsh``, every recovered crash image is read by the published
    DSH too (it must be installed: ``dsh-sim dsh setup``)."""
    if results:
        check_output_file(results, "results file")
    check_output_dir(found_dir, "found directory")
    files = expand(paths)
    scenarios = [load(path) for path in files]  # every file is checked before the first explore starts
    explored: list[Explored] = []
    with dsh_operations.against_dsh(against_dsh) as oracle:
        for path, scenario in zip(files, scenarios):
            before = oracle.summary() if oracle is not None else {}
            result = explore(scenario, crash=crash, model=model, bound=bound, found_dir=found_dir)
            document = explore_document(result, path, result.seconds)
            counts = None
            if oracle is not None:
                counts = against.delta(before, oracle.summary())
                document = attrs.evolve(document, dsh_against=structure_as(counts, DshAgainst))
            explored.append(Explored(path, result, document, counts))
            if progress is not None:
                progress(explored[-1])
        summary = oracle.summary() if oracle is not None else None
    written: list[str] = []
    if results:
        base, ext = os.path.splitext(results)
        for index, item in enumerate(explored):
            written.append(write(item.document, results if len(explored) == 1 else f"{base}-{index}{ext or '.json'}"))
    return Explorations(tuple(explored), tuple(written), summary)


def check_mutants(names: Sequence[str]) -> None:
    """Refuse a mutant name the catalogue does not hold (with the closest one)."""
    for name in names:
        if name not in CATALOGUE:
            raise InputError(one_of(name, sorted(CATALOGUE), "mutant") + " (dsh-sim mutants --list)")


def fuzz(
    machine: str = "durability",
    *,
    budget: float = 60.0,
    examples: int | None = None,
    seed: int | None = None,
    config: SimConfig | None = None,
    compression: str | None = None,
    checkpoint_policy: bool | None = None,
    mutants: Sequence[str] = (),
    found_dir: str = "scenarios/found",
    progress: Callable[[FuzzRun], None] | None = None,
    steps: int | None = None,
    results: str | None = None,
) -> FuzzRun:
    """Fuzz a state machine for ``budget`` seconds, in examples of at most ``steps`` rules
    (default: the ``fuzz`` profile's); a violation is shrunk and saved under ``found_dir``.

    ``config`` is the simulation's configuration (default :class:`SimConfig()`);
    ``compression`` and ``checkpoint_policy`` set those two fields of it.  With ``results``,
    the run's results document is written there (with the DSH comparison's counts when it ran
    inside :func:`~dsh_sim.operations.dsh.against_dsh`)."""
    if machine not in fuzz_driver.MACHINES:
        raise InputError(one_of(machine, fuzz_driver.MACHINES, "machine"))
    if steps is not None and steps < 1:
        raise InputError(f"fuzz: steps must be at least 1, got {steps}")
    check_mutants(mutants)
    check_output_dir(found_dir, "found directory")
    if results:
        check_output_file(results, "results file")
    config = _config(config, compression, checkpoint_policy)
    with capture_runtime_logs():
        run = fuzz_driver.fuzz(
            machine,
            budget=budget,
            examples=examples,
            seed=seed,
            config=config,
            out_dir=found_dir,
            active_mutants=tuple(mutants),
            progress=progress,
            steps=steps,
        )
    if results:
        doc = run.document(meta("fuzz", config=to_json(config), mutants=list(mutants)))
        oracle = against.active()
        if oracle is not None:
            doc = attrs.evolve(doc, dsh_against=structure_as(oracle.summary(), DshAgainst))
        write(doc, results)
    return run


def _config(config: SimConfig | None, compression: str | None, checkpoint_policy: bool | None) -> SimConfig:
    changes: dict[str, Any] = {}
    if compression is not None:
        changes["compression"] = compression
    if checkpoint_policy is not None:
        changes["checkpoint_policy"] = checkpoint_policy
    if not changes:
        return config or SimConfig()
    try:
        return attrs.evolve(config or SimConfig(), **changes)
    except ValueError as err:
        raise InputError(f"fuzz: {err}") from None
