"""Events as stored records, remembered per event object for the whole-log comparisons.

Several judges compare a whole session with what the disk holds after every recovery (the
reference model, the history check, eventual durability), and explore's recoveries share most
of those event objects (a crash point's in-memory log, the runtime's decoded prefix).  An
:class:`Event` is frozen and ``to_record`` copies nothing out of it (``data`` is the event's
own object), so a remembered record is what ``to_record`` returns now, whatever happened
since; the record is only compared, never changed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from runtime.session.events import Event

LIMIT = 1 << 15
_MEMO: dict[int, tuple[Event, dict[str, Any]]] = {}  # id -> (the event itself, its record)


def record_of(event: Event) -> dict[str, Any]:
    known = _MEMO.get(id(event))
    if known is not None and known[0] is event:  # (the entry holds the event: its id is not reused)
        return known[1]
    record = event.to_record()
    if len(_MEMO) >= LIMIT:
        _MEMO.clear()
    _MEMO[id(event)] = (event, record)
    return record


def records_of(events: Iterable[Event]) -> list[dict[str, Any]]:
    return [record_of(e) for e in events]


def clear() -> None:
    _MEMO.clear()
