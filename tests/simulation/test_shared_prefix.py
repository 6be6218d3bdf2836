"""Walks that start where a log parts from the last one walked (shared_prefix) find exactly what
a walk from the start finds, whatever the sequences asked in turn share."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_sim.evidence.oracles.shared_prefix import Findings, Prefixed, shared_length


class Item:
    """An immutable value with identity (two equal values may be different objects)."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Item) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)


POOL = [Item(v % 5) for v in range(12)]  # some equal values, all distinct objects
logs = st.lists(st.lists(st.sampled_from(POOL), max_size=14).map(tuple), min_size=1, max_size=8)


def find(item: Item) -> int | None:
    return item.value * 10 if item.value % 2 == 0 else None


@settings(max_examples=300, deadline=None)
@given(logs)
def test_findings_are_a_whole_walks(sequence) -> None:  # type: ignore[no-untyped-def]
    walk = Findings(find)
    for items in sequence:
        assert walk.of(items) == [(i, find(x)) for i, x in enumerate(items) if find(x) is not None]
        for end in range(len(items) + 1):
            assert walk.values_before(items, end) == tuple(find(x) for x in items[:end] if find(x) is not None)


@settings(max_examples=300, deadline=None)
@given(logs, st.lists(st.integers(0, 14), min_size=8, max_size=8))
def test_a_prefix_judgement_is_the_judgement_of_the_prefix(sequence, cuts) -> None:  # type: ignore[no-untyped-def]
    judged = Prefixed(lambda items: [x.value for x in items])
    for items, cut in zip(sequence, cuts):
        cut = min(cut, len(items))
        assert judged.of(items, cut) == [x.value for x in items[:cut]]


def test_shared_length_is_by_identity_not_equality() -> None:
    a, b, c = Item(1), Item(1), Item(2)
    assert shared_length((a, a, c), (a, b, a)) == 1  # (an equal other object is another object)
    assert shared_length((a,), ()) == 0
    long = tuple(Item(i % 7) for i in range(300))
    for at in (0, 1, 150, 299):
        other = long[:at] + (Item(at % 7),) + long[at + 1 :]
        assert shared_length(long, other) == at
    assert shared_length(long, long[:200]) == 200 and shared_length(list(long), list(long)) == 300


def test_an_equal_but_other_object_is_walked_again() -> None:
    """(the bug a shared-prefix walk must not have: trusting an object it did not see)"""
    seen: list[int] = []
    walk = Findings(lambda item: seen.append(item.value))
    walk.of((Item(2), Item(3)))
    walk.of((Item(2), Item(3)))
    assert seen == [2, 3, 2, 3]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80), st.binary(max_size=80), st.booleans(), st.integers(0, 80))
def test_a_prefix_compared_from_its_tail_first_is_startswith(data, other, cut, at) -> None:  # type: ignore[no-untyped-def]
    from dsh_sim.evidence.oracles.log_prefixes import starts_with

    prefix = data[:at] if cut else other
    assert starts_with(data, prefix) == data.startswith(prefix)


def test_remembered_pairs_answer_only_for_the_very_tuples() -> None:
    a, b = Item(1), Item(2)
    first, known = (a, b), (a, a)
    assert shared_length(first, known) == 1
    assert shared_length((a, b), known) == 1 and shared_length(first, (a, b)) == 2 and shared_length(first, (b,)) == 0
