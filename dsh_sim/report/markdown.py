"""coverage.md: the report as plain Markdown, for CI logs, PR comments and terminals.

Same content and order as the HTML page, without charts.  Cells list counts per outcome
with short names (``NS 3 · UNK 1``) so a matrix stays narrow enough to read in a diff.
"""

from __future__ import annotations

from typing import Any, Mapping

from dsh_sim.report import model


def _esc(text: Any) -> str:
    """Keep table structure intact whatever a message contains."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(_esc(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(_esc(c) for c in row) + " |" for row in rows]
    return out + [""]


def _cell(counts: Mapping[str, int]) -> str:
    return " · ".join(f"{model.SHORT.get(o, o)} {n}" for o, n in counts.items()) or "·"


def _matrix(title: str, matrix: model.Matrix, rows: list[str], cols: list[str], first: str) -> list[str]:
    body = [[r] + [_cell(model.cell(matrix, r, c)) for c in cols] + [_cell(model.row_total(matrix, r))] for r in rows]
    return [f"## {title}", ""] + _table([first] + cols + ["all"], body)


def render_markdown(view: Mapping[str, Any], status: list[dict[str, Any]]) -> str:
    """The whole report as one Markdown document (deterministic: no timestamps)."""
    out: list[str] = ["# dsh-sim crash coverage", ""]
    for item in model.headline(view, status):
        flag = " **(!)**" if item["alarm"] else ""
        out.append(f"- **{item['label']}**: {item['value']}{flag}")
    out.append("")
    legend = ", ".join(f"`{s}` = {o}" for o, s in model.SHORT.items())
    out += [f"Cells count tool calls (coverage matrix) or crashes (barrier matrix) per recovery outcome: {legend}.", ""]

    cols = model.columns(view.get("boundary_matrix", {}), view.get("barrier_matrix", {}))
    out += _matrix("Coverage matrix: side-effect boundary × crash kind/phase", view.get("boundary_matrix", {}), model.boundary_rows(view), cols, "boundary")
    out += _matrix("Barrier matrix: durability barrier × crash kind/phase", view.get("barrier_matrix", {}), model.barrier_rows(view), cols, "barrier")

    out += ["## Verdicts vs ground truth (confusion matrix)", ""]
    conf = view.get("confusion", {})
    unsafe = model.unsafe_count(view)
    rows = []
    for verdict in ("TOOL_NOT_STARTED", "TOOL_OUTCOME_UNKNOWN"):
        counts = conf.get(verdict, {})
        applied = counts.get("applied", 0)
        if verdict == model.UNSAFE[0]:
            applied_cell = f"**{applied} UNSAFE**" if applied else f"{applied} (safe)"
        else:
            applied_cell = str(applied)
        rows.append([verdict, applied_cell, counts.get("not applied", 0)])
    out += _table(["verdict \\ effect", "applied", "not applied"], rows)
    out += [f"TOOL_NOT_STARTED × applied must be 0: **{'FAIL' if unsafe else 'ok'}** ({unsafe}). TOOL_OUTCOME_UNKNOWN × not applied is the cost of caution.", ""]

    unmet = [s for s in status if not s["met"]]
    out += [f"## Requirements (\"sometimes\" cells): {len(status) - len(unmet)}/{len(status)} met", ""]
    if unmet:
        out += ["Unmet:", ""] + _table(["kind", "row", "column", "hits"], [[s["kind"], s["row"], s["col"], s["hits"]] for s in unmet])
    else:
        out += ["All requirements met.", ""]

    out += ["## Named points", ""]
    out += _table(
        ["point", "layer", "explored/possible", "hits (fuzz)"],
        [[p["name"], p["layer"], f"{p['explored']}/{p['possible']}" if p["possible"] else "—", p["hits"]] for p in model.point_rows(view)],
    )
    out += ["## Torn-write classes", ""]
    out += _table(["class", "cases", "required"], [[c, n, "yes" if req else ""] for c, n, req in model.torn_rows(view)])

    out += ["## Invariants checked", ""]
    out += _table(["invariant", "checks", "violations", "description"], [[i["name"], i["checks"], i["violations"], i["description"]] for i in model.invariant_rows(view)])

    violations = view.get("violations", [])
    out += [f"## Violations ({len(violations)})", ""]
    if violations:
        out += _table(["invariant", "source", "message", "scenario"], [[v.get("invariant"), v.get("source"), v.get("message"), v.get("scenario") or "—"] for v in violations])
    else:
        out += ["None.", ""]

    determinism = view.get("determinism", [])
    out += ["## Determinism re-checks", ""]
    if determinism:
        out += _table(["scenario", "digest a", "digest b", "same"], [[d.get("scenario"), d.get("digest_a"), d.get("digest_b"), "yes" if d.get("same") else "**NO**"] for d in determinism])
    else:
        out += ["None recorded.", ""]

    kills = view.get("kill_matrix", [])
    out += ["## Kill matrix (mutants)", ""]
    if kills:
        out += _table(
            ["mutant", "killed", "method", "time to kill", "examples", "steps", "scenario", "description"],
            [
                [k.get("mutant"), "yes" if k.get("killed") else "**SURVIVED**", model.fmt_value(k.get("method")), model.fmt_seconds(k.get("time_to_kill")), model.fmt_value(k.get("examples")), model.fmt_value(k.get("scenario_steps")), model.fmt_value(k.get("scenario")), k.get("description")]
                for k in kills
            ],
        )
    else:
        out += ["No mutant run in these results.", ""]

    runs = model.runs_of(view)
    out += ["## Runs", ""]
    if runs:
        keys = model.run_columns(runs)
        out += _table(keys, [[model.fmt_value(r.get(k)) for k in keys] for r in runs])
    out += [f"Total time: {model.fmt_seconds(model.total_seconds(runs))}. Seeds: {model.fmt_value(model.seeds(runs)) or '—'}.", ""]
    return "\n".join(out)
