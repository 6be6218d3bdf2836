"""A bounded memo of verdicts about the very objects they judged, found by identity.

Explore recovers from one crash point in many states, and those share objects: the ledger's
entries (a world's snapshot copies the list, never an entry), the expectation the reference
model hands out per crash image, the events read back from one image.  A judge whose verdict
is a function of such objects — frozen, never changed in place — and of a few plain values
remembers it here instead of walking them again.

An entry is found by the number of objects, the ids of the first and the last, and the plain
values (``extra``), and answers only when every object it holds *is* the asked one.  Holding
them also keeps their ids from being reused while remembered.  When ``limit`` entries are
held the memo is emptied: the states that follow rebuild what they need.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class IdentityMemo(Generic[V]):
    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._items: dict[tuple[int, int, int, Hashable], tuple[tuple[Any, ...], V]] = {}

    def remember(self, objects: tuple[Any, ...], extra: Hashable, compute: Callable[..., V], *args: Any) -> V:
        """The verdict remembered for ``objects`` and ``extra``, else ``compute(*args)``, remembered."""
        key = (len(objects), id(objects[0]) if objects else 0, id(objects[-1]) if objects else 0, extra)
        known = self._items.get(key)
        if known is not None and all(map(operator.is_, known[0], objects)):
            return known[1]
        value = compute(*args)
        if len(self._items) >= self._limit:
            self._items.clear()
        self._items[key] = (objects, value)
        return value

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)
