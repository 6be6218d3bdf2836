"""Bounded memos of decoded log bytes, so the same bytes are parsed once per process.

A process reads one log several times in a row: ``open`` decodes it to refuse an unreadable
log, the write handle reads it back, a resume reads it again, a reader checks what a writer
left (spec §10.5: "a bounded memo ... lets an observe-then-resume handoff parse once").
Between two reads a log usually grew by a frame or two, so most of its frames were decoded
before.  Two memos, both keyed by *content*, never by a path or a revision token (a coarse
mtime could name two different contents; bytes cannot):

* :data:`LOGS` — whole files (their bytes) to their :class:`DecodedLog`, a few entries;
* :data:`FRAMES` — one complete zstd frame (its compressed bytes, checksum included) to the
  events it holds, a few thousand entries: a log that grew is decoded by looking up its
  old frames and parsing only the new ones.

Only successful decodes are remembered, and a decode is a pure function of the bytes, so a
hit returns exactly what a fresh decode would (the one piece of context a frame's validity
depends on — the seq it must start at — is checked again by the caller on every hit).

Sharing is safe because events are immutable values, and that holds for ``data`` too: every
way into the runtime copies (``Session.append``, ``checked_copy`` on append, the
write-behind's admission, ``Event.from_record``), the decoders build ``data`` fresh from
``json.loads``, and no runtime code writes into an event's ``data`` after construction.
``tests/test_decode_memo.py`` runs whole simulated sessions with crashes and then checks that
every remembered entry still equals a fresh decode of its key, so a mutation anywhere on
those paths fails the suite.

Both memos are LRU-bounded and guarded by a lock: migration's verifier decodes in a worker
thread while the event loop's thread decodes too.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
_ALL: weakref.WeakSet[Memo[Any, Any]] = weakref.WeakSet()


def clear_all() -> None:
    """Forget every remembered decode (for code that swaps the decoders themselves)."""
    for memo in list(_ALL):
        memo.clear()


class Memo(Generic[K, V]):
    """A thread-safe map of at most ``capacity`` entries, least recently used evicted first."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("a memo needs room for one entry")
        self.capacity = capacity
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        _ALL.add(self)

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._entries.get(key)
            if value is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def items(self) -> Iterator[tuple[K, V]]:
        """A snapshot of the entries (oldest first), for checks that the memo is faithful."""
        with self._lock:
            snapshot = list(self._entries.items())
        return iter(snapshot)

    def __len__(self) -> int:
        return len(self._entries)
