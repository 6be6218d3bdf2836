"""coverage.md: the report as plain Markdown, for CI logs, PR comments and terminals.

Same content and order as the HTML page, without charts.  Cells list counts per outcome
with short names (``NS 3 · UNK 1``) so a matrix stays narrow enough to read in a diff,
then the crash states explored/possible in parentheses (``(300/1,024 **sampled**)`` when
fewer were checked than the crash model allows).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dsh_sim.evidence.records import KillRow
from dsh_sim.evidence.view import CoverageView, Requirement
from dsh_sim.report import dsh as dsh_report
from dsh_sim.report import kills as kill_model
from dsh_sim.report import model, runs, states
from dsh_sim.report.headline import Summary, headline, subtitle, summary
from dsh_sim.report.mdkit import esc, table


def _cell(counts: Mapping[str, int], st: states.States | None = None) -> str:
    """``NS 3 · lost 1 (412/412 states)``; sampled cells read ``(300/1,024 **sampled**)``."""
    text = " · ".join(f"{model.SHORT.get(o, o)} {n}" for o, n in counts.items())
    if st is not None:
        label = st.label().replace(" sampled", " **sampled**")
        text = f"{text} ({label})" if text else f"({label})"
    return text or "·"


def _matrix(title: str, view: CoverageView, which: states.Which, rows: list[str], cols: list[str], first: str) -> list[str]:
    grid = model.matrix_grid(view, which, rows, cols)
    body = [[row.name] + [_cell(*c) for c in row.cells] + [_cell(*row.total)] for row in grid.rows]
    foot = ["all"] + [_cell(*c) for c in grid.col_totals] + [_cell(*grid.total)]
    return [f"## {title}", ""] + table([first] + cols + ["all"], body + [foot])


def _method(kill: KillRow, method: str) -> str:
    result = kill_model.method_result(kill, method)
    if result is None:
        return "—"
    if not result.killed:
        return f"missed {model.fmt_seconds(result.seconds)}"
    invariant = f" ({result.invariant})" if result.invariant else ""
    mark = "**killed**" if kill.method == method else "killed"
    return f"{mark} {model.fmt_seconds(result.seconds)}{invariant}"


def _kills(kills: Sequence[KillRow]) -> list[str]:
    if not kills:
        return ["No mutant run in these results.", ""]
    methods = kill_model.methods(kills)
    rows = [
        [k.mutant, "yes" if k.killed else "**SURVIVED**", *(_method(k, m) for m in methods), model.fmt_value(k.method), model.fmt_seconds(k.time_to_kill),
         model.fmt_value(k.scenario_steps), model.fmt_value(k.scenario), k.description]
        for k in kills
    ]  # fmt: skip
    out = table(["mutant", "killed", *methods, "fastest", "time to kill", "shrunk steps", "scenario", "description"], rows)
    medians = ", ".join(f"{m} {model.fmt_seconds(t)}" for m, t in kill_model.median_by_method(kills).items())
    line = f"Median time to kill: {model.fmt_seconds(kill_model.median_time_to_kill(kills))}" + (
        f" (per method: {medians})" if medians else ""
    )
    survivors = kill_model.survivors(kills)
    line += f". Survivors: **{', '.join(survivors)}**." if survivors else ". No survivor."
    return out + [esc(line), ""]


def render_markdown(view: CoverageView, status: Sequence[Requirement], numbers: Summary | None = None) -> str:
    """The whole report as one Markdown document (deterministic: no timestamps); ``numbers`` is
    the view's :func:`~dsh_sim.report.headline.summary` (computed when not given)."""
    numbers = summary(view, status) if numbers is None else numbers
    out: list[str] = ["# dsh-sim crash coverage", "", esc(subtitle(view, numbers)) + ".", ""]
    for item in headline(view, numbers):
        flag = " **(!)**" if item.alarm else ""
        note = f" ({item.note})" if item.note else ""
        out.append(f"- **{item.label}**: {item.value}{flag}{note}")
    out.append("")
    out += _campaign(view)
    legend = ", ".join(f"`{s}` = {o}" for o, s in model.SHORT.items())
    out += [
        f"Cells count tool calls (coverage matrix) or crashes (barrier matrix) per recovery outcome: {legend}. "
        "A crash whose calls ended differently counts once under each distinct outcome, so a barrier cell's outcomes "
        "may add up to more than its crashes (and more than the crash cases above); its crash states do not.",
        "",
    ]
    out += [
        "In parentheses: crash states explored / possible (allowed by the crash model); **sampled** where fewer were checked. Every state is in one barrier cell; in the coverage matrix it counts once per boundary among its calls.",
        "",
    ]

    cols = model.matrix_columns(view)
    out += _matrix(
        "Coverage matrix: side-effect boundary × crash kind/phase", view, "boundary", model.boundary_rows(view), cols, "boundary"
    )
    out += _matrix("Barrier matrix: durability barrier × crash kind/phase", view, "barrier", model.barrier_rows(view), cols, "barrier")

    out += ["## Verdicts vs ground truth (confusion matrix)", ""]
    conf = view.confusion
    unsafe = model.unsafe_count(view)
    rows = []
    route = dsh_report.route_confusion(view)  # the DSH route's repair, scored the same way
    for verdict in ("TOOL_NOT_STARTED", "TOOL_OUTCOME_UNKNOWN"):
        counts = conf.get(verdict, {})
        applied = counts.get("applied", 0)
        if verdict == model.UNSAFE[0]:
            applied_cell = f"**{applied} UNSAFE**" if applied else f"{applied} (safe)"
        else:
            applied_cell = str(applied)
        row = [verdict, applied_cell, counts.get("not applied", 0)]
        if route is not None:
            theirs = route.get(verdict, {})
            row += [theirs.get("applied", 0), theirs.get("not applied", 0)]
        rows.append(row)
    header = ["verdict \\ effect", "applied", "not applied"] + (
        ["DSH route: applied", "DSH route: not applied"] if route is not None else []
    )
    out += table(header, rows)
    out += [
        f"TOOL_NOT_STARTED × applied must be 0: **{'FAIL' if unsafe else 'ok'}** ({unsafe}). TOOL_OUTCOME_UNKNOWN × not applied is the cost of caution.",
        "",
    ]

    unmet = [s for s in status if not s.met]
    out += [f'## Requirements ("sometimes" cells): {len(status) - len(unmet)}/{len(status)} met', ""]
    if unmet:
        out += ["Unmet:", ""] + table(["kind", "row", "column", "hits"], [[s.kind, s.row, s.col, s.hits] for s in unmet])
    else:
        out += ["All requirements met.", ""]

    out += ["## Named points", ""]
    out += table(
        ["point", "layer", "explored/possible", "sampled at", "hits (fuzz)"],
        [
            [p.name, p.layer, f"{p.explored:,}/{p.possible:,}" if p.possible else "—", p.sampled or "—", p.hits]
            for p in model.point_rows(view)
        ],
    )
    out += ["## Torn-write classes", ""]
    out += table(["class", "cases", "required"], [[c, n, "yes" if req else ""] for c, n, req in model.torn_rows(view)])

    out += ["## Invariants checked", ""]
    out += table(
        ["invariant", "checks", "violations", "description"],
        [
            [i.name, f"not run: {i.not_run}" if i.not_run else i.checks, "—" if i.not_run else i.violations, i.description]
            for i in model.invariant_rows(view)
        ],
    )

    violations = view.violations
    out += [f"## Violations ({len(violations)})", ""]
    if violations:
        out += table(
            ["invariant", "source", "message", "scenario"],
            [[v.invariant, v.source, v.message, v.scenario or "—"] for v in violations],
        )
    else:
        out += ["None.", ""]

    determinism = view.determinism
    out += ["## Determinism re-checks", ""]
    if determinism:
        out += [esc(model.determinism_words(view)) + ".", ""]
        out += _folded(
            f"every digest ({len(determinism)} rows)",
            table(
                ["scenario", "how", "digest a", "digest b", "same"],
                [
                    [d.scenario, d.how if d.how is not None else "", d.digest_a, d.digest_b, "yes" if d.same else "**NO**"]
                    for d in determinism
                ],
            ),
        )
    else:
        out += ["None recorded.", ""]
    out += _readers(view) + _sweep(view)

    out += ["## Kill matrix (mutants)", ""] + _kills(view.kill_matrix)
    out += dsh_report.markdown(view)

    metas = runs.runs_of(view)
    out += ["## Runs (result documents)", ""]
    out += [
        f"{len(metas)} result document(s); their own seconds add up to {model.fmt_seconds(runs.total_seconds(metas))} (the work each "
        f"document timed, not the wall time of a run: see Campaign). Seeds: {model.fmt_value(runs.seeds(metas)) or '—'}.",
        "",
    ]
    if metas:
        collapsed = runs.collapsed_runs(metas)
        keys = runs.run_columns(collapsed)
        out += _folded(f"per kind ({len(collapsed)} rows)", table(keys, [[model.fmt_value(r.value(k)) for k in keys] for r in collapsed]))
    return "\n".join(out)


def _folded(summary: str, lines: list[str]) -> list[str]:
    """A long table folded away (GitHub renders <details>; a terminal shows it all)."""
    return [f"<details><summary>{esc(summary)}</summary>", "", *lines, "</details>", ""]


def _campaign(view: CoverageView) -> list[str]:
    wall, cpu = runs.time_spent(view)
    camps = runs.campaigns(view)
    out = ["## Campaign", ""]
    if not camps:
        return out + [
            f"No campaign record in these results: time spent {model.fmt_seconds(wall)} is the documents' own seconds added up.",
            "",
        ]
    out += [f"Wall {model.fmt_seconds(wall)}, CPU {model.fmt_seconds(cpu)} in all.", ""]
    for c in camps:
        out += [
            f"- run `{c.run}` ({c.state}, {esc(str(c.executor))}): seed {c.seed}, "
            f"wall {model.fmt_seconds(c.wall_seconds)}, CPU {model.fmt_seconds(c.cpu_seconds)}",
            f"  - command: `{c.command}`",
            f"  - resume: `{c.resume}`",
        ]
    out += [""]
    rows = [
        [p.phase, f"skipped: {p.skipped}", "", ""]
        if p.skipped
        else [p.phase, model.fmt_seconds(p.wall_seconds), model.fmt_seconds(p.cpu_seconds), runs.phase_tasks(p)]
        for p in runs.phase_rows(view)
    ]
    return (
        out
        + ["Time per phase (wall: first task started to last task ended, as the submitter saw them):", ""]
        + table(["phase", "wall", "CPU", "tasks"], rows)
    )


def _readers(view: CoverageView) -> list[str]:
    out = ["## Reader differential", ""]
    rows = view.readers
    if not rows:
        return out + ["Not run in these results.", ""]
    return out + table(
        ["cases", "checks", "mismatches", "time"],
        [[r.cases, r.checks, r.mismatches, model.fmt_seconds(r.seconds)] for r in rows],
    )


def _sweep(view: CoverageView) -> list[str]:
    out = ["## Failure-path sweep", ""]
    rows = view.sweep
    if not rows:
        return out + ["Not run in these results.", ""]
    swept, violations = sum(int(r.runs) for r in rows), sum(int(r.violations) for r in rows)
    seconds = sum(float(r.seconds) for r in rows)
    out += [f"{len(rows)} scenario(s) swept: {swept:,} runs, {violations} violation(s), {model.fmt_seconds(seconds)}.", ""]
    return out + _folded(
        f"per scenario ({len(rows)} rows)",
        table(
            ["scenario", "positions", "runs", "violations", "time"],
            [[r.scenario, r.positions, r.runs, r.violations, model.fmt_seconds(r.seconds)] for r in rows],
        ),
    )
