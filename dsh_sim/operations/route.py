"""The published DSH route under the simulator: replay and explore scenario files on it,
compare it with dsh-sim's runtime, check that its runs are deterministic.

``--runtime dsh-route`` of ``dsh-sim replay`` and ``dsh-sim explore``; ``dsh-sim points
--runtime dsh-route``.  Each needs the pinned npm set (``dsh-sim dsh setup``) and refuses in one
line without it.  A scenario the route cannot express is skipped and counted with its reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from dsh_sim.dsh.route.differential import RouteComparison, compare
from dsh_sim.dsh.route.explore import RouteExploreResult, explore_route
from dsh_sim.dsh.route.findings import ROUTE_FINDINGS, RouteFinding
from dsh_sim.dsh.route.fuzz import RouteFuzzRun
from dsh_sim.dsh.route.fuzz import route_fuzz as run_route_fuzz
from dsh_sim.dsh.route.judge import RouteViolation, judge
from dsh_sim.dsh.route.points import POINTS, RoutePoint
from dsh_sim.dsh.route.program import Skip, translate
from dsh_sim.dsh.route.run import RouteError, RouteRun, run_route
from dsh_sim.errors import InputError
from dsh_sim.operations.dsh import require_installation
from dsh_sim.operations.scenarios import expand, load
from dsh_sim.outputs import check_output_dir

__all__ = [
    "RouteDeterminism",
    "RouteExploration",
    "RouteExplorations",
    "RouteFinding",
    "RouteFuzzRun",
    "RouteReplay",
    "RouteReplays",
    "route_determinism",
    "route_explore",
    "route_findings",
    "route_fuzz",
    "route_points",
    "route_replay",
]


@attrs.frozen
class RouteReplay:
    """One scenario on the DSH route: skipped (why), or run, judged and compared."""

    path: str
    name: str
    skipped: str | None = None
    run: RouteRun | None = None
    violations: tuple[RouteViolation, ...] = ()
    checked: dict[str, int] = attrs.field(factory=dict)
    comparison: RouteComparison | None = None
    expected: str | None = None  # the scenario expects a violation of this invariant
    error: str | None = None  # the host could not run it (DSH refused a request)
    require_fired: bool = True  # the scenario's expectation: a rule that never fired fails it

    @property
    def unexplained(self) -> tuple[RouteViolation, ...]:
        return tuple(v for v in self.violations if v.finding is None)

    @property
    def ok(self) -> bool:
        if self.skipped is not None:
            return True
        if self.error is not None or (self.run is not None and self.run.unfired and self.require_fired):
            return False
        if self.expected is not None:
            held = any(v.invariant == self.expected for v in self.violations)
        else:
            held = not self.unexplained
        return held and (self.comparison is None or not self.comparison.unexplained)

    def row(self) -> dict[str, Any]:
        out: dict[str, Any] = {"scenario": self.path, "name": self.name, "runtime": "dsh-route"}
        if self.skipped is not None:
            return {**out, "skipped": self.skipped}
        if self.error is not None:
            return {**out, "error": self.error, "ok": False}
        assert self.run is not None
        out.update(
            ok=self.ok,
            digest=self.run.digest,
            session_sha256=hashlib.sha256(self.run.log).hexdigest(),
            outcomes=list(self.run.outcomes),
            crashes=[attrs.asdict(c) for c in self.run.crashes],
            unfired=list(self.run.unfired),
            violations=[attrs.asdict(v) for v in self.violations],
            checked=self.checked,
            expected=self.expected,
            points_hit=self.run.hits,
            versions=self.run.versions,
        )
        if self.comparison is not None:
            out["differential"] = {
                "comparable": self.comparison.comparable,
                "differences": [attrs.asdict(d) for d in self.comparison.differences],
            }
        return out


@attrs.frozen
class RouteReplays:
    """Scenario files replayed on the DSH route: each result, the skips and their reasons."""

    results: tuple[RouteReplay, ...]

    @property
    def failed(self) -> bool:
        return any(not r.ok for r in self.results)

    def skip_reasons(self) -> dict[str, int]:
        return dict(Counter(r.skipped for r in self.results if r.skipped is not None).most_common())

    def summary(self) -> dict[str, Any]:
        ran = [r for r in self.results if r.skipped is None]
        compared = [r for r in ran if r.comparison is not None and r.comparison.comparable]
        return {
            "scenarios": len(self.results),
            "ran": len(ran),
            "skipped": len(self.results) - len(ran),
            "skip_reasons": self.skip_reasons(),
            "violations": dict(Counter(v.invariant for r in ran for v in r.violations)),
            "explained": dict(Counter(v.finding for r in ran for v in r.violations if v.finding)),
            "compared": len(compared),
            "differences": sum(len(r.comparison.differences) for r in compared if r.comparison),
            "unexplained_differences": sum(len(r.comparison.unexplained) for r in compared if r.comparison),
            "failed": sum(not r.ok for r in self.results),
        }


def _one(path: str, install: Any, differential: bool, plugins: dict[str, Any]) -> RouteReplay:
    scenario = load(path)
    program = translate(scenario)
    if isinstance(program, Skip):
        return RouteReplay(path, scenario.name, skipped=program.reason)
    expected = scenario.expect.invariant if scenario.expect.outcome == "violation" else None
    try:
        run = run_route(install, program, **plugins)
    except RouteError as err:
        return RouteReplay(path, scenario.name, error=str(err), expected=expected)
    violations, checked = judge(run, checkpoint_policy=scenario.config.checkpoint_policy)
    comparison = compare(program, run) if differential else None
    return RouteReplay(
        path, scenario.name, None, run, tuple(violations), checked, comparison, expected, None, scenario.expect.require_fired
    )


def _plugins(policy: str | None, tools: str | None, extra: Sequence[str]) -> dict[str, Any]:
    """The host's plugin options, each a Cordis plugin module that exists (one line if not)."""
    for option, path in [("policy", policy), ("tools", tools)] + [("plugin", p) for p in extra]:
        if path is not None and not (os.path.isfile(path) and path.endswith((".mjs", ".js"))):
            raise InputError(f"{path}: the route {option} must be a Cordis plugin module (.mjs or .js file)")
    return {
        "policy": None if policy is None else os.path.abspath(policy),
        "tools": None if tools is None else os.path.abspath(tools),
        "extra": tuple(os.path.abspath(p) for p in extra),
    }


def route_replay(
    paths: Sequence[str],
    *,
    differential: bool = True,
    progress: Callable[[RouteReplay], None] | None = None,
    policy: str | None = None,
    tools: str | None = None,
    extra: Sequence[str] = (),
) -> RouteReplays:
    """Replay scenario files (or folders) on the DSH route; with ``differential``, run each on
    dsh-sim's runtime too and compare.  ``policy``/``tools``/``extra`` replace DSH's checkpoint
    policy or the world tools plugin, or add plugins (paths to ``.mjs`` Cordis plugins): how a
    maintainer tries a change of the route, and how the tests break it on purpose."""
    install = require_installation()
    plugins = _plugins(policy, tools, extra)
    results = []
    for path in expand(paths):
        result = _one(path, install, differential, plugins)
        if progress is not None:
            progress(result)
        results.append(result)
    return RouteReplays(tuple(results))


@attrs.frozen
class RouteExploration:
    """One scenario explored on the DSH route (or skipped, with the reason)."""

    path: str
    name: str
    skipped: str | None = None
    result: RouteExploreResult | None = None

    @property
    def unexplained(self) -> int:
        """Violations no finding explains, and kills where dsh-sim's recovery differs unexplained."""
        if self.result is None:
            return 0
        return sum(v.finding is None for v in self.result.violations) + sum(bool(c.unexplained) for c in self.result.compared)

    def row(self) -> dict[str, Any]:
        if self.result is None:
            return {"scenario": self.path, "name": self.name, "runtime": "dsh-route", "skipped": self.skipped}
        return {"scenario": self.path, **self.result.document(), "unexplained": self.unexplained}


@attrs.frozen
class RouteExplorations:
    """Scenario files explored on the DSH route, with the totals the command prints."""

    explored: tuple[RouteExploration, ...]
    expected_violations: frozenset[str] = frozenset()  # scenario names that expect a violation

    @property
    def failed(self) -> bool:
        return any(e.unexplained and e.name not in self.expected_violations for e in self.explored)

    def totals(self) -> dict[str, Any]:
        done = [e.result for e in self.explored if e.result is not None]
        verdicts: Counter[str] = Counter()
        findings: Counter[str] = Counter()
        for r in done:
            verdicts.update(r.verdicts)
            findings.update(v.finding for v in r.violations if v.finding)
            findings.update(d.finding for c in r.compared for d in c.differences if d.finding)
        compared = [c for r in done for c in r.compared]
        return {
            "scenarios": len(self.explored),
            "explored": len(done),
            "kills_compared": sum(c.matched for c in compared),
            "kills_differing": sum(bool(c.differences) for c in compared),
            "kills_differing_unexplained": sum(bool(c.unexplained) for c in compared),
            "not_announced_by_dsh_sim": sum(not c.matched for c in compared),
            "skipped": len(self.explored) - len(done),
            "crash_points": sum(r.points for r in done),
            "states": sum(r.states for r in done),
            "recoveries": sum(r.recoveries for r in done),
            "verdicts": dict(sorted(verdicts.items())),
            "explained": dict(sorted(findings.items())),
            "unexplained": sum(e.unexplained for e in self.explored if e.name not in self.expected_violations),
        }


def route_explore(
    paths: Sequence[str],
    *,
    crash: str = "both",
    differential: bool = True,
    progress: Callable[[RouteExploration], None] | None = None,
) -> RouteExplorations:
    """Every crash state of each scenario on the DSH route, recovered by DSH and judged; with
    ``differential``, every kill at a route point dsh-sim's runtime has is replayed there too
    and the two recoveries compared."""
    install = require_installation()
    out = []
    expected = set()
    for path in expand(paths):
        scenario = load(path)
        if scenario.expect.outcome == "violation":
            expected.add(scenario.name)
        program = translate(scenario)
        if isinstance(program, Skip):
            explored = RouteExploration(path, scenario.name, skipped=program.reason)
        else:
            result, _points = explore_route(install, program, crash=crash, differential=differential)
            explored = RouteExploration(path, scenario.name, result=result)
        if progress is not None:
            progress(explored)
        out.append(explored)
    return RouteExplorations(tuple(out), frozenset(expected))


def route_fuzz(
    *,
    examples: int = 20,
    budget: float = 120.0,
    seed: int | None = None,
    found_dir: str = "scenarios/found",
    progress: Callable[[int, int, float], None] | None = None,
    policy: str | None = None,
    tools: str | None = None,
    extra: Sequence[str] = (),
) -> RouteFuzzRun:
    """Draw scenarios the route can express (Hypothesis), run each on DSH's route and on
    dsh-sim's runtime, and shrink the first that a judge or the differential faults to a saved
    scenario file (``policy``/``tools``/``extra``: as :func:`route_replay`)."""
    check_output_dir(found_dir, "--found-dir")
    install = require_installation()
    plugins = _plugins(policy, tools, extra)
    chosen = seed if seed is not None else random.SystemRandom().randrange(2**32)
    return run_route_fuzz(install, examples=examples, budget=budget, seed=chosen, found_dir=found_dir, progress=progress, plugins=plugins)


def route_points() -> list[RoutePoint]:
    """The route host's named points, each with its counterpart in dsh-sim's registry."""
    return list(POINTS.values())


def route_findings() -> dict[str, RouteFinding]:
    """What route runs found about DSH (with their standalone reproductions) and the
    differences from dsh-sim explained by design, by id."""
    return dict(ROUTE_FINDINGS)


@attrs.frozen
class RouteDeterminism:
    """One scenario replayed on the route in new processes: the digests and session hashes."""

    scenario: str
    same: bool
    digests: tuple[str, ...]
    sessions: tuple[str, ...]


def route_determinism(path: str, *, runs: int = 2) -> RouteDeterminism:
    """Replay ``path`` on the route in ``runs`` new processes (each under its own
    ``PYTHONHASHSEED``): the same trace digest and the same session bytes, or not."""
    digests, sessions = [], []
    for index in range(runs):
        env = dict(os.environ, PYTHONHASHSEED=str(17 + index * 101))
        proc = subprocess.run(
            [sys.executable, "-m", "dsh_sim", "replay", "--runtime", "dsh-route", "--no-differential", "--json", path],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        rows = json.loads(proc.stdout)
        row = rows[0]
        digests.append(str(row.get("digest")))
        sessions.append(str(row.get("session_sha256")))
    return RouteDeterminism(path, len(set(digests)) == 1 and len(set(sessions)) == 1, tuple(digests), tuple(sessions))
