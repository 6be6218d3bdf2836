"""The event envelope, lossless JSON and the in-memory Session (spec §1.1–§1.3, §10.1)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from runtime.session.events import (
    EnvelopeError,
    Event,
    checked_as_is,
    checked_copy,
    decode_seq_ranges,
    encode_seq_ranges,
)
from runtime.session.lossless import MAX_SAFE_INTEGER, check_lossless, dumps, dumps_lines, lossless_copy
from runtime.session.session import Session, SessionSeedError


class TickClock:
    def __init__(self) -> None:
        self.now = 1000

    def now_ms(self) -> int:
        self.now += 1
        return self.now


class Cycle:
    pass


def _cyclic_dict() -> dict[str, Any]:
    d: dict[str, Any] = {"a": 1}
    d["self"] = d
    return d


def _cyclic_list() -> list[Any]:
    items: list[Any] = [1]
    items.append(items)
    return items


NON_LOSSLESS = {
    "nan": math.nan,
    "inf": math.inf,
    "-inf": -math.inf,
    "negative zero": -0.0,
    "big int": MAX_SAFE_INTEGER + 1,
    "big negative int": -(MAX_SAFE_INTEGER + 1),
    "tuple": (1, 2),
    "set": {1, 2},
    "frozenset": frozenset({1}),
    "bytes": b"x",
    "object": Cycle(),
    "function": len,
    "dict cycle": _cyclic_dict(),
    "list cycle": _cyclic_list(),
    "int key": {1: "x"},
    "tuple key": {(1,): "x"},
    "split surrogate pair value": "a\ud83d\ude00b",
    "split surrogate pair key": {"\udbff\udfff": 1},
    "nested nan": {"a": [{"b": math.nan}]},
}


@pytest.mark.parametrize("name", sorted(NON_LOSSLESS))
def test_session_append_rejects_non_lossless_data_and_stores_nothing(name: str) -> None:
    session = Session("s", TickClock())
    seen: list[Event] = []
    session.subscribe(seen.append)
    with pytest.raises(TypeError, match="losslessly JSON-serializable"):
        session.append("turn/start", {"turn": 1, "extra": NON_LOSSLESS[name]})
    assert session.seq == 0 and seen == []
    session.append("turn/start", {"turn": 1})
    assert session.seq == 1


def test_lossless_values_round_trip_and_are_copied() -> None:
    value = {"i": MAX_SAFE_INTEGER, "n": -MAX_SAFE_INTEGER, "f": 1.5, "z": 0.0, "s": "é😀", "l": [None, True, False], "d": {}}
    copy = lossless_copy(value)
    assert copy == value and copy is not value and copy["l"] is not value["l"]
    assert dumps(value) == '{"i":9007199254740991,"n":-9007199254740991,"f":1.5,"z":0.0,"s":"é😀","l":[null,true,false],"d":{}}'


def test_session_append_copies_data_so_caller_mutation_changes_nothing() -> None:
    session = Session("s", TickClock())
    data = {"turn": 1, "nested": {"k": [1]}}
    event = session.append("turn/start", data)
    data["nested"]["k"].append(2)
    assert event.data == {"turn": 1, "nested": {"k": [1]}}


def test_seed_must_be_contiguous_from_zero() -> None:
    seed = [Event("turn/start", 0, 1, {"turn": 1}), Event("turn/end", 2, 2, {"turn": 1, "reason": {"kind": "completed"}})]
    with pytest.raises(SessionSeedError) as err:
        Session("s", TickClock(), seed)
    assert str(err.value) == "seed event at index 1 has seq 2 (expected 1); seed must be contiguous from 0"


def test_seed_gets_an_end_seed_and_first_live_seq() -> None:
    seed = [Event("turn/start", 0, 1, {"turn": 1}), Event("turn/end", 1, 2, {"turn": 1, "reason": {"kind": "completed"}})]
    session = Session("s", TickClock(), seed)
    assert session.first_live_seq == 2
    assert [e.type for e in session.events] == ["turn/start", "turn/end", "session/end-seed"]
    assert session[2].seq == 2 and session[2].data == {}
    assert session.seq == 3
    again = Session("s", TickClock(), session.events)  # already ends with end-seed: none added
    assert len(again) == 3 and again.first_live_seq == 3
    assert len(Session("s", TickClock(), [])) == 0


def test_surface_events_need_surface_op_and_log_only_events_refuse_it() -> None:
    session = Session("s", TickClock())
    with pytest.raises(ValueError, match="requires surfaceOp"):
        session.append("user/message", {"id": "u"})
    with pytest.raises(ValueError, match="log-only"):
        session.append("turn/start", {"turn": 1}, surface_op="append")
    with pytest.raises(ValueError, match="unique earlier seqs"):
        session.append("tool/result", {"message": {"content": [{"isError": False}]}}, surface_op="append", source_event_seqs=[0])
    assert session.seq == 0


# -- Event.from_record ------------------------------------------------------------------------


def base(**over: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"type": "turn/start", "seq": 3, "time": 5, "data": {"turn": 1}}
    record.update(over)
    return record


def test_from_record_round_trip_and_key_order() -> None:
    record = {
        "type": "tool/result",
        "seq": 9,
        "time": 5,
        "data": {"x": 1},
        "ignorable": True,
        "surfaceOp": "append",
        "sourceEventSeqs": [1, 3],
    }
    event = Event.from_record(record)
    assert event.to_record() == record
    assert list(event.to_record()) == list(record)


@pytest.mark.parametrize(
    "record,match",
    [
        (base(extra=1), "unexpected envelope keys"),
        ({"type": "turn/start", "seq": 0, "time": 1}, "has no data"),
        (base(type="request/header-delta"), "request/header-delta"),
        (base(type=""), "non-empty string"),
        (base(type=7), "non-empty string"),
        (base(seq=-1), "seq must be a non-negative safe integer"),
        (base(seq=1.5), "seq must be a non-negative safe integer"),
        (base(seq=2**53), "seq must be a non-negative safe integer"),
        (base(seq="3"), "seq must be a non-negative safe integer"),
        (base(seq=True), "seq must be a non-negative safe integer"),
        (base(time=1.5), "time that is not a safe integer"),
        (base(time=2**53), "time that is not a safe integer"),
        (base(time=None), "time that is not a safe integer"),
        (base(ignorable=False), "ignorable may only be true"),
        (base(ignorable="yes"), "ignorable may only be true"),
        (base(surfaceOp="append"), "log-only"),
        (base(sourceEventSeqs=[1]), "log-only"),
        (base(type="user/message"), "requires surfaceOp"),
        (base(type="user/message", surfaceOp="prepend"), "invalid surfaceOp"),
        (base(type="user/message", surfaceOp={"op": "replace", "start": 0, "end": 1}), "invalid surfaceOp"),
        (base(type="user/message", surfaceOp={"op": "replace", "startSeq": 2, "endSeq": 1}), "invalid surfaceOp"),
        (base(type="assistant/message", surfaceOp="append", sourceEventSeqs=[1]), "must not carry sourceEventSeqs"),
        (
            base(type="tool/result", surfaceOp="append", data={"error": {"code": "X"}, "message": {"content": [{"isError": False}]}}),
            "carries error metadata for a non-error tool result",
        ),
        ("not an object", "not a JSON object"),
        (base(data={"x": math.nan}), "losslessly JSON-serializable"),
    ],
)
def test_from_record_refuses(record: Any, match: str) -> None:
    with pytest.raises(EnvelopeError, match=match):
        Event.from_record(record)


def test_v3_replace_surface_op_is_accepted() -> None:
    event = Event.from_record(base(type="system/message", seq=4, surfaceOp={"op": "replace", "startSeq": 0, "endSeq": 2}))
    assert event.surface_op == {"op": "replace", "startSeq": 0, "endSeq": 2}


# -- v3 range-encoded sourceEventSeqs ---------------------------------------------------------


@pytest.mark.parametrize(
    "seqs,stored",
    [
        ((), []),
        ((4,), [4]),
        ((1, 2), [1, 2]),
        ((1, 2, 3), [[1, 3]]),
        ((0, 1, 2, 3, 7, 9, 10, 11, 12), [[0, 3], 7, [9, 12]]),
        ((1, 3, 5), [1, 3, 5]),
        ((5, 6, 7, 1), [5, 6, 7, 1]),  # not increasing: verbatim, like the reference encoder
    ],
)
def test_seq_ranges_round_trip(seqs: tuple[int, ...], stored: list[Any]) -> None:
    assert encode_seq_ranges(seqs) == stored
    assert decode_seq_ranges(stored, 100) == seqs
    event = Event("tool/result", 100, 1, {}, surface_op="append", source_event_seqs=seqs)
    if not seqs:  # §1.3: only an assistant message may carry an empty array, and a v3 one carries none
        with pytest.raises(EnvelopeError, match="must not be empty"):
            Event.from_record(event.to_record())
        return
    assert Event.from_record(event.to_record()) == event


def test_seq_ranges_decoder_accepts_short_pairs_like_the_reference() -> None:
    assert decode_seq_ranges([[2, 2], [4, 5]], 10) == (2, 4, 5)


@pytest.mark.parametrize(
    "stored",
    [[[3, 1]], [[1, 2, 3]], [[1, 3], 2], [[-1, 2]], [1.5], ["1"], [[0, 10]], [10], "1,2", [[1, 3], [3, 4]]],
)
def test_seq_ranges_decoder_refuses(stored: Any) -> None:
    with pytest.raises(EnvelopeError):
        decode_seq_ranges(stored, 10)


# -- checked_copy: the write side accepts exactly what from_record reads back -----------------


def test_checked_copy_is_a_private_equal_copy() -> None:
    data = {"turn": 1, "nested": [1, {"a": "b"}]}
    event = Event("tool/result", 5, 9, data, surface_op="append", source_event_seqs=(1, 2, 3))
    copy = checked_copy(event)
    assert copy == event and copy.data is not data and copy.data["nested"] is not data["nested"]
    assert Event.from_record(copy.to_record()) == copy


def test_an_event_the_runtime_built_is_admitted_without_another_copy() -> None:
    from runtime.session.events import is_owned

    session = Session("s", TickClock())
    built = session.append("turn/start", {"turn": 1})
    assert is_owned(built) and checked_copy(built) is built  # Session.append's copy is private already
    parsed = Event.from_parsed({"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}})
    assert is_owned(parsed) and checked_copy(parsed) is parsed  # (freshly parsed JSON)
    made = Event("turn/start", 0, 1, {"turn": 1})  # a caller's: its data is the caller's object
    assert not is_owned(made) and checked_copy(made).data is not made.data
    assert not is_owned(built.with_seq(0))  # (a derived event is a new object, not marked)
    assert is_owned(checked_copy(made))


def test_an_owned_event_still_has_its_envelope_checked() -> None:
    from runtime.session.events import owned

    with pytest.raises(EnvelopeError, match="non-empty string"):
        checked_copy(owned(Event("", 0, 1, {})))
    with pytest.raises(EnvelopeError, match="time"):
        checked_copy(owned(Event("turn/start", 0, 2**53, {})))


@pytest.mark.parametrize(
    "event,error,match",
    [
        (Event("turn/start", 0, 1, {"x": math.nan}), TypeError, "losslessly JSON-serializable"),
        (Event("request/header-delta", 0, 1, {}), EnvelopeError, "request/header-delta"),
        (Event("turn/start", -1, 1, {}), EnvelopeError, "seq must be a non-negative safe integer"),
        (Event("turn/start", 0, 2**53, {}), EnvelopeError, "time"),
        (Event("turn/start", 0, 1, {}, ignorable=1), EnvelopeError, "ignorable"),  # type: ignore[arg-type]
        (Event("tool/result", 3, 1, {}, surface_op="append", source_event_seqs=(1, "2")), EnvelopeError, "safe integers"),  # type: ignore[arg-type]
        (Event("tool/result", 3, 1, {}, surface_op="append", source_event_seqs=(3,)), EnvelopeError, "earlier"),
        (Event("turn/start", 0, 1, {}, surface_op="append"), EnvelopeError, "log-only"),
        (Event("user/message", 2, 1, {}, surface_op={"op": "replace", "startSeq": 0, "endSeq": math.inf}), TypeError, "losslessly"),
    ],
)
def test_checked_copy_refuses(event: Event, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        checked_copy(event)
    with pytest.raises(error, match=match):  # the write handle's check, without the copy
        checked_as_is(event)


def _refusal(check: Any, value: Any, *where: str) -> str | None:
    try:
        check(value, *where)
    except TypeError as err:
        return str(err)
    return None


@pytest.mark.parametrize("name", sorted(NON_LOSSLESS))
def test_the_walk_without_a_copy_refuses_exactly_what_the_copy_refuses(name: str) -> None:
    value = {"turn": 1, "deep": [{"x": NON_LOSSLESS[name]}]}
    assert _refusal(check_lossless, value) is not None
    assert _refusal(check_lossless, value) == _refusal(lossless_copy, value)
    assert _refusal(check_lossless, NON_LOSSLESS[name], "surfaceOp") == _refusal(lossless_copy, NON_LOSSLESS[name], "surfaceOp")


def test_the_walk_without_a_copy_accepts_what_the_copy_accepts() -> None:
    shared = [1]
    value = {
        "i": MAX_SAFE_INTEGER,
        "f": 1.5,
        "z": 0.0,
        "s": "é😀",
        "lone": ["a\ud800", "\udc00\ud800"],
        "\udfff": 1,
        "l": [None, True, False],
        "d": {},
        "twice": [shared, shared],
    }
    check_lossless(value)  # a list reached twice is no cycle
    assert lossless_copy(value) == value
    for scalar in (None, True, 0, "x", 2.5):
        check_lossless(scalar)


def test_checked_as_is_admits_the_callers_event_itself_and_stores_what_the_copy_would() -> None:
    made = Event("tool/result", 5, 9, {"turn": 1, "nested": [1, {"a": "b"}]}, surface_op="append", source_event_seqs=(1, 2, 3))
    assert checked_as_is(made) is made  # no copy: the encoded bytes are the private copy
    assert dumps(made.to_record()) == dumps(checked_copy(made).to_record())
    listed = Event("tool/result", 5, 9, {}, surface_op="append", source_event_seqs=[1, 2, 3])  # type: ignore[arg-type]
    normalized = checked_as_is(listed)  # the one field the copy normalizes: a copy, as checked_copy makes
    assert normalized is not listed and normalized.source_event_seqs == (1, 2, 3)


@pytest.mark.parametrize(
    "values",
    [
        [],
        [{"a": 1}],
        [{"type": "x", "seq": 0, "data": {"s": 'é😀\n"', "l": [1.5, -2, None, True, {}], "e": []}}, [1, [2, [3]]], "text", 7, None],
    ],
)
def test_a_batchs_lines_are_dumps_of_every_value(values: list[Any]) -> None:
    assert dumps_lines(values) == "".join(dumps(value) + "\n" for value in values)


def test_session_append_refuses_a_type_holding_a_split_surrogate_pair() -> None:
    session = Session("s", TickClock())
    with pytest.raises(ValueError, match="surrogate pair as two code points"):
        session.append("x/\ud83d\ude00", {})
    assert len(session) == 0
    session.append("x/\ud800", {})  # a lone surrogate is text like any other
