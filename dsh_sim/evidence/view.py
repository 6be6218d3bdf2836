"""The merged coverage view as a typed value: what :func:`~dsh_sim.evidence.coverage.aggregate`
builds and the report reads.

It was a dictionary the report read by string keys in a dozen modules, so a misspelt key
read as an empty section; now each part has a field and a type, and coverage.json is its
JSON through the one converter of :mod:`dsh_sim.evidence.document` (the bytes are the ones
the dictionary gave).  A view may still be given as JSON (a test's, a tool's):
:func:`as_view` structures it, refusing a key no field names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from dsh_sim.evidence.document import DocumentError, Meta, structure_as
from dsh_sim.evidence.records import (
    KEEP_NULL,
    CampaignRecord,
    Counts,
    Determinism,
    DshAgainst,
    DshExploreRow,
    DshRouteRow,
    Grid,
    KillRow,
    PointCounts,
    ReaderCounts,
    SweepRow,
    Violation,
)


@attrs.frozen(kw_only=True)
class DshAgainstRow(DshAgainst):
    """One run's recoveries read by the DSH reader too: which run (its kind and scenario), then
    its :class:`DshAgainst` counts."""

    source: str
    scenario: str | None = attrs.field(default=None, metadata=KEEP_NULL)


@attrs.frozen(kw_only=True)
class DshSection:
    """What the published DSH was put through (present only when a run had a DSH phase); when the
    phase was skipped, the rows are empty and ``skipped`` says why."""

    explore: tuple[DshExploreRow, ...] = ()
    against: tuple[DshAgainstRow, ...] = ()
    route: tuple[DshRouteRow, ...] = ()
    skipped: str | None = None


def _documents_of(view: CoverageView) -> int:
    return sum(1 for run in view.runs if run != Meta())


@attrs.frozen(kw_only=True)
class CoverageView:
    """Result documents merged: crash cases counted per matrix cell, named points, invariants,
    violations, determinism re-checks, the kill matrix, crash states explored, the runs and
    campaigns they came from, and the DSH section.  The fields are in coverage.json's order
    before it was typed (it is written sorted; the order shows in ``Report.document``)."""

    cases: int = 0
    cases_by_source: Counts = attrs.field(factory=dict)  # replay / fuzz / explore: how the cases add up
    boundary_matrix: Grid = attrs.field(factory=dict)  # call boundary -> crash column -> outcome -> calls
    barrier_matrix: Grid = attrs.field(factory=dict)  # barrier -> crash column -> outcome -> cases
    confusion: dict[str, Counts] = attrs.field(factory=dict)  # verdict -> applied / not applied -> calls
    torn_classes: Counts = attrs.field(factory=dict)
    points: dict[str, PointCounts] = attrs.field(factory=dict)
    checked: Counts = attrs.field(factory=dict)  # invariant -> evaluations
    violations: tuple[Violation, ...] = ()
    runs: tuple[Meta, ...] = ()  # each result document's meta (a campaign's own record is not a run)
    determinism: tuple[Determinism, ...] = ()
    kill_matrix: tuple[KillRow, ...] = ()
    cell_states: dict[str, Grid] = attrs.field(factory=dict)  # explore: "boundary"|"barrier" -> possible/explored states
    sampled: Counts = attrs.field(factory=dict)  # explore: points where states were sampled above the bound
    result_documents: int = attrs.field(default=attrs.Factory(_documents_of, takes_self=True))  # all but the campaigns' own
    campaigns: tuple[CampaignRecord, ...] = ()
    readers: tuple[ReaderCounts, ...] = ()
    sweep: tuple[SweepRow, ...] = ()
    dsh: DshSection | None = None


@attrs.frozen(kw_only=True)
class Requirement:
    """One "sometimes" cell (:data:`~dsh_sim.evidence.coverage.REQUIREMENTS`) and how often it was hit."""

    kind: str
    row: str
    col: str
    hits: int
    met: bool


VIEW_KEYS = frozenset(f.name for f in attrs.fields(CoverageView))


def as_view(view: CoverageView | Mapping[str, Any]) -> CoverageView:
    """``view`` typed: a view given as JSON is structured (a key no field names is refused, not
    dropped; a missing one is empty)."""
    if isinstance(view, CoverageView):
        return view
    unknown = sorted(set(view) - VIEW_KEYS)
    if unknown:
        raise DocumentError(f"a coverage view has no key {', '.join(unknown)}")
    return structure_as(dict(view), CoverageView)


__all__ = ["VIEW_KEYS", "CoverageView", "DshAgainstRow", "DshSection", "Requirement", "as_view"]
