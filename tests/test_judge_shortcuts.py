"""Shortcuts and memos of the judges (explore judges thousands of recoveries): each answer
follows every part of what it depends on, and a shortcut keeps refusing what it refused."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from dsh_sim.evidence.oracles.event_records import of_kinds
from runtime.session.events import Event


def _kinds_reference(events, kinds):
    return [e for e in events if (e["type"] if type(e) is dict else e.type) in kinds]


def test_of_kinds_keeps_the_events_of_those_kinds_in_order() -> None:
    records = [{"type": t, "seq": i} for i, t in enumerate(["a", "b", "a", "c", "b"])]
    assert of_kinds(records, frozenset({"a", "c"})) == _kinds_reference(records, {"a", "c"})
    events = [Event(t, i, 0, {}) for i, t in enumerate("abca")]
    assert of_kinds(events, frozenset({"a"})) == _kinds_reference(events, {"a"})
    mixed = [records[0], SimpleNamespace(type="a"), {"type": "b"}]  # records and events in one log: the plain walk
    assert of_kinds(mixed, frozenset({"a"})) == [mixed[0], mixed[1]]
    assert of_kinds([{"type": ["odd"]}, {"type": "a"}], frozenset({"a"})) == [{"type": "a"}]  # (an unhashable type)
    assert of_kinds((), frozenset({"a"})) == ()


def test_the_checker_still_refuses_an_undeclared_point() -> None:
    """Its shortcut past the simulator's own points keeps refusing a name nobody declared."""
    from dsh_sim.evidence.checker import Checker

    checker = Checker.__new__(Checker)
    with pytest.raises(KeyError, match="undeclared named point"):
        checker.on_point(SimpleNamespace(), "no.such.point", {})
