"""What the report shows, derived once from a coverage view so Markdown and HTML agree.

The renderers only lay out what this module computes: row and column order of the
matrices with their totals, and the rows of the named-point, invariant and torn-class tables
(the headline is :mod:`.headline`'s, the runs and campaigns :mod:`.runs`').  Keeping the
arithmetic here means a number in ``coverage.md`` can never differ from the same number in
``coverage.html``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import attrs

from dsh_sim.engine.points import POINTS
from dsh_sim.engine.vocabulary import BARRIERS, BOUNDARIES, OUTCOMES, PHASES, TORN_CLASSES
from dsh_sim.evidence.coverage import REQUIREMENTS
from dsh_sim.evidence.invariants import INVARIANTS
from dsh_sim.evidence.results import DeterminismCounts, determinism_counts, determinism_text
from dsh_sim.evidence.view import CoverageView
from dsh_sim.report import states
from dsh_sim.report.states import Which

Matrix = Mapping[str, Mapping[str, Mapping[str, int]]]
# One matrix cell as the renderers show it: outcome counts, then crash states (if counted).
Cell = tuple[dict[str, int], "states.States | None"]

# Outcomes in reading order; "no call" appears only in the barrier matrix (a crash with no
# tool call in flight), and is listed last so the verdict columns line up in both matrices.
CELL_OUTCOMES: tuple[str, ...] = OUTCOMES + ("no call",)
SHORT: dict[str, str] = {
    "TOOL_NOT_STARTED": "NS",
    "TOOL_OUTCOME_UNKNOWN": "UNK",
    "closed": "closed",
    "lost": "lost",
    "not emitted": "n/e",
    "no call": "none",
}
BARRIER_ROWS: tuple[str, ...] = BARRIERS + ("explicit flush", "outside barriers")
TORN_REQUIRED: tuple[str, ...] = tuple(row for kind, row, _ in REQUIREMENTS if kind == "torn")
UNSAFE = ("TOOL_NOT_STARTED", "applied")


def ordered(known: Iterable[str], present: Iterable[str]) -> list[str]:
    """Known names in their canonical order, then any unexpected name, sorted."""
    known = list(known)
    extra = sorted(set(present) - set(known))
    return known + extra


def columns(*matrices: Matrix) -> list[str]:
    """Crash columns present in any of the matrices (shared so both tables line up).

    Kill first, then the power phases from "nothing of the log survived" to "everything
    did" (coverage.PHASES, the order a maintainer reads a row in); unknown phases follow.
    """
    present = {col for m in matrices for cols in m.values() for col in cols}
    present.add("kill")
    return [c for c in ordered(PHASES, present) if c in present]


def outcomes(view: CoverageView, which: Which) -> Matrix:
    """The recovery outcomes of one crash matrix."""
    return view.boundary_matrix if which == "boundary" else view.barrier_matrix


def matrix_columns(view: CoverageView) -> list[str]:
    """Columns shared by both matrices: any crash column with outcomes or crash states."""
    both: tuple[Which, Which] = ("boundary", "barrier")
    return columns(*(outcomes(view, k) for k in both), *(states.matrix(view, k) for k in both))


def _rows(view: CoverageView, which: Which, always: Iterable[str], optional: Iterable[str] = ()) -> list[str]:
    """Rows with outcomes or crash states: ``always`` in order (even empty), then the rest."""
    present = set(outcomes(view, which)) | set(states.matrix(view, which))
    fixed = list(always)
    return [r for r in ordered(fixed + list(optional), present) if r in fixed or r in present]


def boundary_rows(view: CoverageView) -> list[str]:
    # Every boundary is listed even when empty: an empty row is exactly what must be seen.
    # A crash state with no call in flight has no boundary; exploration files it under
    # "no call", listed after the boundaries when present.
    return _rows(view, "boundary", BOUNDARIES, ("no call",))


def barrier_rows(view: CoverageView) -> list[str]:
    return _rows(view, "barrier", BARRIER_ROWS)


def ordered_counts(raw: Mapping[str, int]) -> dict[str, int]:
    """Outcome counts in reading order, zero counts dropped."""
    return {o: int(raw[o]) for o in ordered(CELL_OUTCOMES, raw) if raw.get(o)}


def summed(cells: Iterable[Mapping[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for counts in cells:
        for outcome, n in counts.items():
            out[outcome] = out.get(outcome, 0) + n
    return ordered_counts(out)


def cell(matrix: Matrix, row: str, col: str) -> dict[str, int]:
    return ordered_counts(matrix.get(row, {}).get(col, {}))


def row_total(matrix: Matrix, row: str) -> dict[str, int]:
    return summed(matrix.get(row, {}).values())


def col_total(matrix: Matrix, col: str) -> dict[str, int]:
    return summed(cols.get(col, {}) for cols in matrix.values())


@dataclass(frozen=True)
class GridRow:
    """One laid-out matrix row: its name, a cell per column, and the row total."""

    name: str
    cells: list[Cell]
    total: Cell


@dataclass(frozen=True)
class Grid:
    """A crash matrix with its totals, computed once for both renderers."""

    rows: list[GridRow]
    col_totals: list[Cell]  # over every row of the matrix, listed or not
    total: Cell  # over the listed rows


def matrix_grid(view: CoverageView, which: Which, rows: list[str], cols: list[str]) -> Grid:
    """Every cell, row total, column total and the grand total of one crash matrix."""
    data, sdata = outcomes(view, which), states.matrix(view, which)
    grid_rows = [
        GridRow(r, [(cell(data, r, c), states.cell(sdata, r, c)) for c in cols], (row_total(data, r), states.row_total(sdata, r)))
        for r in rows
    ]
    col_totals: list[Cell] = [(col_total(data, c), states.col_total(sdata, c)) for c in cols]
    total: Cell = (summed(row.total[0] for row in grid_rows), states.summed(row.total[1] for row in grid_rows))
    return Grid(grid_rows, col_totals, total)


def unsafe_count(view: CoverageView) -> int:
    return int(view.confusion.get(UNSAFE[0], {}).get(UNSAFE[1], 0))


@attrs.frozen(kw_only=True)
class PointRow:
    """One named point as the report lists it: where it is, what happens there, and its counts."""

    name: str
    layer: str
    doc: str
    possible: int
    explored: int
    hits: int
    sampled: int


def point_rows(view: CoverageView) -> list[PointRow]:
    """Every declared named point (and any undeclared one the view mentions) with its counts.

    Declared points are all listed, so a point nobody explored or hit shows as a gap
    instead of silently missing from the report.
    """
    rows = []
    for name in ordered(POINTS, set(view.points) | set(view.sampled)):
        counts = view.points.get(name)
        spec = POINTS.get(name)
        rows.append(
            PointRow(
                name=name,
                layer=spec.layer if spec else "?",
                doc=spec.doc if spec else "undeclared point",
                possible=int(counts.possible or 0) if counts else 0,
                explored=int(counts.explored or 0) if counts else 0,
                hits=int(counts.hits or 0) if counts else 0,
                sampled=int(view.sampled.get(name, 0)),
            )
        )
    return rows


DSH_INVARIANTS = ("dsh_agrees", "route_agrees")  # judged only by a DSH phase (DSH's reader, DSH's route)


def dsh_not_run(view: CoverageView) -> str | None:
    """Why the DSH invariants judged nothing here (None: a DSH phase ran)."""
    if view.dsh is None:
        return "no DSH phase in these results"
    if view.dsh.skipped:
        return f"DSH phase skipped: {view.dsh.skipped}"
    return None


@attrs.frozen(kw_only=True)
class InvariantRow:
    """One invariant: checks and violations; ``not_run`` says why an invariant only a phase that
    did not run can judge has no checks (0 checks, 0 violations is not a pass)."""

    name: str
    description: str
    checks: int
    violations: int
    not_run: str | None


def invariant_rows(view: CoverageView) -> list[InvariantRow]:
    """One row per invariant, the declared ones in their order, then any other one named."""
    failed: dict[str, int] = {}
    for v in view.violations:
        failed[v.invariant] = failed.get(v.invariant, 0) + 1
    names = ordered(INVARIANTS, set(view.checked) | set(failed))
    absent = dsh_not_run(view)
    rows = []
    for n in names:
        checks, violations = int(view.checked.get(n, 0)), failed.get(n, 0)
        not_run = absent if n in DSH_INVARIANTS and not checks and not violations else None
        rows.append(InvariantRow(name=n, description=INVARIANTS.get(n, ""), checks=checks, violations=violations, not_run=not_run))
    return rows


def torn_rows(view: CoverageView) -> list[tuple[str, int, bool]]:
    """(class, count, required) for every known class in codec order, then unknown ones."""
    torn = view.torn_classes
    return [(c, int(torn.get(c, 0)), c in TORN_REQUIRED) for c in ordered(TORN_CLASSES, torn)]


def fmt_value(value: Any) -> str:
    """Render any metadata value compactly and deterministically."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if value else "0"
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt_value(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return str(value)


def fmt_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{int(minutes)} min {secs:.0f} s"
    hours, minutes = divmod(minutes, 60)
    return f"{int(hours)} h {int(minutes)} min"


def determinism(view: CoverageView) -> DeterminismCounts:
    return determinism_counts(view.determinism)


def determinism_words(view: CoverageView) -> str:
    """The same words as the run's summary line (campaign/summary.py)."""
    return determinism_text(determinism(view))
