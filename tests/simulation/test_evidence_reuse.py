"""What explore shares between the points it records is never stale: the evidence reused while
its inputs are unchanged is what a fresh computation gives after every change the harness makes,
and the history's acknowledged map, shared with snapshots, is copied before either side changes it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_sim.adapters.world import LedgerEntry
from dsh_sim.engine import crash
from dsh_sim.engine.history import History
from runtime.adapters.script_model import ScriptedResponse, ScriptedToolCall
from runtime.session.events import Event

CALLS = [f"c{i}" for i in range(4)]


def _message(seq: int, call: str) -> Event:
    content = [{"type": "tool-call", "id": call, "name": "pay", "arguments": "{}"}]
    return Event("assistant/message", seq, 0, {"message": {"role": "assistant", "content": content}})


def _event(seq: int, kind: str, call: str) -> Event:
    if kind == "message":
        return _message(seq, call)
    if kind == "call":
        return Event("tool/call", seq, 0, {"callId": call})
    return Event("tool/result", seq, 0, {"message": {"source": {"kind": "tool", "callId": call}}})


changes = st.lists(
    st.tuples(
        st.sampled_from(["event", "ledger", "script", "consume", "ack", "same"]),
        st.sampled_from(["message", "call", "result"]),
        st.sampled_from(CALLS),
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(changes)
def test_reused_evidence_is_what_a_fresh_computation_gives(steps) -> None:  # type: ignore[no-untyped-def]
    memo = crash._LastEvidence()
    log: list[Event] = []
    events: tuple[Event, ...] = ()
    ledger: list[LedgerEntry] = []
    scripted: list[ScriptedResponse] = []
    acked: dict[int, Event] = {}
    for change, kind, call in steps:
        if change == "event":
            log.append(_event(len(log), kind, call))
            events = tuple(log)  # (a session hands out a new view after an append)
        elif change == "ledger":
            ledger.append(LedgerEntry(len(ledger), "payments", "charge", call, None, True, "applied", 0.0, 1))
        elif change == "script":
            scripted.append(ScriptedResponse(tool_calls=(ScriptedToolCall(call, "pay", {}),)))
        elif change == "consume" and scripted:
            scripted.pop(0)
        elif change == "ack" and log:
            acked[len(acked) % len(log)] = log[len(acked) % len(log)]
        boundaries, in_memory = memo.of(events, True, ledger, scripted, acked)
        assert boundaries == crash.call_boundaries(events, ledger, scripted, acked)
        assert in_memory == events


def _history() -> History:
    history = History()
    history.acknowledged(1, (Event("todo/write", 0, 0, {}),), b"log")
    return history


def test_a_snapshot_keeps_what_was_acknowledged_when_it_was_taken() -> None:
    history = _history()
    snapshot = history.snapshot()
    assert snapshot.acked is history.acked  # shared until one of them changes it
    history.acknowledged(1, (Event("todo/write", 1, 0, {}),), b"log+")
    assert sorted(snapshot.acked) == [0] and sorted(history.acked) == [0, 1]
    child = snapshot.snapshot()
    child.committed_at_open((Event("todo/write", 0, 0, {}), Event("todo/write", 1, 0, {})), 0, None, None)
    assert sorted(child.acked) == [0, 1] and sorted(snapshot.acked) == [0]


def test_the_acknowledged_end_follows_every_acknowledgement() -> None:
    history = _history()
    assert history.acked_end() == 1
    history.acknowledged(1, (Event("todo/write", 3, 0, {}),), b"log++")
    snapshot = history.snapshot()
    assert snapshot.acked_end() == history.acked_end() == max(history.acked) + 1 == 4
    snapshot.committed_at_open(tuple(Event("todo/write", i, 0, {}) for i in range(6)), 1, None, None)
    assert snapshot.acked_end() == 5 == max(snapshot.acked) + 1 and history.acked_end() == 4
