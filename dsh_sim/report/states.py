"""Crash states per matrix cell: how many the crash model allows, and how many were checked.

Systematic exploration enumerates, at every recorded crash point, the crash states the
crash model allows (a kill, and each way a power cut can leave the unsynced bytes) and
recovers from each — or from a seeded sample of them above a bound.  The view carries
these counts per matrix cell in ``cell_states`` (``{"boundary"|"barrier": {row: {col:
{"possible": n, "explored": n}}}}``) and the number of sampled recorded points per named
point in ``sampled``.

Every crash state lies in exactly one cell of the *barrier* matrix (one barrier, one
crash column), so the headline total is summed there.  In the *boundary* matrix a state
counts once per distinct boundary among the calls in flight, so that matrix's column
totals can exceed the number of states.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

import attrs

from dsh_sim.evidence.view import CoverageView

StateMatrix = Mapping[str, Mapping[str, Mapping[str, int]]]
Which = Literal["boundary", "barrier"]  # the two crash matrices (a key of ``cell_states``)


@dataclass(frozen=True)
class States:
    """Explored out of possible crash states (one cell, or a sum of cells)."""

    explored: int
    possible: int

    @property
    def sampled(self) -> bool:
        """Fewer states checked than the model allows (sampled above the bound, or cut short)."""
        return self.explored < self.possible

    def label(self) -> str:
        """``412/412 states``, or ``300/1,024 sampled`` when not every state was checked."""
        return f"{self.explored:,}/{self.possible:,} {'sampled' if self.sampled else 'states'}"

    def title(self) -> str:
        if self.sampled:
            return f"{self.explored:,} of the {self.possible:,} crash states the model allows here were checked (sampled)"
        return f"all {self.possible:,} crash states the model allows here were checked"


def summed(cells: Iterable[States | None]) -> States | None:
    """Sum of the cells that have states; ``None`` when none has."""
    present = [c for c in cells if c is not None]
    if not present:
        return None
    return States(sum(c.explored for c in present), sum(c.possible for c in present))


def matrix(view: CoverageView, which: Which) -> StateMatrix:
    """The state counts of one matrix."""
    return view.cell_states.get(which, {}) or {}


def cell(states: StateMatrix, row: str, col: str) -> States | None:
    raw = states.get(row, {}).get(col)
    if not raw or not (raw.get("possible") or raw.get("explored")):
        return None
    return States(int(raw.get("explored", 0)), int(raw.get("possible", 0)))


def row_total(states: StateMatrix, row: str) -> States | None:
    return summed(cell(states, row, c) for c in states.get(row, {}))


def col_total(states: StateMatrix, col: str) -> States | None:
    return summed(cell(states, r, col) for r in states)


def grand_total(states: StateMatrix) -> States | None:
    return summed(row_total(states, r) for r in states)


def cells_of(states: StateMatrix) -> list[States]:
    return [s for r, cols in states.items() for c in cols if (s := cell(states, r, c)) is not None]


@attrs.frozen(kw_only=True)
class Totals:
    """Headline numbers: states explored/possible (barrier matrix: each state once), how many
    barrier cells and named points fell short of possible, how many recorded points were
    sampled, and whether the exploration was exhaustive (something explored, nothing short)."""

    explored: int
    possible: int
    cells: int
    sampled_cells: int
    sampled_points: int
    short_points: int
    exhaustive: bool


def totals(view: CoverageView) -> Totals:
    """The :class:`Totals` of ``view``."""
    total = grand_total(matrix(view, "barrier")) or States(0, 0)
    every = cells_of(matrix(view, "barrier")) + cells_of(matrix(view, "boundary"))
    sampled_points = sum(int(n) for n in view.sampled.values())
    short_points = sum(1 for c in view.points.values() if int(c.explored or 0) < int(c.possible or 0))
    return Totals(
        explored=total.explored,
        possible=total.possible,
        cells=len(cells_of(matrix(view, "barrier"))),
        sampled_cells=sum(1 for s in cells_of(matrix(view, "barrier")) if s.sampled),
        sampled_points=sampled_points,
        short_points=short_points,
        exhaustive=total.possible > 0 and not any(s.sampled for s in every) and not sampled_points and not short_points,
    )


def headline_note(t: Totals) -> str:
    """One line under the headline figure: exhaustive, or where it was sampled."""
    if not t.possible:
        return "no systematic exploration in these results"
    if t.exhaustive:
        return "exhaustive: every crash state the model allows was checked (torn lengths grouped by codec-aware class)"
    short = [f"{t.sampled_cells} of {t.cells} cells"] if t.sampled_cells else []
    short += [f"{t.short_points} named point(s)"] if t.short_points else []
    parts = [" and ".join(short) + " below possible"] if short else []
    parts += [f"sampled at {t.sampled_points:,} recorded point(s)"] if t.sampled_points else []
    return "not exhaustive: " + "; ".join(parts or ["fewer states checked than possible"])
