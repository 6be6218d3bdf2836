"""The library API: every ``dsh-sim`` command, callable from Python, returning typed values.

    from dsh_sim import api
    result = api.replay("scenarios/starter/boundary-2-3-pay.json")
    assert result.ok, result.problems
    found = api.explore(result.scenario, bound=50)
    print(len(found.states), [v.invariant for _, v in found.violations])

This module is the door: each command of the command line is a thin wrapper over one of
these functions (it parses the flags, calls it, prints the result and picks the exit
status), and the names in ``__all__`` are the public interface — the modules behind them
(:mod:`dsh_sim.operations`, the drivers, the campaign) are internal and may change.

Every function takes a path or an already loaded scenario (:func:`load`), raises
:class:`InputError` (one line naming the input) for bad input, and returns a typed result.
Nothing here prints, except :func:`run` — a campaign shows its progress as the command
does — and a ``progress``/``notice`` callback a caller passes.

Results documents (what ``--results`` writes and :func:`report` merges) are
:class:`ResultsDocument` values; ``to_json()`` gives the JSON written, and :func:`report`
takes documents in either form.

| command | function |
|---|---|
| ``dsh-sim run`` | :func:`run` → :class:`RunOutcome` |
| ``dsh-sim replay`` | :func:`replay`; ``--check-determinism``: :func:`check_determinism` |
| ``dsh-sim explore`` | :func:`explore_files` (one scenario: :func:`explore`); ``--runtime dsh``: :func:`dsh_explore` |
| ``dsh-sim fuzz`` | :func:`fuzz` |
| ``dsh-sim sweep`` | :func:`sweep` |
| ``dsh-sim readers`` | :func:`readers` |
| ``dsh-sim validate``, ``schema``, ``reference``, ``new``, ``points`` | :func:`validate`, :func:`schema`, :func:`reference`, :func:`new_scenario`, :func:`points` |
| ``dsh-sim report`` | :func:`report_runs` (documents or files: :func:`report`) |
| ``dsh-sim mutants`` | :func:`mutants`, ``--list``: :func:`mutant_catalogue`; ``--tool``: :func:`mutation_tool` |
| ``dsh-sim inspect``, ``repair``, ``migrate`` | :func:`inspect` (a log of any size, streamed: :func:`scan_log`), :func:`repair`, :func:`migrate` |
| ``dsh-sim demo`` | :func:`demo` |
| ``dsh-sim dsh setup``, ``diff``, ``generate`` | :func:`dsh_setup`, :func:`dsh_diff`, :func:`dsh_generate` |
| ``--against dsh`` | a ``with`` block of :func:`against_dsh` |
| ``--runtime dsh-route`` of ``replay``, ``explore``, ``fuzz``, ``points`` | :func:`route_replay`, :func:`route_explore`, :func:`route_fuzz`, :func:`route_points`; determinism: :func:`route_determinism`; findings: :func:`route_findings` |
"""

from __future__ import annotations

from dsh_sim.campaign.front import report_runs, run
from dsh_sim.campaign.runner import Outcome as RunOutcome
from dsh_sim.dsh.diff import LogDiff
from dsh_sim.dsh.explore_dsh import DshExploreResult
from dsh_sim.errors import InputError
from dsh_sim.evidence.document import ResultsDocument
from dsh_sim.operations.demo import DemoRun, demo
from dsh_sim.operations.dsh import (
    DshCorpus,
    DshDiff,
    DshExploration,
    DshOracle,
    DshSetup,
    against_dsh,
    dsh_diff,
    dsh_explore,
    dsh_generate,
    dsh_setup,
)
from dsh_sim.operations.failures import ReaderRun, Sweep, SweepResult, readers, sweep
from dsh_sim.operations.mutation_tool import MutationToolFailed, MutationToolRun, mutation_tool
from dsh_sim.operations.replay import DSH_AGREES, DeterminismCheck, ReplayResult, check_determinism, replay
from dsh_sim.operations.results import KillMatrix, KillResult, Report, mutant_catalogue, mutants, read_results, report
from dsh_sim.operations.route import (
    RouteDeterminism,
    RouteExploration,
    RouteExplorations,
    RouteFinding,
    RouteFuzzRun,
    RouteReplay,
    RouteReplays,
    route_determinism,
    route_explore,
    route_findings,
    route_fuzz,
    route_points,
    route_replay,
)
from dsh_sim.operations.scenarios import PointTable, Validation, expand, load, new_scenario, points, reference, schema, validate
from dsh_sim.operations.search import Explorations, Explored, ExploreResult, FuzzRun, explore, explore_files, fuzz
from dsh_sim.operations.sessions import Inspection, LogScan, Migration, Repair, inspect, migrate, repair, scan_log

__all__ = [
    "DSH_AGREES",
    "DemoRun",
    "DeterminismCheck",
    "DshCorpus",
    "DshDiff",
    "DshExploration",
    "DshExploreResult",
    "DshOracle",
    "DshSetup",
    "Explorations",
    "ExploreResult",
    "Explored",
    "FuzzRun",
    "InputError",
    "Inspection",
    "KillMatrix",
    "KillResult",
    "LogDiff",
    "LogScan",
    "Migration",
    "MutationToolFailed",
    "MutationToolRun",
    "PointTable",
    "ReaderRun",
    "Repair",
    "ReplayResult",
    "Report",
    "ResultsDocument",
    "RouteDeterminism",
    "RouteExploration",
    "RouteExplorations",
    "RouteFinding",
    "RouteFuzzRun",
    "RouteReplay",
    "RouteReplays",
    "RunOutcome",
    "Sweep",
    "SweepResult",
    "Validation",
    "against_dsh",
    "check_determinism",
    "demo",
    "dsh_diff",
    "dsh_explore",
    "dsh_generate",
    "dsh_setup",
    "expand",
    "explore",
    "explore_files",
    "fuzz",
    "inspect",
    "load",
    "migrate",
    "mutant_catalogue",
    "mutants",
    "mutation_tool",
    "new_scenario",
    "points",
    "read_results",
    "readers",
    "reference",
    "repair",
    "replay",
    "report",
    "report_runs",
    "route_determinism",
    "route_explore",
    "route_findings",
    "route_fuzz",
    "route_points",
    "route_replay",
    "run",
    "scan_log",
    "schema",
    "sweep",
    "validate",
]
