"""HTML sections of the report that are plain tables (everything but matrices and charts).

Each function returns one ``<section>``; together with :mod:`dsh_sim.report.page` they
follow the order of coverage.md.  Rows that need attention carry a class (``unmet``,
``bad``, ``warn``) so both the eye and a test can find them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsh_sim.report import kills as kill_model
from dsh_sim.report import model, svg
from dsh_sim.report.htmlkit import (
    attrs,
    code,
    esc,
    ident,
    num,
    pill,
    section,
    table,
    td,
    tr,
)


def requirements(status: list[dict[str, Any]]) -> str:
    # Unmet first (stable within each group): what is missing is what a maintainer needs.
    ordered = sorted(status, key=lambda s: s["met"])
    rows = [
        tr(
            td(s["kind"])
            + td(s["row"])
            + td(s["col"])
            + num(s["hits"])
            + td(raw=pill("met", "good") if s["met"] else pill("UNMET", "bad")),
            cls="met" if s["met"] else "unmet",
        )
        for s in ordered
    ]
    met = sum(1 for s in status if s["met"])
    why = f'{met}/{len(status)} met. Each "sometimes" cell must be hit at least once, or a whole class of crash became unreachable.'
    return section(
        "requirements", "Requirements", why, table(["kind", "row", "column", "hits", "status"], rows, id_="requirements", num_cols=(3,))
    )


def points(view: Mapping[str, Any]) -> str:
    rows_data = model.point_rows(view)
    chart = svg.progress_chart(
        [(p["name"], p["explored"], p["possible"]) for p in rows_data], "explored vs possible crash states per named point"
    )
    rows = []
    for p in rows_data:
        below = p["explored"] < p["possible"]
        explored = num(f"{p['explored']:,}/{p['possible']:,}" if p["possible"] else "—", "sampled" if below else "")
        sampled = num(p["sampled"], "sampled") if p["sampled"] else num("—")
        cells = td(raw=ident(p["name"])) + td(p["layer"]) + explored + sampled + num(p["hits"]) + td(p["doc"], cls="muted")
        rows.append(tr(cells, cls=None if (p["possible"] or p["hits"]) else "warn", data_point=p["name"]))
    header = ["point", "layer", "explored/possible", "sampled at", "hits (fuzz)", "what happens there"]
    body = f'<div class="charts">{chart}</div>' + table(header, rows, id_="points", num_cols=(2, 3, 4))
    why = (
        "Systematic exploration proves the states it enumerates (explored/possible); above the bound it samples them"
        ' ("sampled at" = recorded points where it did). Fuzzing samples beyond (hits). Amber rows were neither explored nor hit.'
    )
    return section("points", "Named points", why, body)


def torn(view: Mapping[str, Any]) -> str:
    rows = [
        tr(td(raw=ident(c)) + num(n) + td("required" if req else "", cls="muted"), cls="unmet" if req and not n else None)
        for c, n, req in model.torn_rows(view)
    ]
    return section(
        "torn",
        "Torn-write classes",
        "Where a power cut tore the log, by codec structure (zstd frames and blocks, JSONL lines).",
        table(["class", "cases", ""], rows, id_="torn-classes", num_cols=(1,)),
    )


def invariants(view: Mapping[str, Any]) -> str:
    rows = []
    for inv in model.invariant_rows(view):
        cls = "bad" if inv["violations"] else ("warn" if not inv["checks"] else None)
        rows.append(tr(td(raw=ident(inv["name"])) + num(inv["checks"]) + num(inv["violations"]) + td(inv["description"]), cls=cls))
    why = "How many times each invariant was evaluated; amber = never checked in these runs (it proved nothing), red = violated."
    return section(
        "invariants",
        "Invariants checked",
        why,
        table(["invariant", "checks", "violations", "what must hold"], rows, id_="invariants", num_cols=(1, 2)),
    )


def violations(view: Mapping[str, Any]) -> str:
    found = view.get("violations", [])
    if not found:
        body = '<p class="none">None.</p>'
    else:
        rows = [
            tr(
                td(raw=ident(v.get("invariant", "?")))
                + td(v.get("source") or "—")
                + td(v.get("message", ""))
                + td(raw=code(v["scenario"]) if v.get("scenario") else '<span class="muted">not saved</span>'),
                cls="bad",
            )
            for v in found
        ]
        body = table(["invariant", "source", "message", "replayable scenario"], rows, id_="violations")
    return section(
        "violations",
        f"Violations ({len(found)})",
        "Each saved scenario is a replayable file that reproduces the failure deterministically.",
        body,
    )


def determinism(view: Mapping[str, Any]) -> str:
    checks = view.get("determinism", [])
    if not checks:
        body = '<p class="muted">No re-check recorded.</p>'
    else:
        rows = []
        for d in checks:
            same = bool(d.get("same"))
            digests = [
                td(raw=f"<span{attrs(class_='mono', title=d.get(k, ''))}>{esc(str(d.get(k, ''))[:16])}</span>")
                for k in ("digest_a", "digest_b")
            ]
            how = td(str(d.get("how", "")))
            rows.append(
                tr(
                    td(raw=code(d.get("scenario", "?")))
                    + how
                    + "".join(digests)
                    + td(raw=pill("same", "good") if same else pill("DIVERGED", "bad")),
                    cls=None if same else "bad",
                )
            )
        body = table(["scenario", "how", "digest (run a)", "digest (run b)", "result"], rows, id_="determinism")
    return section("determinism", "Determinism re-checks", "The same scenario run twice must produce the same trace digest.", body)


def _method_cell(kill: Mapping[str, Any], method: str) -> str:
    """What one method did to one mutant: killed/missed, its time, the invariant that fired."""
    result = kill_model.method_result(kill, method)
    if result is None:
        return td("not run", cls="method muted", data_method=method)
    killed = bool(result.get("killed"))
    body = pill("killed", "good") if killed else pill("missed", "na")
    body += f' <span class="t">{esc(model.fmt_seconds(result.get("seconds")))}</span>'
    if killed and result.get("invariant"):
        body += ident(result["invariant"])
    cls = "method " + ("killed" if killed else "missed") + (" fastest" if killed and kill.get("method") == method else "")
    return td(raw=body, cls=cls, data_method=method, title=kill_model.method_title(method, result))


def kill_matrix(view: Mapping[str, Any]) -> str:
    kills = view.get("kill_matrix", [])
    if not kills:
        return section(
            "kills",
            "Kill matrix",
            "Seeded durability bugs (mutants) the harness must catch.",
            '<p class="muted">No mutant run in these results.</p>',
        )
    methods = kill_model.methods(kills)
    rows = []
    for k in kills:
        killed = bool(k.get("killed"))
        scenario = code(k["scenario"]) if k.get("scenario") else '<span class="muted">—</span>'
        mutant = ident(k.get("mutant", "?")) + f'<div class="desc muted">{esc(k.get("description", ""))}</div>'
        cells = td(raw=mutant) + td(raw=pill("killed", "good") if killed else pill("SURVIVED", "bad"))
        cells += "".join(_method_cell(k, m) for m in methods)
        cells += (
            td(model.fmt_value(k.get("method")))
            + num(model.fmt_seconds(k.get("time_to_kill")))
            + num(k.get("scenario_steps"))
            + td(raw=scenario, cls="scenario")
        )
        rows.append(tr(cells, cls=None if killed else "bad", data_mutant=k.get("mutant", "?")))
    killed_n = sum(1 for k in kills if k.get("killed"))
    medians = kill_model.median_by_method(kills)
    per_method = ", ".join(f"{m} {model.fmt_seconds(t)}" for m, t in medians.items())
    why = f"{killed_n}/{len(kills)} killed; median time to kill {model.fmt_seconds(kill_model.median_time_to_kill(kills))}"
    why += f" (per method, over the mutants it killed: {per_method})." if per_method else "."
    why += " A surviving mutant (red) is a durability bug the harness cannot see. The outlined cell is the fastest kill; shrunk steps = size of the scenario fuzzing saved, after shrinking."
    header = ["mutant (bug seeded)", "result", *methods, "fastest", "time to kill", "shrunk steps", "scenario"]
    first_num = 2 + len(methods) + 1
    return section("kills", "Kill matrix", why, table(header, rows, id_="kill-matrix", num_cols=(first_num, first_num + 1)))


def runs(view: Mapping[str, Any]) -> str:
    data = model.runs_of(view)
    collapsed = model.collapsed_runs(data)
    keys = model.run_columns(collapsed)
    rows = [
        tr(
            "".join(
                td(model.fmt_value(r.get(k)), cls="num" if isinstance(r.get(k), (int, float)) and not isinstance(r.get(k), bool) else None)
                for k in keys
            )
        )
        for r in collapsed
    ]
    total = model.fmt_seconds(model.total_seconds(data))
    seeds = model.fmt_value(model.seeds(data)) or "—"
    body = f'<p>Total time <b>{esc(total)}</b> over {len(data)} run(s), one row per kind. Seeds: <span class="mono">{esc(seeds)}</span></p>'
    if collapsed:
        body += table(keys, rows, id_="runs")
    return section("runs", "Runs, seeds and time", "Everything needed to reproduce these numbers.", body)
