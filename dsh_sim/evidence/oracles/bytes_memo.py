"""A bounded memo of answers about whole logs, found without hashing the log.

The judges ask about the same log bytes again and again (every acknowledgement is read as a
writer's log and later as a crash image; explore acknowledges the same bytes in many
states), but nearly every ask comes with a new ``bytes`` object: a dict keyed by the bytes
hashes all of them (SipHash over every byte, tens of microseconds for a long log) before it
can look.  Here an entry is found by the length and the last bytes of its log, and then
compared with the asked bytes byte for byte (``memcmp``; nothing if it is the same object),
so an answer is only ever given for exactly the same bytes and the same ``extra``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

TAIL = 16  # the last bytes that find an entry (zstd: the last frame's content checksum and more)


class BytesMemo:
    """``get(data, extra)`` is what ``put(data, extra, value)`` stored for equal bytes (the
    newest ``size`` entries; one per length, tail and ``extra``: a later one of the same
    replaces it), else ``None``."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[tuple[int, bytes, Hashable], tuple[bytes, Any]] = OrderedDict()

    def get(self, data: bytes, extra: Hashable) -> Any:
        key = (len(data), data[-TAIL:], extra)
        item = self._items.get(key)
        if item is None or (item[0] is not data and item[0] != data):
            return None
        self._items.move_to_end(key)
        return item[1]

    def put(self, data: bytes, extra: Hashable, value: Any) -> None:
        key = (len(data), data[-TAIL:], extra)
        self._items[key] = (data, value)
        self._items.move_to_end(key)
        if len(self._items) > self._size:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()
