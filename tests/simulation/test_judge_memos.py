"""The reference model's memos (explore judges thousands of recoveries of one session): a
remembered answer is only ever the answer for exactly the same inputs."""

from __future__ import annotations

import pytest

from dsh_sim.evidence.oracles import reference
from runtime.persistence.header import SessionHeader
from runtime.persistence.log_format import encode_batch, encode_generation
from runtime.session.events import Event


def _events(n: int, tag: str = "a") -> tuple[Event, ...]:
    return tuple(Event("todo/write", i, 10 + i, {"n": i, "tag": tag}) for i in range(n))


def _log(events: tuple[Event, ...]) -> bytes:
    return encode_generation(SessionHeader("s", 1), list(events[:2]), "zstd") + encode_batch(list(events[2:]), "zstd")


def test_history_problems_are_those_of_the_in_memory_log_given():
    reference.clear_memos()
    events = _events(4)
    data = _log(events)
    expected = reference.expected_recovery(data, "zstd")
    assert reference.crash_history_problems(expected, data, "zstd", events) == []
    other = _events(4, "b")  # the same seqs, other content: a different process history
    problems = reference.crash_history_problems(expected, data, "zstd", other)
    assert problems == reference.history_problems(expected, {}, other) and problems
    assert reference.crash_history_problems(expected, data, "zstd", events) == []


def test_history_problems_are_those_of_the_acknowledged_bytes_given():
    reference.clear_memos()
    events = _events(4)
    data = _log(events)
    expected = reference.expected_recovery(data, "zstd")
    assert reference.crash_history_problems(expected, data, "zstd", ()) == []
    acked_more = _log(_events(6))  # acknowledged events the disk does not hold
    assert reference.crash_history_problems(expected, acked_more, "zstd", ()) == [
        "acknowledged event seq 4 (todo/write) is not on the disk: the medium holds 4 events"
    ]


def test_expected_recovery_is_a_function_of_the_bytes():
    reference.clear_memos()
    whole = _log(_events(4))
    cut = whole[:-3]
    assert reference.expected_recovery(whole, "zstd").torn_start is None
    assert reference.expected_recovery(cut, "zstd") == reference._expected_recovery(cut, "zstd")
    assert reference.expected_recovery(cut, "zstd").torn_start is not None
    assert reference.expected_recovery(None, "zstd") == reference.Expected((), ())


def test_a_remembered_record_is_what_to_record_returns_now():
    from dsh_sim.evidence.oracles import event_records

    event_records.clear()
    event = Event("todo/write", 0, 10, {"n": 0}, source_event_seqs=None)
    assert event_records.record_of(event) == event.to_record()
    event.data["n"] = 1  # (an event's data is its own object: a change shows in both)
    assert event_records.record_of(event) == event.to_record() == {"type": "todo/write", "seq": 0, "time": 10, "data": {"n": 1}}
    other = Event("todo/write", 0, 10, {"n": 2})
    assert event_records.records_of([event, other]) == [event.to_record(), other.to_record()]
    for n in range(event_records.LIMIT + 10):  # bounded: a full memo starts over
        event_records.record_of(Event("todo/write", n, 10, {}))
    assert len(event_records._MEMO) <= event_records.LIMIT


@pytest.mark.slow
def test_a_pair_remembered_equal_is_only_that_pair():
    from dsh_sim.evidence.oracles import event_records

    event_records.clear()
    events = _events(3)
    records = [dict(e.to_record()) for e in events]  # equal records, other objects (another decoder's)
    assert event_records.first_mismatch(records, events) is None
    assert event_records.first_mismatch(records, events) is None  # (remembered: the same answer)
    changed = [*records[:1], {**records[1], "time": 99}, records[2]]  # another record at seq 1
    assert event_records.first_mismatch(changed, events) == 1
    assert event_records.first_mismatch(records[:2], events) == 2  # a prefix: where the shorter ends
    assert event_records.first_mismatch(records, events[:1]) == 1
    assert not event_records.same(records[0], events[1])  # a remembered pair says nothing of others
    for n in range(event_records.LIMIT + 10):  # bounded: a full memo starts over
        e = Event("todo/write", n, 10, {})
        assert event_records.same(e.to_record(), e)
    assert len(event_records._EQUAL) <= event_records.LIMIT


def test_the_spec_reader_shares_a_writers_records():
    from dsh_sim.evidence.oracles import spec_log

    spec_log.clear_memos()
    events = _events(4)
    data = _log(events)
    written = spec_log.check_written(data, "zstd")
    torn = spec_log.read_recoverable(data[:-3], "zstd")  # a reader's read of a cut of it
    assert torn.records == written.records[: len(torn.records)]
    assert all(a is b for a, b in zip(torn.records, written.records))


def _shell_tail(call_id: str) -> tuple[dict, ...]:
    block = {"type": "tool-call", "id": call_id, "name": "shell", "arguments": '{"argv": ["write", "f", "hi"]}'}
    result = {"message": {"source": {"callId": call_id}, "content": [{"isError": False, "content": [{"type": "text", "text": "ok"}]}]}}
    return (
        {"type": "assistant/message", "seq": 0, "time": 1, "data": {"turn": 1, "step": 1, "message": {"content": [block]}}},
        {"type": "tool/result", "seq": 1, "time": 2, "data": result},
    )


def test_the_tail_agreement_is_remembered_only_for_the_same_expectation_entries_and_workspace():
    """reference.tail_disagreements is agreement.check of the repaired tail; a change of the
    expectation, of any ledger entry (even at the same length), or of the workspace is judged anew."""
    from dsh_sim.adapters.world import LedgerEntry
    from dsh_sim.evidence.oracles import agreement

    def write(call_id: str, path: str) -> LedgerEntry:
        return LedgerEntry(0, "workspace", "write", call_id, None, True, "applied", 0.0, 1, {"path": path, "text": "hi"}, {}, call_id)

    def verdict(expected: reference.Expected, ledger: list, workspace: str) -> list[str]:
        got = [d.message for d in reference.tail_disagreements(expected, ledger, workspace)]
        assert got == [d.message for d in agreement.check(reference.repaired_tail(expected)[0], ledger, workspace=workspace)]
        return got

    reference.clear_memos()
    expected = reference.Expected(_shell_tail("c1"), ())
    ledger = [write("c1", "/w/f")]
    assert verdict(expected, ledger, "/w") == []
    assert verdict(expected, ledger, "/w") == []  # (remembered)
    assert verdict(expected, [write("c1", "/w/g")], "/w")  # another entry at the same length
    assert verdict(expected, ledger, "/w") == []
    assert verdict(expected, ledger, "/x")  # another workspace: the write went elsewhere
    assert verdict(expected, ledger, "/w") == []
    assert verdict(expected, [], "/w")  # fewer entries
    assert verdict(expected, ledger, "/w") == []
    assert verdict(expected, [*ledger, write("c1", "/w/g")], "/w")  # one more entry
    other = reference.Expected(_shell_tail("c2"), ())  # another expectation: its call never reached the ledger
    assert verdict(other, ledger, "/w")
    assert verdict(expected, ledger, "/w") == []
    reference.clear_memos()
