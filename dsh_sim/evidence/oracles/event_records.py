"""Events as stored records, remembered per event object for the whole-log comparisons.

Several judges compare a whole session with what the disk holds after every recovery (the
reference model, the history check, eventual durability), and explore's recoveries share most
of those event objects (a crash point's in-memory log, the runtime's decoded prefix).  An
:class:`Event` is frozen and ``to_record`` copies nothing out of it (``data`` is the event's
own object), so a remembered record is what ``to_record`` returns now, whatever happened
since; the record is only compared, never changed.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Sequence
from typing import Any

from dsh_sim.evidence.oracles.shared_prefix import Findings, shared_length
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


_EQUAL: dict[tuple[int, int], tuple[dict[str, Any], Event]] = {}  # (id(record), id(event)) -> both
_LAST: dict[int, dict[str, Any]] = {}  # id(event) -> the record it was last found equal to (pinned by _EQUAL)


def same(record: dict[str, Any], event: Event) -> bool:
    """``record == record_of(event)``, remembered per pair found equal.

    The judges compare the spec reader's records (shared per frame by its memo) with the
    runtime's events (shared per frame by the decoder's memo, or a crash point's in-memory
    log) in every recovery of a point; a deep comparison of each pair every time was most of
    their cost.  Both are immutable values, so a pair found equal stays equal; each entry
    holds both, so neither id can be reused while it is remembered.  Unequal pairs are
    compared again every time (a finding is never remembered away)."""
    key = (id(record), id(event))
    known = _EQUAL.get(key)
    if known is None or known[0] is not record or known[1] is not event:
        if record != record_of(event):
            return False
        if len(_EQUAL) >= LIMIT:
            _EQUAL.clear()
            _LAST.clear()
        _EQUAL[key] = (record, event)
    _LAST[id(event)] = record
    return True


def first_mismatch(records: Sequence[dict[str, Any]], events: Sequence[Event]) -> int | None:
    """The first position where ``records`` and ``events`` (as records) differ — the shorter
    length when one is a prefix of the other — or ``None`` when they are equal.

    The leading pairs already found equal are skipped without a Python-level step per pair
    (an event's last equal record is this very record): a recovery's log is mostly the
    previous recovery's."""
    n = min(len(records), len(events))
    last_records, last_events, equal = _EQUAL_PAIR
    start = min(shared_length(records, last_records), shared_length(events, last_events), equal)  # (compared before)
    known = map(_LAST.get, map(id, itertools.islice(events, start, n)))
    start = next(itertools.compress(itertools.count(start), map(operator.is_not, known, itertools.islice(records, start, n))), n)
    for index in range(start, n):
        if not same(records[index], events[index]):
            _EQUAL_PAIR[:] = [records, events, index]
            return index
    _EQUAL_PAIR[:] = [records, events, n]
    return None if len(records) == len(events) else n


# the last pair of sequences compared, and how many of their leading items were found equal:
# the next pair is compared from where either parts from it (see shared_prefix)
_EQUAL_PAIR: list[Any] = [(), (), 0]


def of_kinds(events: Sequence[Any], kinds: frozenset[str]) -> Iterable[Any]:
    """The events (records or :class:`Event` objects) whose type is in ``kinds``, in order:
    the whole-log judges read a few kinds of a long log, so the rest is skipped in one C-level
    pass (a log mixing records and events, or an odd type, takes the plain walk)."""
    if not events:
        return ()
    get = operator.itemgetter("type") if type(events[0]) is dict else operator.attrgetter("type")
    try:
        return list(itertools.compress(events, map(kinds.__contains__, map(get, events))))
    except (AttributeError, KeyError, TypeError):
        return [event for event in events if kind_of(event) in kinds]


# Read one field of an event or of its stored record alike (the judges take either).
def kind_of(event: Any) -> str:
    return str(event["type"] if type(event) is dict else event.type)


def last_index_of(events: Sequence[Any], kinds: frozenset[str]) -> int:
    """The index of the last event (record or :class:`Event`) whose type is in ``kinds`` (0:
    none): where a walk whose whole state those kinds reset may start."""
    for index in range(len(events) - 1, -1, -1):
        if kind_of(events[index]) in kinds:
            return index
    return 0


def seq_of(event: Any) -> int:
    return int(event["seq"] if type(event) is dict else event.seq)


def data_of(event: Any) -> Any:
    return event["data"] if type(event) is dict else event.data


def clear() -> None:
    _MEMO.clear()
    _EQUAL.clear()
    _LAST.clear()
    _EQUAL_PAIR[:] = [(), (), 0]
    _SETTINGS.clear()


def in_force(events: Sequence[Event], kind: str, key: str, default: Any) -> Any:
    """A session setting as its log has it: the last ``kind`` event's ``key`` (``approval/policy``
    and ``sandbox/mode`` change by appending one; the newest wins), else ``default``.  (``kind``:
    one of :data:`SETTING_KINDS`.)"""
    if kind not in SETTING_KINDS:
        raise ValueError(f"{kind} is not a session setting")
    for _, event in reversed(_SETTINGS.of(events)):
        if event.type == kind:
            return event.data.get(key)
    return default


SETTING_KINDS = frozenset({"approval/policy", "sandbox/mode"})
# the setting events of the log walked last (a long log has few: walked past the shared part only)
_SETTINGS: Findings[Event] = Findings(lambda event: event if event.type in SETTING_KINDS else None)
