"""The event envelope (spec §1.1): ``type, seq, time, data`` plus optional metadata.

An :class:`Event` is an immutable value.  ``to_record`` gives the stored JSON object in the
one key order this runtime writes (``type, seq, time, data, ignorable, surfaceOp,
sourceEventSeqs`` — the order of the reference runtime's synthetic closers);
``Event.from_record`` validates a stored object and never trusts its shape.

An event the runtime built itself — its ``data`` a private lossless copy it made, or JSON it
just parsed — is *owned* (:func:`owned`): nothing outside the runtime holds its ``data``, so
the write path admits it as it is, without another defensive deep copy.  Only events a
caller constructed are copied on admission.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from runtime.session.lossless import MAX_SAFE_INTEGER, check_lossless, check_parsed, holds_split_pair, is_safe_integer, lossless_copy
from runtime.session.vocabulary import SURFACE_EVENT_TYPES

# 'append' or {"op": "replace", "startSeq": a, "endSeq": b}
SurfaceOp = str | dict[str, Any]

_ENVELOPE_KEYS = frozenset({"type", "seq", "time", "data", "ignorable", "surfaceOp", "sourceEventSeqs"})


class EnvelopeError(ValueError):
    """A stored or seeded object is not a valid event envelope."""


@attrs.frozen(eq=True, hash=False)
class Event:
    type: str
    seq: int
    time: int
    data: Any
    ignorable: bool = False
    surface_op: SurfaceOp | None = None
    source_event_seqs: tuple[int, ...] | None = None

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"type": self.type, "seq": self.seq, "time": self.time, "data": self.data}
        if self.ignorable:
            record["ignorable"] = True
        if self.surface_op is not None:
            record["surfaceOp"] = self.surface_op
        if self.source_event_seqs is not None:
            record["sourceEventSeqs"] = encode_seq_ranges(self.source_event_seqs)
        return record

    def with_seq(self, seq: int) -> Event:
        return attrs.evolve(self, seq=seq)

    @classmethod
    def from_record(cls, record: Any) -> Event:
        """Validate one stored record; raise :class:`EnvelopeError` naming what is wrong.

        The event gets a private copy of ``data``: the caller may keep using ``record``."""
        return owned(cls._validated(record, lossless_copy))

    @classmethod
    def from_parsed(cls, record: Any, *, text_checked: bool = False) -> Event:
        """:meth:`from_record` for a record ``json.loads`` just returned, which no one else holds.

        The same checks and refusals, but ``data`` is walked instead of copied: the decoders
        call this for every stored record, and a copy of freshly parsed JSON was pure cost.
        ``text_checked``: the JSON text it came from cannot hold a value the walk refuses
        (:func:`~runtime.session.lossless.text_may_refuse` said so), so there is no walk."""
        return owned(cls._validated(record, _as_parsed if text_checked else _checked_in_place))

    @classmethod
    def _validated(cls, record: Any, own: Callable[[Any], Any]) -> Event:
        if type(record) is not dict:
            raise EnvelopeError("event record is not a JSON object")
        if not _ENVELOPE_KEYS.issuperset(record):
            raise EnvelopeError(f"event has unexpected envelope keys {sorted(set(record) - _ENVELOPE_KEYS)}")
        kind = record.get("type")
        if type(kind) is not str or not kind:
            raise EnvelopeError("event type must be a non-empty string")
        if kind == "request/header-delta":
            raise EnvelopeError('event type "request/header-delta" is a retired format and is refused')
        seq = record.get("seq")
        if type(seq) is not int or not 0 <= seq <= MAX_SAFE_INTEGER:
            raise EnvelopeError(f"{kind} event seq must be a non-negative safe integer, got {seq!r}")
        time = record.get("time")
        if type(time) is not int or not -MAX_SAFE_INTEGER <= time <= MAX_SAFE_INTEGER:
            raise EnvelopeError(f"{kind} event at seq {seq} has a time that is not a safe integer")
        if "data" not in record:
            raise EnvelopeError(f"{kind} event at seq {seq} has no data")
        try:
            data = own(record["data"])
        except TypeError as err:
            raise EnvelopeError(f"{kind} event at seq {seq}: {err}") from None
        ignorable = record.get("ignorable", False)
        if "ignorable" in record and ignorable is not True:
            raise EnvelopeError(f"{kind} event at seq {seq}: ignorable may only be true")
        surface_op = record.get("surfaceOp")
        raw_sources = record.get("sourceEventSeqs")
        sources = None if raw_sources is None else decode_seq_ranges(raw_sources, seq)
        event = cls(kind, seq, time, data, bool(ignorable), surface_op, sources)
        validate_surface(event)
        return event


def _checked_in_place(data: Any) -> Any:
    check_parsed(data)
    return data


def _as_parsed(data: Any) -> Any:
    return data


_OWNED: weakref.WeakValueDictionary[int, Event] = weakref.WeakValueDictionary()  # id -> the event (gone with it)


def owned(event: Event) -> Event:
    """Mark ``event`` as built by the runtime: its ``data`` (and ``surface_op``) are a lossless
    private copy the runtime made or JSON it parsed, which no caller holds.  Returns it."""
    _OWNED[id(event)] = event
    return event


def is_owned(event: Event) -> bool:
    """Whether :func:`owned` marked this very event (an entry dies with its event, so an id
    is never mistaken for a later object's)."""
    return _OWNED.get(id(event)) is event


def checked_copy(event: Event) -> Event:
    """A validated private copy of an in-memory event: the write-side twin of ``from_record``.

    Accepts exactly what :meth:`Event.from_record` would read back.  Non-lossless data is a
    ``TypeError`` (``losslessly JSON-serializable``); any other defect an
    :class:`EnvelopeError`.  One deep copy, so it is cheap enough for every append; an
    :func:`owned` event is already such a copy, so only its envelope is checked (and it is
    returned as it is).
    """
    if is_owned(event):
        _check_envelope(event)
        return event
    data = lossless_copy(event.data)
    op = event.surface_op
    if op is not None and op != "append":
        op = lossless_copy(op, "surfaceOp")
    sources = event.source_event_seqs
    if sources is not None:
        sources = tuple(sources)
    copy = Event(event.type, event.seq, event.time, data, event.ignorable, op, sources)
    _check_envelope(copy)
    return owned(copy)


def checked_as_is(event: Event) -> Event:
    """:func:`checked_copy`'s checks and refusals, without its deep copy of ``data``.

    For a writer that encodes the event right after this, with no checkpoint between (the
    write handle's append): the encoded bytes are then the private copy, so nothing the
    caller changes later reaches the log, and a deep copy would only be thrown away.  Returns
    the event itself — or, when its ``source_event_seqs`` is not a tuple (the one field the
    copy normalizes), :func:`checked_copy`'s copy.
    """
    if is_owned(event):
        _check_envelope(event)
        return event
    sources = event.source_event_seqs
    if sources is not None and type(sources) is not tuple:
        return checked_copy(event)
    check_lossless(event.data)
    op = event.surface_op
    if op is not None and op != "append":
        check_lossless(op, "surfaceOp")
    _check_envelope(event)
    return event


def _check_envelope(copy: Event) -> None:
    """What :meth:`Event.from_record` checks besides the losslessness of ``data``."""
    kind, seq, sources = copy.type, copy.seq, copy.source_event_seqs
    if type(kind) is not str or not kind:
        raise EnvelopeError("event type must be a non-empty string")
    if kind == "request/header-delta":
        raise EnvelopeError('event type "request/header-delta" is a retired format and is refused')
    if holds_split_pair(kind):
        raise EnvelopeError("event type holds a surrogate pair as two code points (it would read back as one)")
    if not is_safe_integer(seq) or seq < 0:
        raise EnvelopeError(f"{kind} event seq must be a non-negative safe integer, got {seq!r}")
    if not is_safe_integer(copy.time):
        raise EnvelopeError(f"{kind} event at seq {seq} has a time that is not a safe integer")
    if type(copy.ignorable) is not bool:
        raise EnvelopeError(f"{kind} event at seq {seq}: ignorable may only be true")
    if sources is not None and not all(is_safe_integer(v) for v in sources):
        raise EnvelopeError(f"sourceEventSeqs at seq {seq} must hold safe integers")
    if sources is not None and decode_seq_ranges(encode_seq_ranges(sources), seq) != sources:
        raise EnvelopeError(f"sourceEventSeqs at seq {seq} do not survive storage")
    validate_surface(copy)


def validate_surface(event: Event) -> None:
    """Surface metadata rules of the v3 generation (spec §1.3, §10.1)."""
    if event.type not in SURFACE_EVENT_TYPES:
        if event.surface_op is not None or event.source_event_seqs is not None:
            raise EnvelopeError(f"{_where(event)} is log-only and must not carry surface metadata")
        return
    op = event.surface_op
    if op is None:
        raise EnvelopeError(f"{event.type} requires surfaceOp")
    if op != "append" and not (
        type(op) is dict
        and set(op) == {"op", "startSeq", "endSeq"}
        and op["op"] == "replace"
        and is_safe_integer(op["startSeq"])
        and is_safe_integer(op["endSeq"])
        and 0 <= op["startSeq"] <= op["endSeq"] < event.seq
    ):
        raise EnvelopeError(f"{_where(event)} has an invalid surfaceOp {op!r}")
    if event.type == "assistant/message" and event.source_event_seqs is not None:
        raise EnvelopeError(f"{_where(event)}: assistant/message embeds its stream and must not carry sourceEventSeqs")
    if event.source_event_seqs is not None and not event.source_event_seqs:
        # §1.3: only an assistant message (of an empty stream) may carry an empty array, and a v3 one carries none
        raise EnvelopeError(f"{_where(event)}: sourceEventSeqs must not be empty")
    if event.type == "tool/result" and type(event.data) is dict and event.data.get("error") is not None:
        message = event.data.get("message")
        blocks = message.get("content") if type(message) is dict else None
        if not (type(blocks) is list and blocks and type(blocks[0]) is dict and blocks[0].get("isError") is True):
            raise EnvelopeError(f"tool/result at seq {event.seq} carries error metadata for a non-error tool result")


def _where(event: Event) -> str:
    """Where a refused event is, for the refusal (built only when one is raised: every stored
    and every appended event passes here)."""
    return f"{event.type} at seq {event.seq}"


def encode_seq_ranges(seqs: Iterable[int]) -> list[Any]:
    """v3 storage form: runs of three or more consecutive seqs become ``[start, end]``.

    Like the reference encoder, a list that is not strictly increasing is stored verbatim:
    its decoder only accepts ranges inside a strictly increasing expansion.
    """
    values = list(seqs)
    if any(b <= a for a, b in zip(values, values[1:])):
        return values
    out: list[Any] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        if j - i >= 2:
            out.append([values[i], values[j]])
        else:
            out.extend(values[i : j + 1])
        i = j + 1
    return out


def decode_seq_ranges(raw: Any, owner_seq: int) -> tuple[int, ...]:
    """Inverse of :func:`encode_seq_ranges`, as lenient as the reference decoder.

    A pair ``[start, end]`` needs ``start <= end`` (writers only emit runs of three, but
    shorter pairs are valid storage); once a pair is present the expansion must strictly
    increase.  Every seq must name an earlier event.
    """
    if type(raw) is not list:
        raise EnvelopeError(f"sourceEventSeqs at seq {owner_seq} must be an array")
    out: list[int] = []
    has_range = False
    for item in raw:
        if type(item) is list:
            if len(item) != 2 or not all(is_safe_integer(v) and v >= 0 for v in item) or item[1] < item[0]:
                raise EnvelopeError(f"sourceEventSeqs at seq {owner_seq} has an invalid range {item!r}")
            if item[1] >= owner_seq:
                raise EnvelopeError(f"sourceEventSeqs at seq {owner_seq} must name earlier events")
            out.extend(range(item[0], item[1] + 1))
            has_range = True
        elif is_safe_integer(item) and item >= 0:
            out.append(item)
        else:
            raise EnvelopeError(f"sourceEventSeqs at seq {owner_seq} has an invalid entry {item!r}")
    if has_range and any(b <= a for a, b in zip(out, out[1:])):
        raise EnvelopeError(f"sourceEventSeqs at seq {owner_seq} must strictly increase")
    if any(s >= owner_seq for s in out):
        raise EnvelopeError(f"sourceEventSeqs at seq {owner_seq} must name earlier events")
    return tuple(out)
