"""Explore counts its crash cases without listing their calls: the counts are exactly what the
listed cases counted (:func:`build_case` + :meth:`CaseTally.add`), on generated cases and on a
real exploration."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_sim.engine.vocabulary import BOUNDARIES
from dsh_sim.evidence.case_counts import CaseCounter, CaseFacts, group_by_boundary, outcomes
from dsh_sim.evidence.tally import CaseTally
from dsh_sim.scenario.files import load
from tests.support.case_listing import explore_listing_cases, listed_case
from tests.support.paths import ROOT

CALLS = [f"c{i}" for i in range(8)]
VERDICTS = ("TOOL_NOT_STARTED", "TOOL_OUTCOME_UNKNOWN")
subsets = st.frozensets(st.sampled_from(CALLS))


@settings(max_examples=400, deadline=None)
@given(
    boundaries=st.dictionaries(st.sampled_from(CALLS), st.sampled_from(BOUNDARIES)),
    verdicts=st.dictionaries(st.sampled_from(CALLS), st.sampled_from(VERDICTS)),
    seen=subsets,
    applied=subsets,
    kind=st.sampled_from(["kill", "power"]),
    torn=st.sampled_from([None, "checksum"]),
)
def test_counted_cases_are_the_listed_cases_counted(boundaries, verdicts, seen, applied, kind, torn) -> None:  # type: ignore[no-untyped-def]
    facts = CaseFacts(verdicts, seen, applied)
    listed, counted = CaseTally(), CaseTally()
    listed.add(listed_case(kind, "power:torn", "explicit flush", torn, boundaries, facts))
    counted.count_grouped(kind, "power:torn", "explicit flush", torn, outcomes(group_by_boundary(boundaries), facts))
    assert counted.to_json() == listed.to_json()


def test_a_wrong_outcome_rule_is_caught() -> None:
    """The comparison above fails when the counting decides one outcome differently (a call
    "before 1" that repair judged counted as not emitted)."""
    facts = CaseFacts({"c1": "TOOL_NOT_STARTED"}, frozenset(), frozenset())
    listed, counted = CaseTally(), CaseTally()
    listed.add(listed_case("kill", "kill", "explicit flush", None, {"c1": "before 1"}, facts))
    counted.count_grouped("kill", "kill", "explicit flush", None, [("before 1", "not emitted", False, 1)])
    assert counted.to_json() != listed.to_json()


def test_explore_counts_what_its_listed_cases_count() -> None:
    result, cases = explore_listing_cases(load(os.path.join(ROOT, "scenarios", "starter", "idempotent-retry-converges.json")))
    assert len(cases) == len(result.states) > 50
    listed = CaseTally()
    listed.add_all(cases)
    assert result.tally.to_json() == listed.to_json()
    assert result.tally.boundary  # (calls were in flight: the comparison compared something)


def test_the_grouping_is_remembered_by_the_mapping_itself() -> None:
    counter = CaseCounter(CaseTally())
    boundaries = {"a": "1→2", "b": "after 4"}
    facts = CaseFacts({}, frozenset({"a", "b"}), frozenset({"b"}))
    counter.count("kill", "kill", "explicit flush", None, boundaries, facts)
    boundaries["c"] = "2→3"  # (never done by explore: a new point makes a new mapping) — a copy is a new key
    counter.count("kill", "kill", "explicit flush", None, dict(boundaries), facts)
    assert counter.tally.boundary["2→3"]["kill"] == {"lost": 1}
