"""coverage.html: one self-contained page (inline CSS and SVG, no script, no network).

A maintainer opens it from a CI artifact, often offline, so everything it needs is in the
file.  The page leads with the alarms (violations, unmet requirements, unsafe verdicts) and the
verdict confusion matrix — whether recovery was ever unsound — then the two crash matrices
— how widely crashes were explored — then the supporting tables.  Stable element ids (``coverage-matrix``,
``barrier-matrix``, ``confusion-matrix``, ``requirements``, ``kill-matrix``) let tests and
scripts find the parts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from dsh_sim.engine.vocabulary import BARRIERS, BOUNDARIES, OUTCOMES
from dsh_sim.evidence.view import CoverageView, Requirement
from dsh_sim.report import dsh as dsh_report
from dsh_sim.report import model, sections, states, svg
from dsh_sim.report.headline import Summary, subtitle, summary
from dsh_sim.report.headline import headline as headline_items
from dsh_sim.report.htmlkit import (
    OUTCOME_CLASS,
    attrs,
    chips,
    esc,
    section,
    table,
    td,
    tr,
)

NAV = (
    ("headline", "Headline"),
    ("campaign", "Campaign"),
    ("confusion", "Verdicts vs truth"),
    ("coverage", "Coverage matrix"),
    ("barriers", "Barrier matrix"),
    ("requirements", "Requirements"),
    ("points", "Named points"),
    ("torn", "Torn classes"),
    ("invariants", "Invariants"),
    ("violations", "Violations"),
    ("determinism", "Determinism"),
    ("readers", "Reader differential"),
    ("sweep", "Failure-path sweep"),
    ("kills", "Kill matrix"),
    ("dsh", "DSH"),
    ("runs", "Runs"),
)


def _css() -> str:
    return resources.files("dsh_sim.report").joinpath("style.css").read_text(encoding="utf-8")


def headline(view: CoverageView, numbers: Summary) -> str:
    """The headline cards; ``numbers`` is :func:`~dsh_sim.report.headline.summary` of the view."""
    cards = []
    for item in headline_items(view, numbers):
        cls = (
            "card alarm"
            if item.alarm
            else "card warn"
            if item.warn
            else ("card" if item.key in ("violations", "unmet", "unsafe", "mutants", "determinism") else "card neutral")
        )
        note = f'<div class="note">{esc(item.note)}</div>' if item.note else ""
        cards.append(
            f'<div{attrs(class_=cls, id="headline-" + item.key)}><div class="value">{esc(item.value)}</div><div class="label">{esc(item.label)}</div>{note}</div>'
        )
    return f'<div class="cards" id="sec-headline">{"".join(cards)}</div>'


def matrix_cell(counts: Mapping[str, int], st: states.States | None, cls: str = "cell", **extra: Any) -> str:
    """One matrix cell: a chip per recovery outcome, then "explored/possible" crash states.

    A cell where fewer states were checked than the crash model allows is marked
    ``sampled`` (amber); a cell with neither outcomes nor states shows a dot.
    """
    if not counts and st is None:
        return td("·", cls=f"{cls} empty", **extra)
    body = chips(counts)
    if st is not None:
        kind = "states sampled" if st.sampled else "states"
        body += f"<span{attrs(class_=kind, title=st.title())}>{esc(st.label())}</span>"
        extra.update(data_explored=st.explored, data_possible=st.possible)
    return td(raw=body, cls=f"{cls} sampled" if st is not None and st.sampled else cls, **extra)


def matrix(
    view: CoverageView, which: states.Which, rows: list[str], cols: list[str], id_: str, first: str, required: tuple[str, ...]
) -> str:
    """A crash matrix: one row per boundary/barrier, one column per crash kind or power phase.

    Each cell holds one chip per recovery outcome with its count, and the crash states
    explored out of possible when exploration counted them; a required row with no case
    at all is marked as a gap, since its requirement cannot be met.
    """
    grid = model.matrix_grid(view, which, rows, cols)
    body = []
    for row in grid.rows:
        cells = [matrix_cell(counts, st, data_row=row.name, data_col=c) for (counts, st), c in zip(row.cells, cols)]
        cells.append(matrix_cell(*row.total, "cell total"))
        body.append(
            tr(
                f'<th class="rowhead">{esc(row.name)}</th>' + "".join(cells),
                cls="gap" if not row.total[0] and row.name in required else None,
            )
        )
    foot = "".join(matrix_cell(*c) for c in grid.col_totals) + matrix_cell(*grid.total)
    body.append(tr("<th>all</th>" + foot, cls="total"))
    return table((), body, id_=id_, cls="matrix", head=_matrix_head(first, cols))


def _matrix_head(first: str, cols: list[str]) -> str:
    """Two header rows: crash kind ("power"), then its phases, so twelve columns stay narrow."""
    groups: list[tuple[str | None, list[str]]] = []
    for c in cols:
        prefix = c.split(":", 1)[0] if ":" in c else None
        if groups and prefix is not None and groups[-1][0] == prefix:
            groups[-1][1].append(c)
        else:
            groups.append((prefix, [c]))
    if all(prefix is None for prefix, _ in groups):
        return "<tr>" + f"<th>{esc(first)}</th>" + "".join(f"<th>{esc(c)}</th>" for c in cols) + "<th>all</th></tr>"
    top, sub = [f'<th rowspan="2">{esc(first)}</th>'], []
    for prefix, members in groups:
        if prefix is None:
            top.append(f'<th rowspan="2">{esc(members[0])}</th>')
            continue
        label = "power loss (what became of the unsynced log)" if prefix == "power" else prefix
        top.append(f"<th{attrs(colspan=len(members), class_='group')}>{esc(label)}</th>")
        sub += [f"<th{attrs(class_='phase', title=c)}>{esc(c.split(':', 1)[1])}</th>" for c in members]
    top.append('<th rowspan="2">all</th>')
    return "<tr>" + "".join(top) + "</tr><tr>" + "".join(sub) + "</tr>"


def legend(outcomes: tuple[str, ...], with_states: bool) -> str:
    items = "".join(
        f'<span class="item"><span class="chip {OUTCOME_CLASS.get(o, "o-lost")}">{esc(model.SHORT.get(o, o))}</span>{esc(o)}</span>'
        for o in outcomes
    )
    if with_states:
        items += '<span class="item"><span class="states">e/p states</span>crash states explored / possible</span>'
        items += '<span class="item"><span class="states sampled">e/p sampled</span>fewer checked than the crash model allows</span>'
    return f'<p class="legend muted">{items}</p>'


def confusion(view: CoverageView) -> str:
    """Repair's verdicts against the ledger; the unsafe cell is the one that must stay 0."""
    conf = view.confusion
    ns = conf.get("TOOL_NOT_STARTED", {})
    unk = conf.get("TOOL_OUTCOME_UNKNOWN", {})
    unsafe = model.unsafe_count(view)

    def box(n: int, caption: str, cls: str, **extra: Any) -> str:
        return td(raw=f'<span class="n">{n}</span>{esc(caption)}', cls=cls, **extra)

    route = dsh_report.route_confusion(view)  # the DSH route's repair, scored the same way

    def dsh_cells(verdict: str) -> str:
        if route is None:
            return ""
        counts = route.get(verdict, {})
        applied, missed = int(counts.get("applied", 0)), int(counts.get("not applied", 0))
        unsafe_dsh = verdict == "TOOL_NOT_STARTED" and applied > 0
        return box(applied, "DSH route", "unsafe" if unsafe_dsh else "correct", data_cell=f"DSH:{verdict}×applied") + box(
            missed, "DSH route", "correct" if verdict == "TOOL_NOT_STARTED" else "cost", data_cell=f"DSH:{verdict}×not applied"
        )

    rows = [
        tr(
            "<th>TOOL_NOT_STARTED</th>"
            + box(
                unsafe,
                "UNSAFE: said not started, but the effect happened" if unsafe else 'safe: never "not started" for an applied effect',
                "unsafe" if unsafe else "ok",
                id="unsafe-cell",
                data_cell="TOOL_NOT_STARTED×applied",
            )
            + box(int(ns.get("not applied", 0)), "correct", "correct", data_cell="TOOL_NOT_STARTED×not applied")
            + dsh_cells("TOOL_NOT_STARTED")
        ),
        tr(
            "<th>TOOL_OUTCOME_UNKNOWN</th>"
            + box(
                int(unk.get("applied", 0)), "correct: honest about an applied effect", "correct", data_cell="TOOL_OUTCOME_UNKNOWN×applied"
            )
            + box(
                int(unk.get("not applied", 0)),
                "cost: unknown though nothing happened",
                "cost",
                data_cell="TOOL_OUTCOME_UNKNOWN×not applied",
            )
            + dsh_cells("TOOL_OUTCOME_UNKNOWN")
        ),
    ]
    header = ["verdict \\ ground truth", "applied (effect happened)", "not applied"]
    if route is not None:
        header += ["DSH route: applied", "DSH route: not applied"]
    body = table(header, rows, id_="confusion-matrix", cls="confusion")
    why = "After each crash + repair, each verdict is scored against the world's ledger. TOOL_NOT_STARTED × applied must be 0; TOOL_OUTCOME_UNKNOWN × not applied is the price of caution."
    return section("confusion", "Verdicts vs ground truth (confusion matrix)", why, body)


def render_html(view: CoverageView, status: Sequence[Requirement], schema: int, numbers: Summary | None = None) -> str:
    """The whole page; ``numbers`` is the view's :func:`~dsh_sim.report.headline.summary`
    (computed when not given)."""
    cols = model.matrix_columns(view)
    with_states = bool(states.grand_total(states.matrix(view, "boundary")) or states.grand_total(states.matrix(view, "barrier")))
    b_rows, r_rows = model.boundary_rows(view), model.barrier_rows(view)
    bm, rm = view.boundary_matrix, view.barrier_matrix
    # "no call" (states with no call in flight) never has call outcomes: not a chart row.
    boundary_chart = svg.stacked_chart(
        [(r, model.row_total(bm, r)) for r in b_rows if r != "no call"],
        OUTCOMES,
        "recovery outcomes per side-effect boundary",
        required=BOUNDARIES,
    )
    barrier_chart = svg.stacked_chart(
        [(r, model.row_total(rm, r)) for r in r_rows],
        model.CELL_OUTCOMES,
        "recovery outcomes per barrier",
        label_width=130,
        required=BARRIERS,
    )
    coverage = section(
        "coverage",
        "Coverage matrix: side-effect boundary × crash kind/phase",
        "Where each tool call stood among the four moments (1 assistant message, 2 durable tool/call, 3 effect, 4 durable result) when the crash struck, and what recovery made of it. Counts are tool calls; the second line counts crash states (explored/possible), once per boundary among the calls in flight, so a column total can exceed the number of states.",
        legend(OUTCOMES, with_states)
        + matrix(view, "boundary", b_rows, cols, "coverage-matrix", "boundary", BOUNDARIES)
        + f'<div class="charts">{boundary_chart}</div>',
    )
    barriers = section(
        "barriers",
        "Barrier matrix: durability barrier × crash kind/phase",
        'Which durability barrier the crash interrupted. Counts are crashes, once per distinct outcome among their calls ("none" = no call in flight); the second line counts crash states explored out of those the crash model allows, each state in exactly one cell.',
        legend(model.CELL_OUTCOMES, with_states)
        + matrix(view, "barrier", r_rows, cols, "barrier-matrix", "barrier", BARRIERS)
        + f'<div class="charts">{barrier_chart}</div>',
    )
    nav = "".join(f'<a href="#sec-{k}">{esc(label)}</a>' for k, label in NAV if k != "dsh" or view.dsh is not None)
    numbers = summary(view, status) if numbers is None else numbers
    title = f"{subtitle(view, numbers)} · schema {schema}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>dsh-sim crash coverage</title>",
        f"<style>{_css()}</style></head><body>",
        f'<header class="top"><h1>dsh-sim crash coverage</h1><p>{esc(title)}</p></header>',
        f'<nav class="toc">{nav}</nav><main>',
        headline(view, numbers),
        sections.campaign(view),
        confusion(view),
        coverage,
        barriers,
        sections.requirements(status),
        sections.points(view),
        sections.torn(view),
        sections.invariants(view),
        sections.violations(view),
        sections.determinism(view),
        sections.readers(view),
        sections.sweep(view),
        sections.kill_matrix(view),
        dsh_report.html(view),
        sections.run_table(view),
        f"</main><footer>Generated by dsh_sim.report (schema {schema}); self-contained, no network resources.</footer>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"
