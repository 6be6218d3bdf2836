"""The incremental readers: a log fed in any pieces reads exactly as the whole file does.

``decode_log`` (with its memos) is the reference here; the pieces are cut anywhere — inside a
line, a frame header, a block, a checksum — and the logs are damaged anywhere (bytes flipped,
cut short, a garbage line, a frame's worth of junk), so a reader that keeps the wrong state
between two pieces, or refuses in another order than the whole-file decode, differs somewhere.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_sim.mutants.patch import Edit, applied
from runtime.persistence import decode_memo
from runtime.persistence.log_format import decode_log, encode_batch, encode_header
from runtime.persistence.log_reader import reader_for
from runtime.persistence.log_records import LogCorruption, LogUnknownEventType, LogVersionUnsupported
from runtime.session.events import Event
from tests.support.persistence import meta, one_turn_log, open_turn

REFUSALS = (LogCorruption, LogVersionUnsupported, LogUnknownEventType)


def _log(compression: str, batches: int) -> bytes:
    events = one_turn_log() + open_turn()
    data = encode_header(meta("s1", "/work"), compression)
    size = max(1, len(events) // batches)
    for start in range(0, len(events), size):
        data += encode_batch(events[start : start + size], compression)
    return data


def whole(data: bytes, compression: str) -> tuple[Any, ...]:
    decode_memo.clear_all()
    try:
        decoded = decode_log(data, compression)
    except REFUSALS as err:
        return (type(err).__name__, str(err))
    torn = decoded.torn
    return (
        "read",
        decoded.header.to_record(),
        [e.to_record() for e in decoded.events],
        None if torn is None else (torn.truncate_to, torn.torn_bytes, len(torn.recovered)),
        decoded.file_size,
    )


def in_pieces(data: bytes, compression: str, cuts: list[int]) -> tuple[Any, ...]:
    reader = reader_for(compression)
    events: list[Event] = []
    try:
        at = 0
        for cut in sorted({min(c, len(data)) for c in cuts}) + [len(data)]:
            events.extend(reader.feed(data[at:cut]))
            at = cut
        end = reader.close()
    except REFUSALS as err:
        return (type(err).__name__, str(err))
    torn = end.torn
    if torn is not None:
        events.extend(torn.recovered)
    return (
        "read",
        end.header.to_record(),
        [e.to_record() for e in events],
        None if torn is None else (torn.truncate_to, torn.torn_bytes, len(torn.recovered)),
        end.size,
    )


@st.composite
def damaged(draw: st.DrawFn) -> tuple[bytes, str, list[int]]:
    compression = draw(st.sampled_from(["none", "zstd"]))
    data = bytearray(_log(compression, draw(st.integers(1, 4))))
    kind = draw(st.sampled_from(["none", "flip", "cut", "insert", "junk-line"]))
    if kind != "none":
        at = draw(st.integers(0, len(data) - 1))
        if kind == "flip":
            data[at] ^= draw(st.integers(1, 255))
        elif kind == "cut":
            del data[at:]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=12))
        else:
            data += draw(st.sampled_from([b"{not json\n", b'{"type":"turn/end","seq":99,"time":0,"data":{}}\n', b"\n", b"[]\n"]))
    cuts = draw(st.lists(st.integers(0, len(data)), max_size=8))
    return bytes(data), compression, cuts


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged())
def test_any_pieces_read_as_the_whole_file(case: tuple[bytes, str, list[int]]) -> None:
    data, compression, cuts = case
    assert in_pieces(data, compression, cuts) == whole(data, compression)


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_one_byte_at_a_time(compression: str) -> None:
    data = _log(compression, 3)[:-5]  # a torn tail too
    assert in_pieces(data, compression, list(range(len(data)))) == whole(data, compression)
    assert whole(data, compression)[0] == "read"


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_a_window_that_forgets_a_split_record_is_caught(compression: str) -> None:
    """The check above can fail: a reader that drops the unread bytes between two pieces."""
    data = _log(compression, 2)
    cuts = [len(data) // 2]
    forgets = Edit(
        "runtime.persistence.log_reader",
        "_Window.extend",
        "            self.data = self.data[self.at :] + chunk\n",
        "            self.data = chunk\n",
    )
    with applied([forgets]):
        assert in_pieces(data, compression, cuts) != whole(data, compression)
    assert in_pieces(data, compression, cuts) == whole(data, compression)


def test_later_damage_refuses_what_was_already_fed() -> None:
    """Events a feed returned are provisional: a turn/end after an unparsable line refuses all."""
    data = _log("none", 1) + b"{torn garbage\n" + b'{"type":"turn/end","seq":12,"time":0,"data":{"turn":2,"reason":{"kind":"completed"}}}\n'
    reader = reader_for("none")
    assert len(reader.feed(data[: len(data) // 2])) > 0
    with pytest.raises(LogCorruption, match="unparsable committed event"):
        reader.feed(data[len(data) // 2 :])
