"""The library API: what the ``dsh-sim`` commands do, callable from Python, returning values.

    from dsh_sim import api
    result = api.replay("scenarios/starter/boundary-2-3-pay.json")
    assert result.ok, result.problems
    found = api.explore(result.scenario, bound=50)
    print(len(found.states), [v.invariant for _, v in found.violations])

Every function takes a path or an already loaded :class:`~dsh_sim.scenario.model.Scenario`,
raises :class:`~dsh_sim.errors.InputError` (one line naming the input) for bad input, and
returns a typed result; nothing here prints.  The command modules parse flags, call these
and print.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from dsh_sim.drivers import fuzz as fuzz_driver
from dsh_sim.drivers import recheck, traces
from dsh_sim.drivers.explore import ExploreResult
from dsh_sim.drivers.explore import explore as explore_driver
from dsh_sim.drivers.fuzz import FuzzRun
from dsh_sim.drivers.recheck import DeterminismCheck
from dsh_sim.drivers.replay import RunResult, judge, run_scenario
from dsh_sim.drivers.selftest import KillResult, run_mutants
from dsh_sim.engine.config import SimConfig
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.errors import InputError, one_of
from dsh_sim.evidence.coverage import aggregate
from dsh_sim.evidence.results import read as read_results_files
from dsh_sim.inputs import read_regular
from dsh_sim.mutants.catalogue import CATALOGUE
from dsh_sim.outputs import check_output_dir
from dsh_sim.scenario.codec import to_json
from dsh_sim.scenario.files import MAX_SCENARIO_BYTES, discover, load, save, save_found
from dsh_sim.scenario.model import Scenario, ScenarioError

__all__ = [
    "DeterminismCheck",
    "ExploreResult",
    "FuzzRun",
    "KillResult",
    "ReplayResult",
    "Report",
    "Validation",
    "check_determinism",
    "expand",
    "explore",
    "fuzz",
    "load",
    "mutants",
    "read_results",
    "replay",
    "report",
    "validate",
]

Target = str | Scenario


def expand(paths: Sequence[str]) -> list[str]:
    """The scenario files named by ``paths`` (a directory means every ``*.json`` under it)."""
    out: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            out.extend(discover(path))
        elif os.path.exists(path):
            out.append(path)
        else:
            raise InputError(f"{path}: no such file or directory")
    if not out:
        raise InputError(f"{', '.join(paths)}: no scenario files (*.json) here")
    return out


def _scenario(target: Target) -> tuple[Scenario, str | None]:
    return (target, None) if isinstance(target, Scenario) else (load(target), target)


# -- validate ---------------------------------------------------------------------------------


@attrs.frozen
class Validation:
    path: str
    scenario: Scenario | None
    problems: tuple[str, ...]  # "FILE: $.json.path: problem" lines
    notes: tuple[str, ...] = ()  # valid, but worth knowing (no recorded digest...)

    @property
    def ok(self) -> bool:
        return not self.problems


def validate(path: str) -> Validation:
    """Load ``path`` and report every problem (not only the first) with its JSON path; a file
    that cannot be read at all (missing, a FIFO, too large) is bad input, raised."""
    read_regular(path, MAX_SCENARIO_BYTES, "scenario file")
    try:
        scenario = load(path)
    except ScenarioError as err:
        return Validation(path, None, err.problems)
    except InputError as err:
        return Validation(path, None, (str(err),))
    notes = []
    if scenario.trace_digest is None:
        notes.append(f"{path}: no trace digest recorded: replay cannot check determinism (dsh-sim replay --update-digest records it)")
    return Validation(path, scenario, (), tuple(notes))


# -- replay -----------------------------------------------------------------------------------


@attrs.frozen
class ReplayResult:
    path: str | None
    scenario: Scenario
    run: RunResult
    problems: tuple[str, ...]
    updated: bool = False  # the digest was recorded in the file
    trace: tuple[tuple[Any, ...], ...] | None = None
    point_hits: dict[str, int] = attrs.field(factory=dict)
    moved: traces.Move | None = None  # where the trace parted from the recorded one (its digest moved)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def moved_unjudged(self) -> bool:
        """The trace moved and every oracle held: a change no model judged (a gap, not a pass)."""
        if self.updated:
            return False  # re-recorded on purpose (--update-digest)
        return self.scenario.trace_digest not in (None, self.run.digest) and not judge(self.scenario, self.run, check_digest=False)

    @property
    def label(self) -> str:
        return self.path or self.scenario.name

    def row(self) -> dict[str, Any]:
        """The JSON row ``dsh-sim replay --json`` prints (and ``run`` merges)."""
        return {
            "scenario": self.label,
            "name": self.scenario.name,
            "ok": self.ok,
            "problems": list(self.problems),
            "expected": to_json(self.scenario.expect),
            "mutants": list(self.scenario.mutants),
            "invariant": self.run.invariant,
            "digest": self.run.digest,
            "recorded_digest": self.scenario.trace_digest,
            "session_sha256": self.run.session_sha256,
            "outcomes": list(self.run.outcomes),
            "seconds": round(self.run.seconds, 3),
            "cases": list(self.run.cases),
            "checked": dict(self.run.stats["checked"]),
            "points": dict(self.point_hits),
            "updated": self.updated,
        }


def replay(target: Target, *, path: str | None = None, update_digest: bool = False, keep_trace: bool = False) -> ReplayResult:
    """Replay one scenario and judge it (outcome, fired faults, recorded digest); ``path``
    names the file a loaded ``target`` came from (where ``update_digest`` records)."""
    scenario, loaded_from = _scenario(target)
    path = path or loaded_from
    with capture_runtime_logs():
        run, sim = run_scenario(scenario, keep_trace=keep_trace or update_digest)
    problems = judge(scenario, run, check_digest=not update_digest)
    updated, moved = False, None
    if update_digest and path is not None and not problems:
        if scenario.trace_digest != run.digest:
            save(attrs.evolve(scenario, trace_digest=run.digest), path, overwrite=True)
            updated = True
        if updated or traces.load(path, run.digest) is None:
            traces.save(path, sim.trace.records)  # the trace beside its digest: a later move shows where
    elif path is not None and scenario.trace_digest not in (None, run.digest):
        recorded = traces.load(path, scenario.trace_digest)
        if recorded is not None:
            records = sim.trace.records if keep_trace else _trace_of(scenario)
            moved = traces.first_move(recorded, records)
            if moved is not None:
                problems.append(moved.describe())
    trace = tuple(tuple(r) for r in sim.trace.records) if keep_trace else None
    return ReplayResult(path, scenario, run, tuple(problems), updated, trace, dict(sim.point_hits), moved)


def _trace_of(scenario: Scenario) -> list[tuple[Any, ...]]:
    """The scenario's trace records, from a second run that keeps them (the same run: it is a
    pure function of the scenario)."""
    with capture_runtime_logs():
        _, sim = run_scenario(scenario, keep_trace=True)
    return sim.trace.records


def check_determinism(path: str) -> DeterminismCheck:
    """Replay in two fresh processes with different PYTHONHASHSEED: same digest, same bytes?
    On a difference, the trace records of both runs show where they parted.  Nothing is
    written: the scenario goes to the children on stdin, their traces come back on stdout."""
    load(path)  # bad input is refused here, in one line, not in a child process
    return recheck.check(path, read_regular(path, MAX_SCENARIO_BYTES, "scenario file").decode("utf-8"))


# -- explore, fuzz, mutants --------------------------------------------------------------------


def explore(
    target: Target,
    *,
    crash: str = "both",
    model: str = "prefix",
    bound: int | None = None,
    found_dir: str | None = "scenarios/found",
    cache: dict[str, Any] | None = None,
) -> ExploreResult:
    """Every crash state of one scenario, recovered and checked; each violation class is saved
    as a replayable scenario under ``found_dir`` (``None``: not saved)."""
    scenario, _ = _scenario(target)
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
        return explore_driver(scenario, crash=crash, model=model, bound=bound, on_violation=on_violation, cache=cache)


def fuzz(
    machine: str = "durability",
    *,
    budget: float = 60.0,
    examples: int | None = None,
    seed: int | None = None,
    config: SimConfig | None = None,
    mutants: Sequence[str] = (),
    found_dir: str = "scenarios/found",
    progress: Callable[[FuzzRun], None] | None = None,
    steps: int | None = None,
) -> FuzzRun:
    """Fuzz a state machine for ``budget`` seconds, in examples of at most ``steps`` rules
    (default: the ``fuzz`` profile's); a violation is shrunk and saved."""
    if machine not in fuzz_driver.MACHINES:
        raise InputError(one_of(machine, fuzz_driver.MACHINES, "machine"))
    if steps is not None and steps < 1:
        raise InputError(f"fuzz: steps must be at least 1, got {steps}")
    _check_mutants(mutants)
    check_output_dir(found_dir, "found directory")
    with capture_runtime_logs():
        return fuzz_driver.fuzz(
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


def _check_mutants(names: Sequence[str]) -> None:
    for name in names:
        if name not in CATALOGUE:
            raise InputError(one_of(name, sorted(CATALOGUE), "mutant") + " (dsh-sim mutants --list)")


def mutants(
    only: Sequence[str] = (),
    *,
    budget: float = 20.0,
    corpus_dir: str = "scenarios/starter",
    methods: tuple[str, ...] = ("corpus", "explore", "fuzz"),
    progress: Callable[[KillResult], None] | None = None,
) -> list[KillResult]:
    """The kill matrix of the durability mutant catalogue (all of it, or ``only`` these)."""
    _check_mutants(only)
    with capture_runtime_logs():
        return run_mutants(list(only) or None, corpus_dir=corpus_dir, fuzz_budget=budget, methods=methods, progress=progress)


# -- results and the report --------------------------------------------------------------------


def read_results(inputs: Sequence[str]) -> list[dict[str, Any]]:
    """The result documents under ``inputs`` (files, or directories of ``*.json``)."""
    try:
        return read_results_files(inputs)
    except ValueError as err:
        raise InputError(str(err)) from None


@attrs.frozen
class Report:
    document: dict[str, Any]  # coverage.json: the aggregated view, summary and requirements
    paths: dict[str, str]  # format -> file written
    unmet: tuple[dict[str, Any], ...]
    lines: tuple[str, ...]  # the verdict, as printed
    failed: bool


def report(inputs: Sequence[str] | Sequence[dict[str, Any]], out: str = "reports") -> Report:
    """Merge result documents (or the files holding them) into coverage.json/.md/.html."""
    from dsh_sim.report import write_coverage
    from dsh_sim.report.verdict import verdict

    docs = [d for d in inputs if isinstance(d, dict)] if inputs and isinstance(inputs[0], dict) else read_results([str(p) for p in inputs])
    if not docs:
        raise InputError(
            f"{', '.join(map(str, inputs)) or out}: no result documents; run dsh-sim run, fuzz --results or explore --results first"
        )
    check_output_dir(out, "--out")
    try:
        document, paths = write_coverage(aggregate(docs), out)
    except (KeyError, TypeError, ValueError, AttributeError) as err:  # a field of an unexpected shape in some document
        named = ", ".join(str(p) for p in inputs if not isinstance(p, dict)) or "the result documents"
        raise InputError(f"{named}: a results document holds a field of the wrong shape ({type(err).__name__}: {err})") from None
    unmet = tuple(r for r in document["requirements"] if not r["met"])
    lines, failed = verdict(document, list(unmet), paths)
    return Report(document, paths, unmet, tuple(lines), failed)


# -- writing scenarios ---------------------------------------------------------------------------


def schema() -> dict[str, Any]:
    """The JSON Schema of scenario files (generated from the typed model)."""
    from dsh_sim.scenario.schema import scenario_schema

    return scenario_schema()


def reference() -> str:
    """The scenario language reference page (Markdown, generated from the registries)."""
    from dsh_sim.authoring.reference import reference as render

    return render()


def new_scenario(tool: str = "pay", boundary: str = "2→3", crash: str = "kill", name: str | None = None) -> str:
    """A scenario file (text) with a crash at ``boundary`` of a ``tool`` call."""
    from dsh_sim.authoring.template import template
    from dsh_sim.scenario.files import dumps

    return dumps(template(tool, boundary, crash, name))
