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


def shared_length(items: Sequence[Any], known: Sequence[Any]) -> int:
    """How many leading items of ``items`` are the very objects of ``known`` (one C-level pass,
    remembered for the last few pairs of tuples: the walks of one log all ask it of the same
    two logs, the one judged now and the one judged before).  Identity, not equality: an
    equal other object is compared in full by the walk (an event's equality builds records)."""
    if type(items) is not tuple or type(known) is not tuple:
        return _shared(items, known)
    key = (id(items), id(known))
    pair = _PAIRS.get(key)
    if pair is not None and pair[0] is items and pair[1] is known:
        return pair[2]
    length = _shared(items, known)
    if len(_PAIRS) >= 8:
        del _PAIRS[next(iter(_PAIRS))]
    _PAIRS[key] = (items, known, length)  # (holding both keeps their ids theirs; tuples never change)
    return length


_TAIL = 64  # the items at the end of the shorter sequence compared one by one


def _shared(items: Sequence[Any], known: Sequence[Any]) -> int:
    return next(itertools.compress(itertools.count(), map(operator.is_not, items, known)), min(len(items), len(known)))


_PAIRS: dict[tuple[int, int], tuple[tuple[Any, ...], tuple[Any, ...], int]] = {}


class Findings(Generic[T]):
    """``of(items)``: ``find(item)`` for every item where it is not ``None``, in order, with
    the item's position — walked in Python only past the part shared with the last ``items``."""

    def __init__(self, find: Callable[[Any], T | None]) -> None:
        self._find = find
        self._items: Sequence[Any] = ()
        self._positions: list[int] = []  # where each finding is, ascending
        self._values: list[T] = []

    def of(self, items: Sequence[Any]) -> list[tuple[int, T]]:
        self._walk(items)
        return list(zip(self._positions, self._values))

    def values_before(self, items: Sequence[Any], end: int) -> tuple[T, ...]:
        """The findings of ``items[:end]`` (C-level copies past the walk)."""
        self._walk(items)
        return tuple(self._values[: bisect.bisect_left(self._positions, end)])

    def _walk(self, items: Sequence[Any]) -> None:
        shared = shared_length(items, self._items)
        keep = bisect.bisect_left(self._positions, shared)
        del self._positions[keep:], self._values[keep:]
        find, positions, values = self._find, self._positions, self._values
        for index in range(shared, len(items)):
            value = find(items[index])
            if value is not None:
                positions.append(index)
                values.append(value)
        self._items = items  # (holding the items keeps their ids theirs)

    def clear(self) -> None:
        self._items, self._positions, self._values = (), [], []


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
