"""Crash-recovery cases counted as they happen, not kept.

Every crash + recovery becomes a *case* (:func:`dsh_sim.evidence.coverage.build_case`), but
the report only ever needs counts of them: per call boundary and crash column the repair
outcomes, per barrier the outcomes, the verdict confusion matrix and the torn-write classes.
A fuzz run kept every case in a list for its whole budget — about a kilobyte per recovery,
so memory grew with the run's length.  A :class:`CaseTally` keeps exactly those counts: its
size depends on the vocabulary (boundaries, barriers, outcomes), never on how long a run
lasts, and tallies of shards add up to the tally of the whole.

Result documents carry it as ``case_tally``; :meth:`dsh_sim.evidence.document.ResultsDocument.tally`
adds to it the older ``cases`` list, so documents written before still merge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

Table = dict[str, dict[str, dict[str, int]]]
VERDICTS = ("TOOL_NOT_STARTED", "TOOL_OUTCOME_UNKNOWN")


def phase_group(kind: str, phase: str) -> str:
    """The crash column of a case: a kill is one column, power loss one per log phase."""
    return "kill" if kind == "kill" else phase


def _bump(table: Table, row: str, col: str, key: str, n: int = 1) -> None:
    cell = table.setdefault(row, {}).setdefault(col, {})
    cell[key] = cell.get(key, 0) + n


def _add_table(into: Table, other: Mapping[str, Mapping[str, Mapping[str, int]]]) -> None:
    for row, cols in other.items():
        for col, counts in cols.items():
            for key, n in counts.items():
                _bump(into, row, col, key, n)


def _empty_confusion() -> dict[str, dict[str, int]]:
    return {verdict: {"applied": 0, "not applied": 0} for verdict in VERDICTS}


@attrs.define
class CaseTally:
    cases: int = 0
    boundary: Table = attrs.field(factory=dict)  # call boundary -> crash column -> outcome -> calls
    barrier: Table = attrs.field(factory=dict)  # barrier -> crash column -> outcome -> cases
    confusion: dict[str, dict[str, int]] = attrs.field(factory=_empty_confusion)  # verdict -> applied? -> calls
    torn: dict[str, int] = attrs.field(factory=dict)  # torn-write class -> cases

    def add(self, case: Mapping[str, Any]) -> None:
        """Count one case (the dictionary :func:`build_case` makes)."""
        calls = [(call["boundary"], call["outcome"], bool(call["applied"])) for call in case["calls"]]
        self.count(case["kind"], case["phase"], case["barrier"], case.get("torn_class"), calls)

    def count(self, kind: str, phase: str, barrier: str, torn_class: str | None, calls: Iterable[tuple[str, str, bool]]) -> None:
        """Count one case: its crash, and each call in flight as (boundary, outcome, applied)."""
        grouped: dict[tuple[str, str, bool], int] = {}
        for call in calls:
            grouped[call] = grouped.get(call, 0) + 1
        self.count_grouped(kind, phase, barrier, torn_class, [(*call, n) for call, n in grouped.items()])

    def count_grouped(
        self, kind: str, phase: str, barrier: str, torn_class: str | None, groups: Iterable[tuple[str, str, bool, int]]
    ) -> None:
        """Count one case whose calls in flight come as (boundary, outcome, applied, how many)."""
        self.cases += 1
        col = phase_group(kind, phase)
        if torn_class:
            self.torn[torn_class] = self.torn.get(torn_class, 0) + 1
        outcomes: set[str] = set()
        for boundary, outcome, applied, n in groups:
            if n <= 0:
                continue
            outcomes.add(outcome)
            _bump(self.boundary, boundary, col, outcome, n)
            if outcome in self.confusion:
                self.confusion[outcome]["applied" if applied else "not applied"] += n
        for outcome in sorted(outcomes or {"no call"}):
            _bump(self.barrier, barrier, col, outcome)

    def add_all(self, cases: Iterable[Mapping[str, Any]]) -> None:
        for case in cases:
            self.add(case)

    def merge(self, other: CaseTally) -> None:
        self.cases += other.cases
        _add_table(self.boundary, other.boundary)
        _add_table(self.barrier, other.barrier)
        for verdict, counts in other.confusion.items():
            slot = self.confusion.setdefault(verdict, {"applied": 0, "not applied": 0})
            for key, n in counts.items():
                slot[key] = slot.get(key, 0) + n
        for name, n in other.torn.items():
            self.torn[name] = self.torn.get(name, 0) + n

    def to_json(self) -> dict[str, Any]:
        return {"cases": self.cases, "boundary": self.boundary, "barrier": self.barrier, "confusion": self.confusion, "torn": self.torn}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> CaseTally:
        tally = cls()
        tally.merge(
            cls(
                int(obj.get("cases", 0)),
                dict(obj.get("boundary", {})),
                dict(obj.get("barrier", {})),
                {k: dict(v) for k, v in obj.get("confusion", {}).items()},
                dict(obj.get("torn", {})),
            )
        )
        return tally
