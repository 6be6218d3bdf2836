"""The agent loop: event order per turn (spec §1.5-§1.6, v3), closing, cancellation, numbering."""

from __future__ import annotations

import os
from typing import Any

import pytest
import trio
import trio.testing

from runtime.ports.model import Finish, TextDelta, ToolCallDelta
from runtime.tools.results import ToolResult
from tests.support.agent import (
    FnTool,
    PartsModel,
    make_ports,
    of_type,
    result_summary,
    runtime,
    stored_events,
    text_response,
    tool_calls_response,
    types,
)

MOCK = trio.testing.MockClock
SYSTEM = "You are a test agent."
ABORTED_BEFORE_DISPATCH = {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"}


def run(main: Any) -> None:
    trio.run(main, clock=MOCK(autojump_threshold=0))


def test_event_order_of_two_turns(tmp_path: Any) -> None:
    async def main() -> None:
        model = PartsModel(
            [
                tool_calls_response([("c1", "t", {"a": 1}), ("c2", "t", "")]),
                text_response("done"),
                text_response("again"),
            ]
        )
        async with runtime(tmp_path, model, [FnTool("t")], system=SYSTEM) as rt:
            agent = await rt.create_agent("order")
            first = await agent.run_turn("go")
            second = await agent.run_turn("more")
            events = agent.session.events
            assert types(events) == [
                "turn/start",
                "step/start",
                "system/message",
                "user/message",
                "request/header",
                "request/context",
                "assistant/message",
                "tool/call",
                "tool/result",
                "tool/call",
                "tool/result",
                "step/end",
                "step/start",
                "assistant/message",
                "step/end",
                "turn/end",
                "turn/start",
                "step/start",
                "user/message",
                "assistant/message",
                "step/end",
                "turn/end",
            ]
            assert [e.seq for e in events] == list(range(len(events)))
            assert (first.turn, first.steps, first.reason) == (1, 2, {"kind": "completed"})
            assert (second.turn, second.steps) == (2, 1)
            by_type = {e.type: e for e in events}
            assert events[0].data == {"turn": 1}
            assert events[1].data == {"turn": 1, "step": 1}
            assert events[2].data["message"]["role"] == "system"
            assert events[2].data["message"]["content"] == [{"type": "text", "text": SYSTEM}]
            user = events[3].data
            assert user["role"] == "user" and user["source"] == {"kind": "user"}
            assert user["content"] == [{"type": "text", "text": "go"}]
            assert all(
                e.surface_op == "append" for e in events if e.type in ("system/message", "user/message", "assistant/message", "tool/result")
            )
            header = by_type["request/header"].data
            assert header["reason"] == "initial" and "system" not in header["header"]
            assert header["header"]["config"] == {"provider": "mock", "model": "mock"}
            assert by_type["request/context"].data == {"provider": "mock", "model": "mock"}
            assistant = events[6].data
            assert (assistant["turn"], assistant["step"]) == (1, 1)
            assert assistant["message"]["role"] == "assistant"
            assert assistant["message"]["source"] == {"kind": "model", "provider": "mock", "model": "mock"}
            assert [b["type"] for b in assistant["message"]["content"]] == ["tool-call", "tool-call"]
            assert assistant["message"]["content"][0] == {"type": "tool-call", "id": "c1", "name": "t", "arguments": '{"a": 1}'}
            assert assistant["usage"] == {"inputTokens": 5, "outputTokens": 5}
            assert [r["chunk"]["type"] for r in assistant["stream"]] == ["tool-call-delta", "tool-call-delta", "usage", "finish"]
            assert "interrupted" not in assistant and events[6].source_event_seqs is None
            call = events[7].data
            assert call == {"turn": 1, "step": 1, "callId": "c1", "name": "t", "arguments": '{"a": 1}'}
            result = events[8]
            assert result.source_event_seqs == (7,)
            assert result.data["message"]["source"] == {"kind": "tool", "callId": "c1"}
            assert result_summary(result) == {"callId": "c1", "isError": False, "error": None, "text": "done-c1"}
            assert events[12].data == {"turn": 1, "step": 2}
            assert events[15].data == {"turn": 1, "reason": {"kind": "completed"}}
            assert events[17].data == {"turn": 2, "step": 1}  # steps restart per turn
            # the second request saw the tool results; the third the whole history
            assert [m["role"] for m in model.requests[1].messages] == ["system", "user", "assistant", "user", "user"]
            assert model.requests[2].turn == 2 and model.requests[2].step == 1

    run(main)


def test_request_header_reasons_initial_resume_change_and_context_only_on_change(tmp_path: Any) -> None:
    async def main() -> None:
        model = PartsModel([text_response("a"), text_response("b"), text_response("c"), text_response("d")])
        async with runtime(tmp_path, model, [FnTool("t")]) as rt:
            agent = await rt.create_agent("headers")
            await agent.run_turn("1")
            await agent.run_turn("2")  # same loop instance, same header: nothing logged
            rt.tools.add(FnTool("u"))
            await agent.run_turn("3")  # tool list changed
            model.model = "mock-2"
            await agent.run_turn("4")  # model changed: header and context
            headers = [
                (e.data["reason"], [t["name"] for t in e.data["header"]["tools"]]) for e in of_type(agent.session.events, "request/header")
            ]
            assert headers == [("initial", ["t"]), ("change", ["t", "u"]), ("change", ["t", "u"])]
            contexts = [e.data for e in of_type(agent.session.events, "request/context")]
            assert contexts == [{"provider": "mock", "model": "mock"}, {"provider": "mock", "model": "mock-2"}]
            await rt.close_agent(agent)
        model2 = PartsModel([text_response("e")], model="mock-2")
        async with runtime(tmp_path, model2, [FnTool("t"), FnTool("u")]) as rt:
            agent, report = await rt.resume_agent("headers")
            assert report.closers == ()
            await agent.run_turn("5")
            tail = agent.session.events[-8:]
            assert types(tail) == [
                "session/end-seed",
                "turn/start",
                "step/start",
                "user/message",
                "request/header",
                "assistant/message",
                "step/end",
                "turn/end",
            ]
            assert tail[4].data["reason"] == "resume"  # first request of a new loop instance; context unchanged

    run(main)


def test_turns_are_numbered_by_one_and_an_empty_turn_has_no_step(tmp_path: Any) -> None:
    async def main() -> None:
        model = PartsModel([text_response("a"), text_response("b")])
        async with runtime(tmp_path, model) as rt:
            agent = await rt.create_agent("numbers")
            outcomes = [await agent.run_turn("x"), await agent.run_turn(None), await agent.run_turn("y")]
            assert [o.turn for o in outcomes] == [1, 2, 3]
            assert [o.steps for o in outcomes] == [1, 0, 1]
            starts = [e.data["turn"] for e in of_type(agent.session.events, "turn/start")]
            ends = [(e.data["turn"], e.data["reason"]["kind"]) for e in of_type(agent.session.events, "turn/end")]
            assert starts == [1, 2, 3] and ends == [(1, "completed"), (2, "completed"), (3, "completed")]
            steps = [(e.data["turn"], e.data["step"]) for e in of_type(agent.session.events, "step/start")]
            assert steps == [(1, 1), (3, 1)]
            assert len(model.requests) == 2

    run(main)


def test_a_failing_stream_still_closes_step_and_turn(tmp_path: Any) -> None:
    async def main() -> None:
        class Exploding(PartsModel):
            async def stream(self, request: Any) -> Any:
                yield TextDelta(0, "partial")
                raise ConnectionError("provider hung up")

        async with runtime(tmp_path, Exploding([])) as rt:
            agent = await rt.create_agent("explodes")
            outcome = await agent.run_turn("go")
            assert types(agent.session.events)[-2:] == ["step/end", "turn/end"]
            assert outcome.reason == {"kind": "error", "error": {"message": "provider hung up", "code": "UNKNOWN"}}
            assert not agent.turn_active

    run(main)


def test_cancellation_mid_stream_keeps_the_delivered_prefix_as_interrupted(tmp_path: Any) -> None:
    async def main() -> None:
        model = PartsModel([[TextDelta(0, "Hel"), TextDelta(0, "lo"), ToolCallDelta(1, "c1", "t", '{"a"'), PartsModel.HANG]])
        tool = FnTool("t")
        async with runtime(tmp_path, model, [tool]) as rt:
            agent = await rt.create_agent("interrupted")
            outcomes: list[Any] = []

            async def turn() -> None:
                outcomes.append(await agent.run_turn("go"))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(turn)
                await model.reached.wait()
                agent.cancel()
            events = agent.session.events
            assert types(events)[-4:] == ["request/context", "assistant/message", "step/end", "turn/end"]
            message = of_type(events, "assistant/message")[0].data
            assert message["interrupted"] is True
            assert message["message"]["content"] == [{"type": "text", "text": "Hello"}]  # no tool call
            assert of_type(events, "tool/call") == [] and tool.calls == []
            assert outcomes[0].reason == {"kind": "aborted", "reason": {"kind": "user"}}
            assert events[-1].data["reason"] == {"kind": "aborted", "reason": {"kind": "user"}}

    run(main)


def test_cancellation_before_any_content_writes_no_assistant_message(tmp_path: Any) -> None:
    async def main() -> None:
        model = PartsModel([[PartsModel.HANG]])
        async with runtime(tmp_path, model) as rt:
            agent = await rt.create_agent("nothing")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(agent.run_turn, "go")
                await model.reached.wait()
                agent.cancel()
            assert types(agent.session.events)[-3:] == ["request/context", "step/end", "turn/end"]

    run(main)


def test_cancel_right_after_the_assistant_message_closes_every_call(tmp_path: Any) -> None:
    async def main() -> None:
        model = PartsModel([tool_calls_response([("c1", "p", {}), ("c2", "p", {})]), text_response("never requested")])
        tool = FnTool("p", parallel=True)
        async with runtime(tmp_path, model, [tool]) as rt:
            agent = await rt.create_agent("cancel-on-message")
            agent.session.subscribe(lambda e: agent.cancel() if e.type == "assistant/message" else None)
            outcome = await agent.run_turn("go")
            events = agent.session.events
            assert tool.calls == []
            assert [e.data["callId"] for e in of_type(events, "tool/call")] == ["c1", "c2"]
            assert [(r["callId"], r["isError"], r["error"]) for r in map(result_summary, of_type(events, "tool/result"))] == [
                ("c1", True, ABORTED_BEFORE_DISPATCH),
                ("c2", True, ABORTED_BEFORE_DISPATCH),
            ]
            assert "interrupted" not in of_type(events, "assistant/message")[0].data
            assert types(events)[-2:] == ["step/end", "turn/end"]
            assert outcome.reason["kind"] == "aborted" and len(model.requests) == 1

    run(main)


def test_cancellation_during_a_tool_body_reports_aborted_and_stops_the_turn(tmp_path: Any) -> None:
    async def main() -> None:
        started = trio.Event()

        async def slow(ex: Any) -> ToolResult:
            started.set()
            await ex.signal.wait()
            return ToolResult.text("finished anyway")

        model = PartsModel([tool_calls_response([("c1", "slow", {})]), text_response("never requested")])
        async with runtime(tmp_path, model, [FnTool("slow", slow)]) as rt:
            agent = await rt.create_agent("cancel-in-body")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(agent.run_turn, "go")
                await started.wait()
                agent.cancel()
            result = result_summary(of_type(agent.session.events, "tool/result")[0])
            assert result["error"] == {"name": "AbortError", "code": "ABORTED"}
            assert result["text"] == "Error: tool call aborted"
            assert len(model.requests) == 1
            assert types(agent.session.events)[-2:] == ["step/end", "turn/end"]

    run(main)


def test_a_pre_step_reject_blocks_the_turn_and_the_step_limit_is_an_error(tmp_path: Any) -> None:
    async def main() -> None:
        model = PartsModel([tool_calls_response([("c1", "t", {})]), tool_calls_response([("c2", "t", {})])])
        async with runtime(tmp_path, model, [FnTool("t")], max_steps=1) as rt:
            agent = await rt.create_agent("limits")
            outcome = await agent.run_turn("go")
            assert outcome.reason["kind"] == "error" and "step limit of 1" in outcome.reason["error"]["message"]
            dispose = rt.hooks.on("agent/pre-step", lambda step, next: "reject")
            outcome = await agent.run_turn("again")
            assert outcome.reason == {"kind": "blocked"}
            assert types(agent.session.events)[-3:] == ["turn/end", "turn/start", "turn/end"]
            dispose()

    run(main)


def test_one_turn_at_a_time_and_torn_down_turns_end_as_aborted(tmp_path: Any) -> None:
    async def main() -> None:
        model = PartsModel([[PartsModel.HANG]])
        async with runtime(tmp_path, model) as rt:
            agent = await rt.create_agent("teardown")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(agent.run_turn, "go")
                await model.reached.wait()
                with pytest.raises(RuntimeError, match="already has a turn in progress"):
                    await agent.run_turn("second")
                nursery.cancel_scope.cancel()
            events = agent.session.events
            assert types(events)[-2:] == ["step/end", "turn/end"]
            assert events[-1].data["reason"] == {"kind": "aborted", "reason": {"kind": "disposed"}}
            assert not agent.turn_active

    run(main)


def test_a_policy_notice_enters_the_next_step_as_a_plugin_message(tmp_path: Any) -> None:
    async def main() -> None:
        model = PartsModel([tool_calls_response([("c1", "switch", {})]), text_response("ok")])
        holder: dict[str, Any] = {}

        async def switch(ex: Any) -> ToolResult:
            holder["rt"].approval.set_policy(ex.agent, "never")
            holder["rt"].approval.set_policy(ex.agent, "never")
            return ToolResult.text("switched")

        async with runtime(tmp_path, model, [FnTool("switch", switch)]) as rt:
            holder["rt"] = rt
            agent = await rt.create_agent("notice")
            await agent.run_turn("go")
            events = agent.session.events
            assert [e.data for e in of_type(events, "approval/policy")] == [{"policy": "never"}]
            plugin_messages = [e for e in of_type(events, "user/message") if e.data["source"]["kind"] == "plugin"]
            assert len(plugin_messages) == 1
            notice = plugin_messages[0]
            assert notice.data["source"] == {"kind": "plugin", "plugin": "user-approval"}
            assert notice.data["content"] == [
                {"type": "text", "text": 'The approval policy changed from "ask" to "never" (changed by the user).'}
            ]
            assert events[notice.seq - 1].type == "step/start" and events[notice.seq - 1].data["step"] == 2

    run(main)


def test_events_reach_disk_in_order_and_close_with_the_runtime(tmp_path: Any) -> None:
    async def main() -> None:
        model = PartsModel([tool_calls_response([("c1", "t", {})]), text_response("done")])
        async with runtime(tmp_path, model, [FnTool("t")], system=SYSTEM) as rt:
            agent = await rt.create_agent("disk", cwd=str(tmp_path))
            await agent.run_turn("go")
            live = [e.to_record() for e in agent.session.events]
        assert [e.to_record() for e in await stored_events(tmp_path, "disk")] == live

    run(main)


def test_a_max_tokens_finish_owes_no_tool_calls_and_ends_the_turn_as_max_tokens(tmp_path: Any) -> None:
    async def main() -> None:
        model = PartsModel([[TextDelta(0, "trunc"), ToolCallDelta(1, "c1", "t", "{}"), Finish("max-tokens")]])
        tool = FnTool("t")
        async with runtime(tmp_path, model, [tool]) as rt:
            agent = await rt.create_agent("max-tokens")
            outcome = await agent.run_turn("go")
            message = of_type(agent.session.events, "assistant/message")[0].data
            assert message["message"]["content"] == [{"type": "text", "text": "trunc"}]
            assert of_type(agent.session.events, "tool/call") == [] and tool.calls == []
            assert outcome.reason == {"kind": "max-tokens"}
            assert agent.session.events[-1].data == {"turn": 1, "reason": {"kind": "max-tokens"}}

    run(main)


def test_an_abort_is_seen_between_parts_even_if_the_adapter_never_yields_to_trio(tmp_path: Any) -> None:
    class CancelAt:
        def __init__(self, point: str) -> None:
            self.point = point
            self.agent: Any = None

        async def at(self, point: str, **details: Any) -> None:
            if point == self.point and self.agent is not None:
                self.agent.cancel()

    async def main() -> None:
        for point, expect_message in (("llm.request", False), ("llm.chunk", True)):
            probe = CancelAt(point)
            model = PartsModel([text_response("one two") + tool_calls_response([("c1", "t", {})])])
            async with runtime(tmp_path / point, model, [FnTool("t")], ports=make_ports(probe)) as rt:
                agent = probe.agent = await rt.create_agent("probe-cancel")
                outcome = await agent.run_turn("go")
                messages = of_type(agent.session.events, "assistant/message")
                assert outcome.reason["kind"] == "aborted"
                assert of_type(agent.session.events, "tool/call") == []
                if expect_message:  # the first part was delivered before the abort was seen
                    assert messages[0].data["interrupted"] is True
                    assert messages[0].data["message"]["content"] == [{"type": "text", "text": "one two"}]
                else:
                    assert messages == []

    run(main)


def test_the_workspace_file_tools_end_to_end(tmp_path: Any) -> None:
    async def main() -> None:
        from runtime.tools.files import ReadFileTool, WriteFileTool

        ws = tmp_path / "ws"
        ws.mkdir()
        ports = make_ports()
        model = PartsModel(
            [
                tool_calls_response(
                    [
                        ("w", "write_file", {"path": "notes.txt", "content": "hi"}),
                        ("r", "read_file", {"path": "notes.txt"}),
                        ("x", "read_file", {"path": "../outside.txt"}),
                    ]
                ),
                text_response("done"),
            ]
        )
        tools = [ReadFileTool(ports.fs, str(ws)), WriteFileTool(ports.fs, str(ws))]
        async with runtime(tmp_path / "sessions", model, tools, ports=ports) as rt:
            agent = await rt.create_agent("files", cwd=str(ws))
            await agent.run_turn("write and read")
            results = [result_summary(e) for e in of_type(agent.session.events, "tool/result")]
        assert (ws / "notes.txt").read_text() == "hi"
        assert results[0]["text"] == "wrote 2 bytes to notes.txt" and results[1]["text"] == "hi"
        assert results[2]["error"] == {"name": "WorkspaceEscapeError", "code": "WORKSPACE_ESCAPE"}
        assert results[2]["text"] == 'Error: path "../outside.txt" is outside the workspace'

    run(main)


def test_the_invariant_checker_rejects_malformed_logs() -> None:
    from runtime.session.session import Session
    from tests.support.agent import StepClock, assert_invariants

    def log(*entries: tuple[str, dict[str, Any]]) -> Any:
        s = Session("inv", StepClock())
        for kind, data in entries:
            s.append(kind, data)
        return s.events

    good = log(
        ("turn/start", {"turn": 1}),
        ("step/start", {"turn": 1, "step": 1}),
        ("step/end", {"turn": 1, "step": 1}),
        ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
    )
    assert_invariants(good)
    for bad in (
        log(("turn/start", {"turn": 2})),  # turns start at 1
        log(("turn/start", {"turn": 1}), ("step/start", {"turn": 1, "step": 2})),  # steps start at 1
        log(("turn/start", {"turn": 1}), ("step/start", {"turn": 1, "step": 1}), ("turn/end", {"turn": 1, "reason": {}})),
        log(("request/header", {"header": {}, "reason": "initial"})),  # outside a turn
        log(("turn/start", {"turn": 1}), ("approval/asked", {"id": "q", "toolName": "t"}), ("turn/end", {"turn": 1, "reason": {}})),
    ):
        with pytest.raises(AssertionError):
            assert_invariants(bad)


def test_a_cancel_during_the_pre_step_barrier_opens_no_step(tmp_path: Any) -> None:
    async def main() -> None:
        model = PartsModel([text_response("never requested")])
        async with runtime(tmp_path, model) as rt:
            agent = await rt.create_agent("pre-step-cancel")

            async def cancel_in_barrier(step: Any, next: Any) -> Any:
                agent.cancel()
                return await next(step)

            rt.hooks.on("agent/pre-step", cancel_in_barrier)
            outcome = await agent.run_turn("go")
            assert types(agent.session.events) == ["turn/start", "turn/end"]
            assert outcome.reason == {"kind": "aborted", "reason": {"kind": "user"}} and model.requests == []

    run(main)


def test_file_tools_do_not_follow_symbolic_links_out_of_the_workspace(tmp_path):
    """A link planted inside the workspace (by a shell call, say) cannot redirect a file tool."""
    import os

    from runtime.adapters import production_ports
    from runtime.agent.signal import AbortSignal
    from runtime.tools.files import ReadFileTool, WorkspaceEscapeError, WriteFileTool
    from runtime.tools.registry import ToolExecution

    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    os.symlink(outside, workspace / "dir-link")
    os.symlink(outside / "secret.txt", workspace / "file-link")
    fs = production_ports().fs

    def call(tool, **arguments):
        ex = ToolExecution(call_id="c", root_call_id="c", name=tool.name, arguments=arguments, raw_arguments="{}", signal=AbortSignal())
        return trio.run(tool.execute, ex)

    write, read = WriteFileTool(fs, str(workspace)), ReadFileTool(fs, str(workspace))
    for tool, args in (
        (write, {"path": "dir-link/pwned.txt", "content": "x"}),
        (write, {"path": "file-link", "content": "x"}),
        (read, {"path": "file-link"}),
        (read, {"path": "dir-link/secret.txt"}),
    ):
        with pytest.raises(WorkspaceEscapeError):
            call(tool, **args)
    assert not (outside / "pwned.txt").exists() and (outside / "secret.txt").read_text() == "secret"
    assert "wrote 2 bytes" in call(write, path="sub.txt", content="ok").content[0]["text"]
    assert call(read, path="sub.txt").content[0]["text"] == "ok"


def test_file_tools_refuse_a_fifo_or_directory_planted_in_the_workspace(tmp_path):
    """A shell call may leave a FIFO in the workspace (``mkfifo`` needs no privilege in either
    sandbox backend): ``read_file`` on it blocked forever in ``open`` and ``write_file`` waited
    for a reader, hanging the turn.  Only regular files are opened; the rest is refused."""
    import os
    import threading

    from runtime.adapters import production_ports
    from runtime.agent.signal import AbortSignal
    from runtime.tools.files import ReadFileTool, WriteFileTool
    from runtime.tools.registry import ToolExecution
    from runtime.tools.results import HarnessError

    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.mkfifo(workspace / "pipe")
    (workspace / "sub").mkdir()
    fs = production_ports().fs
    write, read = WriteFileTool(fs, str(workspace)), ReadFileTool(fs, str(workspace))
    outcomes: list[object] = []

    def calls() -> None:
        for tool, args in ((read, {"path": "pipe"}), (write, {"path": "pipe", "content": "x"}), (read, {"path": "sub"})):
            ex = ToolExecution(call_id="c", root_call_id="c", name=tool.name, arguments=args, raw_arguments="{}", signal=AbortSignal())
            try:
                outcomes.append(trio.run(tool.execute, ex))
            except HarnessError as err:
                outcomes.append(err.code)

    worker = threading.Thread(target=calls, daemon=True)
    worker.start()
    worker.join(20)
    if worker.is_alive():  # unblock the stuck open so the test process can end
        fd = os.open(workspace / "pipe", os.O_RDWR | os.O_NONBLOCK)
        worker.join(5)
        os.close(fd)
        pytest.fail("a file tool blocked on a FIFO in the workspace")
    assert outcomes == ["NOT_A_REGULAR_FILE"] * 3


def test_write_file_refuses_text_with_a_lone_surrogate_before_touching_the_file(tmp_path):
    """The log holds lone surrogates (spec §1.1), so a model's arguments can carry one; it has no
    UTF-8, and the tool refused it only after opening — and truncating — the file it replaces."""
    from runtime.adapters import production_ports
    from runtime.agent.signal import AbortSignal
    from runtime.tools.files import WriteFileTool
    from runtime.tools.registry import ToolExecution
    from runtime.tools.results import HarnessError

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "kept.txt").write_text("before")
    args = {"path": "kept.txt", "content": "a\ud800b"}
    ex = ToolExecution(call_id="c", root_call_id="c", name="write_file", arguments=args, raw_arguments="{}", signal=AbortSignal())
    with pytest.raises(HarnessError, match="not UTF-8 text: a lone surrogate at index 1") as err:
        trio.run(WriteFileTool(production_ports().fs, str(workspace)).execute, ex)
    assert err.value.code == "INVALID_ARGUMENTS"
    assert (workspace / "kept.txt").read_text() == "before"
    named = {"path": "x\udc80.txt", "content": "ok"}  # the OS could name it (surrogateescape: byte 0x80); SimFS too
    ex = ToolExecution(call_id="c", root_call_id="c", name="write_file", arguments=named, raw_arguments="{}", signal=AbortSignal())
    with pytest.raises(HarnessError, match="path is not UTF-8 text: a lone surrogate at index 1"):
        trio.run(WriteFileTool(production_ports().fs, str(workspace)).execute, ex)
    assert sorted(os.listdir(workspace)) == ["kept.txt"]


def test_text_streamed_in_halves_of_a_surrogate_pair_is_joined_as_javascript_joins_it(tmp_path):
    """A provider counting UTF-16 units may cut an astral character between two deltas: each
    chunk then holds a lone surrogate (stored as is, in the message's stream), and the message joins them into the one
    character, as JavaScript's concatenation does — kept as two code points, the message was
    refused as a split pair and the turn ended in error."""
    from runtime.adapters import production_ports
    from runtime.adapters.script_model import ScriptedResponse, ScriptModel
    from runtime.agent.runtime import RuntimeConfig, open_runtime
    from runtime.ports.model import Finish, TextDelta, Usage

    class Halves(ScriptedResponse):
        def parts(self):  # type: ignore[no-untyped-def]
            return [TextDelta(0, "smile \ud83d"), TextDelta(0, "\ude00!"), Usage(input_tokens=1, output_tokens=1), Finish("stop")]

    workspace = tmp_path / "ws"
    workspace.mkdir()

    async def main() -> list[Any]:
        config = RuntimeConfig(root=str(tmp_path / "root"), compression="none")
        async with open_runtime(production_ports(), config, ScriptModel([Halves()]), []) as rt:
            agent = await rt.create_agent("s", cwd=str(workspace))
            outcome = await agent.run_turn("hi")
            assert outcome.reason == {"kind": "completed"}
            events = list(agent.session.events)
            await rt.close_agent(agent)
            return events

    events = trio.run(main)
    [data] = [e.data for e in events if e.type == "assistant/message"]
    assert data["message"]["content"] == [{"type": "text", "text": "smile \U0001f600!"}]
    assert "'smile \\ud83d'" in repr(data["stream"]) and "'\\ude00!'" in repr(data["stream"])  # the chunks as streamed
