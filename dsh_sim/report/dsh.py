"""The report's DSH section: what the published DSH was put through in these runs.

Three parts, each present only when a run had DSH installed (``dsh-sim dsh setup``):

* **the DSH writer explored** (``dsh-sim explore --runtime dsh``, and ``dsh-sim run``'s
  bounded DSH phase): per session shape, the filesystem operations DSH performed (the crash
  points), the crash states explored, the distinct recoveries DSH ran, how often each
  invariant judged them, and the violations — DSH judged by dsh-sim's invariants;
* **dsh-sim read by DSH** (``--against dsh``): how many of our runtime's crash images the real
  DSH reader also read, the distinct probes that took, the unexplained differences (each one a
  ``dsh_agrees`` violation with a replayable scenario) and the known findings that explained
  the rest;
* **the DSH route crashed** (``dsh-sim explore --runtime dsh-route``, and ``dsh-sim run``'s route
  part): per scenario, the route's points hit, the crash states and DSH's recoveries, the
  verdicts DSH's repair gave (scored against the ledger in the verdict matrix's DSH columns),
  the kills compared with dsh-sim's own recovery, and the findings that explained violations.

The same rows feed coverage.md and coverage.html, so the two cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsh_sim.evidence.view import CoverageView, DshAgainstRow, DshSection
from dsh_sim.report.htmlkit import code, num, pill, section, table, td, tr
from dsh_sim.report.mdkit import table as md_table

EXPLORE_HEADER = ["shape (scenario)", "compression", "crash points", "points by operation", "states", "recoveries", "checks", "violations"]
AGAINST_HEADER = ["run", "scenario", "crash images compared", "DSH probes", "unexplained", "known findings", "skipped"]
ROUTE_HEADER = [
    "scenario",
    "points hit",
    "crash points",
    "states",
    "recoveries",
    "NOT_STARTED",
    "OUTCOME_UNKNOWN",
    "kills compared (differ)",
    "findings",
    "unexplained",
]
_NONE = DshSection()  # a view without the section reads as one with no rows


def _n(value: int | None) -> int:
    """A count a row may leave out (``None``) as a number."""
    return 0 if value is None else value


def _found(explained: Mapping[str, int] | None) -> str:
    return ", ".join(f"{k} ×{n}" for k, n in sorted((explained or {}).items())) or "—"


def route_rows(view: CoverageView) -> list[list[Any]]:
    return [
        [
            r.name or r.scenario,
            _n(r.points_hit),
            _n(r.crash_points),
            _n(r.states),
            _n(r.recoveries),
            (r.verdicts or {}).get("TOOL_NOT_STARTED", 0),
            (r.verdicts or {}).get("TOOL_OUTCOME_UNKNOWN", 0),
            f"{_n(r.kills_compared)} ({_n(r.kills_differing)})",
            _found(r.explained),
            _n(r.unexplained) + _n(r.kills_unexplained),
        ]
        for r in (view.dsh or _NONE).route
    ]


def route_confusion(view: CoverageView) -> dict[str, dict[str, int]] | None:
    """DSH's repair verdicts against the ledger, over every route crash state (None: no route run)."""
    rows = (view.dsh or _NONE).route
    if not rows:
        return None
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        for verdict, truths in (r.confusion or {}).items():
            for truth, n in truths.items():
                out.setdefault(verdict, {}).setdefault(truth, 0)
                out[verdict][truth] += n
    return out


def _ops(per_op: Mapping[str, int]) -> str:
    return ", ".join(f"{op} {n}" for op, n in sorted(per_op.items())) or "—"


def explore_rows(view: CoverageView) -> list[list[Any]]:
    return [
        [
            f"{s.shape} ({s.scenario or '—'})",
            s.compression,
            _n(s.crash_points),
            _ops(s.points_by_op or {}),
            _n(s.states),
            _n(s.recoveries_run),
            sum((s.checked or {}).values()),
            len(s.violations or ()),
        ]
        for s in (view.dsh or _NONE).explore
    ]


def _against_row(a: DshAgainstRow) -> list[Any]:
    return [
        a.source,
        a.scenario or "—",
        _n(a.compared),
        _n(a.probes),
        _n(a.differences),
        _found(a.explained),
        f"{_n(a.no_log)} without a log, {_n(a.not_projectable)} not projectable",
    ]


def against_rows(view: CoverageView) -> list[list[Any]]:
    return [_against_row(a) for a in (view.dsh or _NONE).against]


def totals(view: CoverageView) -> dict[str, int]:
    dsh = view.dsh or _NONE
    checked: dict[str, int] = {}
    for s in dsh.explore:
        for name, n in (s.checked or {}).items():
            checked[name] = checked.get(name, 0) + n
    return {
        "shapes": len(dsh.explore),
        "states": sum(_n(s.states) for s in dsh.explore),
        "points": sum(_n(s.crash_points) for s in dsh.explore),
        "checks": sum(checked.values()),
        "dsh_violations": sum(len(s.violations or ()) for s in dsh.explore),
        "compared": sum(_n(a.compared) for a in dsh.against),
        "unexplained": sum(_n(a.differences) for a in dsh.against),
        "route_scenarios": len(dsh.route),
        "route_states": sum(_n(r.states) for r in dsh.route),
        "route_compared": sum(_n(r.kills_compared) for r in dsh.route),
        "route_unexplained": sum(_n(r.unexplained) + _n(r.kills_unexplained) for r in dsh.route),
    }


def _intro(t: Mapping[str, int]) -> str:
    return (
        f"The DSH writer (0.1.0-rc.8, on SimFS) explored over {t['shapes']} session shape(s): {t['points']} crash points, "
        f"{t['states']} crash states, {t['checks']} invariant checks, {t['dsh_violations']} violation(s). "
        f"dsh-sim's runtime read by the DSH reader: {t['compared']} crash image(s) compared, {t['unexplained']} unexplained difference(s). "
        f"The DSH route (agent loop, checkpoint policy, tools, store) crashed over {t['route_scenarios']} scenario(s): "
        f"{t['route_states']} crash states, {t['route_compared']} kills compared with dsh-sim's recovery, {t['route_unexplained']} unexplained."
    )


def _skipped(view: CoverageView) -> str | None:
    why = (view.dsh or _NONE).skipped
    return (
        f"Skipped: {why}. No DSH writer or route was explored and no recovery was read by DSH: dsh_agrees and route_agrees were not run."
        if why
        else None
    )


def markdown(view: CoverageView) -> list[str]:
    if view.dsh is None:
        return []
    skipped = _skipped(view)
    if skipped:
        return ["## DSH (the published reference)", "", skipped, ""]

    out = ["## DSH (the published reference)", "", _intro(totals(view)), ""]
    rows = explore_rows(view)
    if rows:
        out += ["### The DSH writer explored (crash at every filesystem operation)", ""] + md_table(EXPLORE_HEADER, rows)
    rows = against_rows(view)
    if rows:
        out += ["### dsh-sim's recoveries read by DSH (--against dsh)", ""] + md_table(AGAINST_HEADER, rows)
    rows = route_rows(view)
    if rows:
        out += ["### The DSH route crashed (a kill at every point, compared with dsh-sim)", ""] + md_table(ROUTE_HEADER, rows)
    return out


def html(view: CoverageView) -> str:
    if view.dsh is None:
        return ""
    skipped = _skipped(view)
    if skipped:
        return section("dsh", "DSH (the published reference)", skipped, "")
    body = ""
    rows = explore_rows(view)
    if rows:
        cells = [
            tr(
                "".join(td(c) if i in (0, 1, 3) else num(c) for i, c in enumerate(row[:-1]))
                + td(raw=pill(str(row[-1]), "bad") if row[-1] else pill("0", "good")),
                cls="bad" if row[-1] else None,
            )
            for row in rows
        ]
        body += "<h3>The DSH writer explored</h3>" + table(EXPLORE_HEADER, cells, id_="dsh-explore", num_cols=(2, 4, 5, 6, 7))
    rows = against_rows(view)
    if rows:
        cells = [
            tr(
                td(row[0])
                + td(raw=code(row[1]))
                + num(row[2])
                + num(row[3])
                + num(row[4], "bad" if row[4] else "")
                + td(row[5])
                + td(row[6]),
                cls="bad" if row[4] else None,
            )
            for row in rows
        ]
        body += "<h3>dsh-sim's recoveries read by DSH</h3>" + table(AGAINST_HEADER, cells, id_="dsh-against", num_cols=(2, 3, 4))
    rows = route_rows(view)
    if rows:
        cells = [
            tr(
                td(raw=code(str(row[0])))
                + "".join(num(c) for c in row[1:7])
                + td(row[7])
                + td(row[8])
                + num(row[9], "bad" if row[9] else ""),
                cls="bad" if row[9] else None,
            )
            for row in rows
        ]
        body += "<h3>The DSH route crashed</h3>" + table(ROUTE_HEADER, cells, id_="dsh-route", num_cols=(1, 2, 3, 4, 5, 6, 9))
    return section("dsh", "DSH (the published reference)", _intro(totals(view)), body)
