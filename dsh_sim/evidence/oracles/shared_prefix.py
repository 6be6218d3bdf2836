"""Walks over a recovered log that start where it parts from the last log walked.

Explore judges thousands of recoveries of one growing session, and each recovered log is
mostly the very events of the previous one: the decoders' memos hand out the same event (and
record) objects for the same bytes.  A judge that walks every event at every recovery makes
exploration quadratic in the session's length.  Here a walk remembers, for the last sequence
it saw, what it found at each position; the next sequence is compared with it object by
object in one C-level pass, and only the items from the first one that is not the very same
object on are walked in Python.  Findings are functions of one item each (items are never
changed in place), so the findings of the shared items are the ones found before.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

T = TypeVar("T")
_POSITION = operator.itemgetter(0)


def shared_length(items: Sequence[Any], known: Sequence[Any]) -> int:
    """How many leading items of ``items`` are the very objects of ``known`` (one C-level pass)."""
    return next(itertools.compress(itertools.count(), map(operator.is_not, items, known)), min(len(items), len(known)))


class Findings(Generic[T]):
    """``of(items)``: ``find(item)`` for every item where it is not ``None``, in order, with
    the item's position — walked in Python only past the part shared with the last ``items``."""

    def __init__(self, find: Callable[[Any], T | None]) -> None:
        self._find = find
        self._items: Sequence[Any] = ()
        self._found: list[tuple[int, T]] = []

    def of(self, items: Sequence[Any]) -> list[tuple[int, T]]:
        shared = shared_length(items, self._items)
        found = self._found[: bisect.bisect_left(self._found, shared, key=_POSITION)]  # (in position order: a copy)
        find = self._find
        for index in range(shared, len(items)):
            value = find(items[index])
            if value is not None:
                found.append((index, value))
        self._items, self._found = items, found  # (holding the items keeps their ids theirs)
        return found

    def clear(self) -> None:
        self._items, self._found = (), []


class Prefixed(Generic[T]):
    """``of(items, cut)``: ``judge(items[:cut])``, remembered for the very items of the last
    prefix judged (a prefix that ends where a fold's state is reset, such as the last turn's
    start, is judged once while a log grows past it)."""

    def __init__(self, judge: Callable[[Sequence[Any]], T]) -> None:
        self._judge = judge
        self._items: Sequence[Any] = ()
        self._value: T | None = None
        self._valid = False

    def of(self, items: Sequence[Any], cut: int) -> T:
        if self._valid and len(self._items) == cut and shared_length(items, self._items) == cut:
            return self._value  # type: ignore[return-value]
        prefix = tuple(items[:cut])
        self._value, self._items, self._valid = self._judge(prefix), prefix, True
        return self._value

    def clear(self) -> None:
        self._items, self._value, self._valid = (), None, False
