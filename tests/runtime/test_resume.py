"""Resume after an interrupted log: durable closers, the seed, continuation (spec §2, §10.7)."""

from __future__ import annotations

import glob
from collections.abc import Sequence
from typing import Any

import pytest
import trio
import trio.testing

from dsh_sim.mutants import catalogue as mutants
from runtime.agent.loop import user_message
from runtime.agent.runtime import RuntimeConfig, open_runtime
from runtime.persistence.backend import JsonlBackend
from runtime.persistence.errors import SessionPersistenceCorruptionError
from runtime.persistence.header import SessionHeader
from runtime.session.events import Event
from runtime.session.repair import NOT_STARTED_TEXT, OUTCOME_UNKNOWN_TEXT
from runtime.session.session import Session
from tests.support.agent import (
    EPOCH_MS,
    FnTool,
    PartsModel,
    StepClock,
    make_ports,
    of_type,
    result_summary,
    runtime,
    stored_events,
    text_response,
    types,
)

MOCK = trio.testing.MockClock
UNKNOWN = {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
NOT_STARTED = {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}


def run(main: Any) -> None:
    trio.run(main, clock=MOCK(autojump_threshold=0))


def interrupted_log(
    *, calls: Sequence[str] = ("c1", "c2"), recorded: Sequence[str] = ("c1",), stop_after_request: bool = False
) -> list[Event]:
    """A crash tail: the assistant asked for ``calls``; only ``recorded`` got a ``tool/call``."""
    s = Session("interrupted", StepClock())
    s.append("turn/start", {"turn": 1})
    s.append("step/start", {"turn": 1, "step": 1})
    s.append("user/message", user_message("u1", "go"), surface_op="append")
    s.append("request/header", {"header": {"config": {"provider": "mock", "model": "mock"}, "tools": []}, "reason": "initial"})
    s.append("request/context", {"provider": "mock", "model": "mock"})
    if not stop_after_request:
        content = [{"type": "tool-call", "id": c, "name": "t", "arguments": "{}"} for c in calls]
        s.append(
            "assistant/message",
            {
                "turn": 1,
                "step": 1,
                "message": {
                    "id": "a1",
                    "role": "assistant",
                    "content": content,
                    "source": {"kind": "model", "provider": "mock", "model": "mock"},
                },
                "stream": [],
            },
            surface_op="append",
        )
        for c in recorded:
            s.append("tool/call", {"turn": 1, "step": 1, "callId": c, "name": "t", "arguments": "{}"})
    return list(s.events)


async def write_log(root: Any, events: Sequence[Event], *, compression: str = "zstd") -> None:
    backend = JsonlBackend(str(root), make_ports(), compression=compression)
    handle = await backend.create(SessionHeader(id="interrupted", created_at=EPOCH_MS))
    await handle.append(events)
    await handle.close()


def test_resume_appends_durable_closers_seeds_and_continues(tmp_path: Any) -> None:
    async def main() -> None:
        log = interrupted_log()
        await write_log(tmp_path, log)
        model = PartsModel([text_response("I will check first.")])
        async with runtime(tmp_path, model, [FnTool("t")]) as rt:
            agent, report = await rt.resume_agent("interrupted")
            closers = report.closers
            assert types(closers) == ["tool/result", "tool/result", "step/end", "turn/end"]
            assert [c.seq for c in closers] == [7, 8, 9, 10]
            assert {c.time for c in closers} == {log[-1].time}
            assert report.verdicts == {"c1": "TOOL_OUTCOME_UNKNOWN", "c2": "TOOL_NOT_STARTED"}
            unknown, not_started = closers[0], closers[1]
            assert unknown.data["error"] == UNKNOWN and unknown.source_event_seqs == (6,)
            assert result_summary(unknown)["text"] == OUTCOME_UNKNOWN_TEXT and "Do not retry blindly." in OUTCOME_UNKNOWN_TEXT
            assert unknown.data["message"]["id"] == "interrupted-tool-result-c1-7"
            assert not_started.data["error"] == NOT_STARTED and not_started.source_event_seqs is None
            assert result_summary(not_started)["text"] == NOT_STARTED_TEXT
            assert all(c.surface_op == "append" for c in closers[:2])
            assert closers[2].data == {"turn": 1, "step": 1}
            assert closers[3].data == {"turn": 1, "reason": {"kind": "interrupted"}}
            # the closers are durable before the agent does anything
            on_disk = await stored_events(tmp_path, "interrupted")
            assert [e.to_record() for e in on_disk[:11]] == [e.to_record() for e in log + list(closers)]
            assert types(on_disk[11:]) in ([], ["session/end-seed"])  # the seed may already be written behind
            # the seed: stored prefix + closers, then session/end-seed at the next seq
            events = agent.session.events
            assert len(events) == 12 and events[11].type == "session/end-seed" and events[11].data == {}
            assert agent.session.first_live_seq == 11
            outcome = await agent.run_turn("what happened?")
            assert outcome.turn == 2
            tail = agent.session.events[12:]
            assert [e.seq for e in tail] == list(range(12, 12 + len(tail)))
            assert types(tail) == [
                "turn/start",
                "step/start",
                "user/message",
                "request/header",
                "assistant/message",
                "step/end",
                "turn/end",
            ]
            assert tail[3].data["reason"] == "resume"
            seen = [m for m in model.requests[0].messages if m.get("source", {}).get("kind") == "tool"]
            assert [m["source"]["callId"] for m in seen] == ["c1", "c2"]
            await rt.close_agent(agent)
            final = await stored_events(tmp_path, "interrupted")
            assert [e.seq for e in final] == list(range(len(final))) and len(final) == len(agent.session)

        async with runtime(tmp_path, PartsModel([])) as rt:
            again, report2 = await rt.resume_agent("interrupted")
            assert report2.closers == ()  # idempotent: a balanced log yields nothing
            added = again.session.events[len(final) :]
            assert types(added) == ["session/end-seed"]
        after = await stored_events(tmp_path, "interrupted")
        assert types(after) == types(final) + ["session/end-seed"]
        assert len(of_type(after, "tool/result")) == 2 and len(of_type(after, "turn/end")) == 2

    run(main)


def test_resume_after_a_crash_at_request_dispatch_closes_step_and_turn(tmp_path: Any) -> None:
    async def main() -> None:
        await write_log(tmp_path, interrupted_log(stop_after_request=True))
        async with runtime(tmp_path, PartsModel([])) as rt:
            agent, report = await rt.resume_agent("interrupted")
            assert types(report.closers) == ["step/end", "turn/end"]
            assert report.verdicts == {}
        stored = await stored_events(tmp_path, "interrupted")
        assert types(stored) == [
            "turn/start",
            "step/start",
            "user/message",
            "request/header",
            "request/context",
            "step/end",
            "turn/end",
            "session/end-seed",
        ]

    run(main)


def test_calls_without_a_recorded_start_are_not_started(tmp_path: Any) -> None:
    async def main() -> None:
        await write_log(tmp_path, interrupted_log(calls=("a", "b"), recorded=()))
        async with runtime(tmp_path, PartsModel([])) as rt:
            _, report = await rt.resume_agent("interrupted")
            assert report.verdicts == {"a": "TOOL_NOT_STARTED", "b": "TOOL_NOT_STARTED"}

    run(main)


def test_a_balanced_log_resumes_without_closers(tmp_path: Any) -> None:
    async def main() -> None:
        model = PartsModel([text_response("hi")])
        async with runtime(tmp_path, model) as rt:
            agent = await rt.create_agent("balanced")
            await agent.run_turn("hello")
        before = await stored_events(tmp_path, "balanced")
        async with runtime(tmp_path, PartsModel([])) as rt:
            agent, report = await rt.resume_agent("balanced")
            assert report.closers == () and report.torn is None
            assert agent.session.events[-1].type == "session/end-seed"
        assert types(await stored_events(tmp_path, "balanced")) == types(before) + ["session/end-seed"]

    run(main)


def test_a_torn_raw_tail_is_truncated_before_the_closers(tmp_path: Any) -> None:
    async def main() -> None:
        log = interrupted_log()
        await write_log(tmp_path, log, compression="none")
        [path] = glob.glob(f"{tmp_path}/**/session.v3.jsonl", recursive=True)
        with open(path, "ab") as f:
            f.write(b'{"type":"tool/result","seq":7,"time":17600000')  # a torn final line
        async with runtime(tmp_path, PartsModel([]), compression="none") as rt:
            agent, report = await rt.resume_agent("interrupted")
            assert report.torn is not None
            assert [c.seq for c in report.closers] == [7, 8, 9, 10]
        stored = await stored_events(tmp_path, "interrupted", compression="none")
        assert [e.seq for e in stored] == list(range(12))
        with open(path, "rb") as f:
            assert b'"time":17600000{' not in f.read() and f.tell() > 0  # the torn bytes are gone from the file

    run(main)


@pytest.mark.parametrize("mutant", ["repair.not_started_for_recorded", "repair.seq_gap"])
def test_the_resume_checks_detect_broken_repair(tmp_path: Any, mutant: str) -> None:
    async def check(root: Any) -> None:
        await write_log(root, interrupted_log())
        async with runtime(root, PartsModel([])) as rt:
            _, report = await rt.resume_agent("interrupted")
            assert report.verdicts == {"c1": "TOOL_OUTCOME_UNKNOWN", "c2": "TOOL_NOT_STARTED"}
            assert [c.seq for c in report.closers] == [7, 8, 9, 10]

    with mutants.enabled([mutant]), pytest.raises(BaseException) as info:
        run(lambda: check(tmp_path / "mutant"))
    assert info.errisinstance((AssertionError, BaseExceptionGroup, Exception))
    run(lambda: check(tmp_path / "clean"))


def test_an_open_turn_whose_data_repair_cannot_read_is_refused_as_corrupt(tmp_path: Any) -> None:
    """A ``turn/start`` without its turn once ended a resume in a KeyError from repair."""

    async def main() -> None:
        log = interrupted_log()[:1]
        await write_log(tmp_path, [Event("turn/start", 0, log[0].time, {"turn_number": 1})])
        before = await stored_events(tmp_path, "interrupted")
        # open_runtime itself: the tests' runtime() checks the logs it leaves, and this one is the bad input
        async with open_runtime(make_ports(), RuntimeConfig(root=str(tmp_path)), PartsModel([]), (), ()) as rt:
            with pytest.raises(
                SessionPersistenceCorruptionError, match=r"turn/start at seq 0 has data repair cannot read \(KeyError: 'turn'\)"
            ):
                await rt.resume_agent("interrupted")
        assert await stored_events(tmp_path, "interrupted") == before  # nothing appended

    run(main)
