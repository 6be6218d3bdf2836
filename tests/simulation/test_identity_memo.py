"""The identity memo answers only for the very objects and the same plain values."""

from __future__ import annotations

from dsh_sim.evidence.oracles.identity_memo import IdentityMemo


def _counting() -> tuple[IdentityMemo[object], list[int]]:
    return IdentityMemo(4), []


def test_every_part_of_the_key_is_seen() -> None:
    memo, calls = _counting()

    def verdict(*objects: object) -> object:
        calls.append(1)
        return len(calls)

    a, b, c = [1], [2], [3]
    first = memo.remember((a, b, c), "x", verdict)
    assert memo.remember((a, b, c), "x", verdict) == first and len(calls) == 1  # the same objects: remembered
    assert memo.remember((a, [2], c), "x", verdict) != first  # an equal object in the middle is another object
    assert memo.remember((a, b, c), "y", verdict) != first  # another plain value
    assert memo.remember((a, c), "x", verdict) != first  # fewer objects, same first and last
    assert memo.remember((), None, lambda: None) is None


def test_a_remembered_none_is_an_answer_and_a_full_memo_empties() -> None:
    memo, calls = _counting()

    def nothing() -> None:
        calls.append(1)

    obj = object()
    memo.remember((obj,), None, nothing)
    memo.remember((obj,), None, nothing)
    assert len(calls) == 1
    held = [[i] for i in range(4)]
    for item in held:
        memo.remember((item,), None, list)
    assert len(memo) == 1  # emptied when it held four, then the fourth remembered
