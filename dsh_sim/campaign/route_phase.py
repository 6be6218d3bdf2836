"""``dsh-sim run``'s DSH route part: the published DSH route crashed, bounded.

Part of the DSH phase (:mod:`dsh_sim.campaign.dsh_phase`), run when DSH is installed.  Every
starter scenario the route can express is explored on it with kills at every point (power
losses are left to ``dsh-sim explore --runtime dsh-route``: the writer part of the phase covers
DSH's power-loss states), each kill at a route point dsh-sim has compared with dsh-sim's own
recovery of it.  One result document carries the rows the report's DSH section shows and the
DSH column of its verdict matrix; a violation or difference no finding explains is a violation
of the run.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Sequence

from dsh_sim.dsh.install import Installation
from dsh_sim.dsh.route.explore import explore_route
from dsh_sim.dsh.route.program import Skip, translate
from dsh_sim.evidence.document import DshRouteRow, ResultsDocument, Violation
from dsh_sim.evidence.results import meta, write
from dsh_sim.scenario.model import Scenario

NAME = "route_agrees"  # the invariant a route violation or difference nobody explained is reported under


def run_route_phase(
    install: Installation,
    files: Sequence[str],
    scenarios: Sequence[Scenario],
    results_dir: str,
    tag: str,
    between: Callable[[str, int, int], None] | None = None,
) -> str:
    """Explore the route over the starter scenarios it can express; the result file written.
    ``between(part, done, total)`` after each crash point (progress; a campaign's stop raises)."""
    started = time.perf_counter()
    rows: list[DshRouteRow] = []
    violations: list[Violation] = []
    checked: dict[str, int] = {}
    skipped = 0
    tell = between or (lambda part, done, total: None)
    starters = [
        (path, scenario)
        for path, scenario in zip(files, scenarios)
        if f"{os.sep}starter{os.sep}" in os.path.join(os.sep, path) and scenario.passes_clean
    ]
    for index, (path, scenario) in enumerate(starters, 1):
        part = f"DSH route, scenario {index}/{len(starters)} ({scenario.name}), crash point"
        tell(part, 0, 0)
        program = translate(scenario)
        if isinstance(program, Skip):
            skipped += 1
            continue
        result, _points = explore_route(install, program, crash="kill", differential=True, on_point=functools.partial(tell, part))
        rows.append(result.row(path))
        for name, n in result.checked.items():
            checked[name] = checked.get(name, 0) + n
        checked[NAME] = checked.get(NAME, 0) + sum(c.matched for c in result.compared)
        for v in result.violations:
            if v.finding is None:
                violations.append(Violation(v.invariant, f"DSH route, kill at {v.name}: {v.detail}", path, "dsh-route"))
        for c in result.compared:
            for d in c.unexplained:
                where = f"{c.point} (lifetime {c.lifetime}, #{c.occurrence})"
                violations.append(Violation(NAME, f"after a kill at {where}: {d.line()}", path, "dsh-route"))
    doc = ResultsDocument(
        meta=meta("dsh-route", seconds=round(time.perf_counter() - started, 3), skipped=skipped),
        checked=checked,
        violations=tuple(violations),
        dsh_route=tuple(rows),
    )
    written = write(doc, os.path.join(results_dir, f"dsh-route{tag}.json"))
    print(
        f"DSH route explored over {len(rows)} starter scenario(s) ({skipped} it cannot express): "
        f"{sum(r.states or 0 for r in rows)} kill states, {sum(r.kills_compared or 0 for r in rows)} compared with dsh-sim, "
        f"{len(violations)} unexplained, {time.perf_counter() - started:.1f}s",
        flush=True,
    )
    return written
