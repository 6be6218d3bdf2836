"""Explore with every crash case also listed, as the cases were made before they were counted
(:func:`dsh_sim.evidence.coverage.build_case`): what tests compare explore's counts with."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from dsh_sim.drivers.explore import ExploreResult, explore
from dsh_sim.evidence.case_counts import CaseCounter, CaseFacts
from dsh_sim.evidence.coverage import build_case
from dsh_sim.scenario.model import Scenario


def listed_case(kind: str, phase: str, barrier: str, torn: str | None, boundaries: Mapping[str, str], facts: CaseFacts) -> dict[str, Any]:
    as_dict = {"verdicts": dict(facts.verdicts), "known": set(facts.seen), "closed": set(), "applied": set(facts.applied)}
    return build_case("explore", None, barrier, kind, phase, torn, dict(boundaries), {**as_dict, "recovered": True, "violations": []})


def explore_listing_cases(scenario: Scenario, **kw: Any) -> tuple[ExploreResult, list[dict[str, Any]]]:
    cases: list[dict[str, Any]] = []
    count = CaseCounter.count

    def listing(
        self: CaseCounter, kind: str, phase: str, barrier: str, torn: str | None, boundaries: Mapping[str, str], facts: CaseFacts
    ) -> None:
        cases.append(listed_case(kind, phase, barrier, torn, boundaries, facts))
        count(self, kind, phase, barrier, torn, boundaries, facts)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(CaseCounter, "count", listing)
        result = explore(scenario, **kw)
    return result, cases
