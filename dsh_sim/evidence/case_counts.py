"""Explore's crash cases, counted without listing their calls.

A case places every tool call known at the crash instant (:func:`coverage.build_case`): in a
long session that is every call of every earlier prompt, and explore makes one case per crash
state — listing them made the work and the memory of a session's cases grow with the square of
its length.  Here the calls of a crash point are grouped once by their boundary, and a case is
counted with set operations on those groups: the same counts :meth:`CaseTally.add` makes of the
listed case (a test compares them on generated cases), at a cost that does not walk the calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from dsh_sim.evidence.tally import CaseTally


@attrs.frozen
class CaseFacts:
    """What one recovery established about the calls (:func:`coverage.recovery_facts`), as
    sets: repair's verdicts, the calls the recovered log knows (a tool-call block or a result
    of their own), the calls with an applied effect in the world."""

    verdicts: Mapping[str, str]
    seen: frozenset[str]
    applied: frozenset[str]

    @classmethod
    def of(cls, facts: Mapping[str, Any], interned: dict[frozenset[str], frozenset[str]] | None = None) -> CaseFacts:
        """(``interned``: equal sets of earlier facts, shared — explore keeps the facts of every
        distinct recovery, and a long session's are large sets, mostly equal to an earlier one's.)"""
        seen = frozenset(facts["known"]) | frozenset(facts["closed"])
        applied = frozenset(facts["applied"])
        if interned is not None:
            seen, applied = interned.setdefault(seen, seen), interned.setdefault(applied, applied)
        return cls(dict(facts["verdicts"]), seen, applied)


Group = tuple[str, str, bool, int]  # (boundary, outcome, applied, calls)


class CaseCounter:
    """Counts explore's cases into ``tally``; the grouping of a point's calls is remembered by
    the boundaries mapping itself (consecutive points share it while no call moves)."""

    def __init__(self, tally: CaseTally) -> None:
        self.tally = tally
        self._groups: dict[int, tuple[Mapping[str, str], list[tuple[str, frozenset[str]]]]] = {}

    def count(self, kind: str, phase: str, barrier: str, torn: str | None, boundaries: Mapping[str, str], facts: CaseFacts) -> None:
        self.tally.count_grouped(kind, phase, barrier, torn, outcomes(self._grouped(boundaries), facts))

    def _grouped(self, boundaries: Mapping[str, str]) -> list[tuple[str, frozenset[str]]]:
        known = self._groups.get(id(boundaries))
        if known is None or known[0] is not boundaries:
            if len(self._groups) >= 4096:
                self._groups.clear()
            known = self._groups[id(boundaries)] = (boundaries, group_by_boundary(boundaries))  # (holding it keeps its id)
        return known[1]


def group_by_boundary(boundaries: Mapping[str, str]) -> list[tuple[str, frozenset[str]]]:
    """The call ids at each boundary, boundaries in sorted order."""
    by: dict[str, set[str]] = {}
    for call_id, boundary in boundaries.items():
        by.setdefault(boundary, set()).add(call_id)
    return [(boundary, frozenset(by[boundary])) for boundary in sorted(by)]


def outcomes(groups: list[tuple[str, frozenset[str]]], facts: CaseFacts) -> list[Group]:
    """Each call's outcome as :func:`coverage.build_case` decides it — repair's verdict, else
    "not emitted" before moment 1, else "closed" when the recovered log knows the call, else
    "lost" — counted per (boundary, outcome, applied)."""
    out: list[Group] = []
    verdicts = facts.verdicts
    for boundary, ids in groups:
        judged = ids.intersection(verdicts) if verdicts else frozenset()
        counted: dict[tuple[str, bool], int] = {}
        for call_id in sorted(judged):
            key = (verdicts[call_id], call_id in facts.applied)
            counted[key] = counted.get(key, 0) + 1
        out.extend((boundary, outcome, applied, n) for (outcome, applied), n in counted.items())
        rest = ids - judged if judged else ids
        if boundary == "before 1":
            out.extend(_split(boundary, "not emitted", rest, facts.applied))
        else:
            closed = rest & facts.seen
            out.extend(_split(boundary, "closed", closed, facts.applied))
            out.extend(_split(boundary, "lost", rest - closed, facts.applied))
    return out


def _split(boundary: str, outcome: str, ids: frozenset[str], applied: frozenset[str]) -> list[Group]:
    if not ids:
        return []
    n = len(ids & applied)
    return [(boundary, outcome, True, n), (boundary, outcome, False, len(ids) - n)]
