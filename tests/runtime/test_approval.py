"""User approval (spec §6; reference tests §8.8, adapted) and the registry's approval mapping."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from dsh_sim.mutants import catalogue as mutants
from runtime.agent.approval import (
    APPROVAL_OUTCOMES,
    ASK_CONTEXT,
    NEVER_CONTEXT,
    ApprovalOutsideTurnError,
    ApprovalRequest,
    ApprovalService,
    effective_approval_policy,
)
from runtime.agent.hooks import Hooks, mount
from runtime.agent.signal import AbortSignal
from runtime.ports import NULL_PROBE
from runtime.session.session import Session
from runtime.tools import results as R
from runtime.tools.registry import Ask, ToolRegistry
from runtime.tools.results import ToolResult
from tests.support.agent import (
    FakeAgent,
    FnTool,
    StepClock,
    execution,
    of_type,
    open_turn_session,
)

MOCK = trio.testing.MockClock


def setup(policy: str = "ask", session: Session | None = None) -> tuple[Hooks, ApprovalService, FakeAgent, Any]:
    hooks = Hooks()
    registry = ToolRegistry(hooks, NULL_PROBE, [])
    service = ApprovalService(registry, policy=policy)
    ctx = mount(hooks, service)
    return hooks, service, FakeAgent(open_turn_session() if session is None else session), ctx


def pair(agent: FakeAgent) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    events = agent.session.events
    return [e.data for e in of_type(events, "approval/asked")], [e.data for e in of_type(events, "approval/decided")]


# ----------------------------------------------------------------- the open-turn precondition


@pytest.mark.parametrize("turn_open", [None, False], ids=["idle", "closed-turn"])
def test_asking_outside_an_open_turn_throws_before_appending(turn_open: bool | None) -> None:
    async def main() -> None:
        session = Session("s", StepClock()) if turn_open is None else open_turn_session(turn_open=False)
        _, service, agent, _ = setup(session=session)
        before = len(session)
        with pytest.raises(ApprovalOutsideTurnError, match="outside an open turn"):
            await service.request(agent, "echo")
        assert len(session) == before

    trio.run(main)


# ----------------------------------------------------------------- the audit pair


def test_nobody_listening_fails_closed_with_a_paired_audit() -> None:
    async def main() -> None:
        _, service, agent, _ = setup()
        outcome = await service.request(agent, "echo", call_id="call-1", reason="hook says ask")
        assert outcome == "unavailable"
        asked, decided = pair(agent)
        assert len(asked) == 1 and len(decided) == 1
        request_id = asked[0]["id"]
        assert asked[0] == {"id": request_id, "toolName": "echo", "callId": "call-1", "reason": "hook says ask"}
        assert decided[0] == {"id": request_id, "outcome": "unavailable"}
        assert agent.session.events[-2].type == "approval/asked" and agent.session.events[-1].type == "approval/decided"

    trio.run(main)


def test_absent_optionals_are_omitted_from_the_question() -> None:
    async def main() -> None:
        _, service, agent, _ = setup()
        await service.request(agent, "echo")
        asked, _ = pair(agent)
        assert list(asked[0]) == ["id", "toolName"]

    trio.run(main)


def test_a_listener_receives_the_request_and_the_agent() -> None:
    async def main() -> None:
        hooks, service, agent, _ = setup()
        seen: list[ApprovalRequest] = []

        async def answerer(req: ApprovalRequest, next: Any) -> str:
            seen.append(req)
            return "allowed-once"

        hooks.on("approval/request", answerer)
        assert await service.request(agent, "echo", call_id="call-9", reason="why") == "allowed-once"
        asked, decided = pair(agent)
        assert seen[0].agent is agent and seen[0].tool_name == "echo"
        assert (seen[0].call_id, seen[0].reason, seen[0].id) == ("call-9", "why", asked[0]["id"])
        assert decided[0]["outcome"] == "allowed-once"

    trio.run(main)


@pytest.mark.parametrize("failing", ["approval/asked", "approval/decided"])
def test_an_append_that_throws_propagates(failing: str) -> None:
    class BrokenSession(Session):
        def append(self, type: str, data: Any, **kw: Any) -> Any:
            if type == failing:
                raise OSError("append failed")
            return super().append(type, data, **kw)

    async def main() -> None:
        session = BrokenSession("s", StepClock())
        session.append("turn/start", {"turn": 1})
        _, service, agent, _ = setup(session=session)
        with pytest.raises(OSError, match="append failed"):
            await service.request(agent, "echo")
        assert not of_type(session.events, "approval/decided")

    trio.run(main)


def test_the_first_answering_listener_wins_and_next_ends_at_unavailable() -> None:
    async def main() -> None:
        hooks, service, agent, _ = setup()
        consulted: list[str] = []

        async def passes(req: Any, next: Any) -> str:
            consulted.append("passes")
            return await next(req)

        async def answers(req: Any, next: Any) -> str:
            consulted.append("answers")
            return "rejected"

        async def never_reached(req: Any, next: Any) -> str:
            consulted.append("late")
            return "allowed-once"

        hooks.on("approval/request", passes)
        assert await service.request(agent, "echo") == "unavailable"  # next() alone ends at unavailable
        hooks.on("approval/request", answers)
        hooks.on("approval/request", never_reached)
        assert await service.request(agent, "echo") == "rejected"
        assert consulted == ["passes", "passes", "answers"]

    trio.run(main)


@pytest.mark.parametrize("style", ["async", "sync"])
def test_a_throwing_answerer_fails_closed(style: str) -> None:
    async def main() -> None:
        hooks, service, agent, _ = setup()

        async def async_thrower(req: Any, next: Any) -> str:
            raise RuntimeError("answerer exploded")

        def sync_thrower(req: Any, next: Any) -> str:
            raise RuntimeError("answerer exploded")

        hooks.on("approval/request", async_thrower if style == "async" else sync_thrower)
        assert await service.request(agent, "echo") == "unavailable"
        assert pair(agent)[1][0]["outcome"] == "unavailable"

    trio.run(main)


def test_a_rogue_answer_outside_the_vocabulary_is_unavailable() -> None:
    async def main() -> None:
        hooks, service, agent, _ = setup()
        hooks.on("approval/request", lambda req, next: "yolo")
        assert await service.request(agent, "echo") == "unavailable"
        assert pair(agent)[1][0]["outcome"] == "unavailable"
        assert "yolo" not in APPROVAL_OUTCOMES

    trio.run(main)


def test_a_pre_aborted_signal_is_cancelled_without_consulting_anyone() -> None:
    async def main() -> None:
        hooks, service, agent, _ = setup()
        consulted: list[str] = []
        hooks.on("approval/request", lambda req, next: consulted.append("x") or "allowed-once")
        signal = AbortSignal()
        signal.abort({"kind": "user"})
        assert await service.request(agent, "echo", signal=signal) == "cancelled"
        assert consulted == []
        asked, decided = pair(agent)
        assert len(asked) == 1 and decided == [{"id": asked[0]["id"], "outcome": "cancelled"}]

    trio.run(main)


def test_abort_mid_question_cancels_and_discards_the_late_answer() -> None:
    async def main() -> None:
        hooks, service, agent, _ = setup()
        asked_event = trio.Event()
        answer_now = trio.Event()
        late: list[str] = []

        async def slow(req: Any, next: Any) -> str:
            asked_event.set()
            with trio.CancelScope(shield=True):  # a stubborn answerer that answers anyway
                await answer_now.wait()
            late.append("answered")
            raise RuntimeError("late rejection after abort")  # swallowed: outcome already cancelled

        hooks.on("approval/request", slow)
        signal = AbortSignal()
        outcomes: list[str] = []

        async def ask() -> None:
            outcomes.append(await service.request(agent, "echo", signal=signal))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask)
            await asked_event.wait()
            signal.abort({"kind": "user"})
            answer_now.set()
        assert outcomes == ["cancelled"] and late == ["answered"]
        _, decided = pair(agent)
        assert [d["outcome"] for d in decided] == ["cancelled"]

    trio.run(main)


def test_a_plain_answerer_is_cancelled_by_the_abort() -> None:
    async def main() -> None:
        hooks, service, agent, _ = setup()

        async def forever(req: Any, next: Any) -> str:
            await trio.sleep_forever()
            return "allowed-once"

        hooks.on("approval/request", forever)
        signal = AbortSignal()
        outcomes: list[str] = []

        async def ask() -> None:
            outcomes.append(await service.request(agent, "echo", signal=signal))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask)
            await trio.sleep(5)
            signal.abort()
        assert outcomes == ["cancelled"]
        assert [d["outcome"] for d in pair(agent)[1]] == ["cancelled"]

    trio.run(main, clock=MOCK(autojump_threshold=0))


def test_torn_down_from_outside_the_pair_is_still_closed() -> None:
    async def main() -> None:
        hooks, service, agent, _ = setup()

        async def forever(req: Any, next: Any) -> str:
            await trio.sleep_forever()
            return "allowed-once"

        hooks.on("approval/request", forever)
        with trio.move_on_after(1):
            await service.request(agent, "echo")
        asked, decided = pair(agent)
        assert decided == [{"id": asked[0]["id"], "outcome": "cancelled"}]

    trio.run(main, clock=MOCK(autojump_threshold=0))


def test_every_request_gets_a_fresh_id() -> None:
    async def main() -> None:
        _, service, agent, _ = setup()
        for _ in range(3):
            await service.request(agent, "echo")
        asked, decided = pair(agent)
        ids = [a["id"] for a in asked]
        assert len(set(ids)) == 3 and [d["id"] for d in decided] == ids

    trio.run(main)


def test_a_disposed_listener_is_removed() -> None:
    async def main() -> None:
        hooks, service, agent, _ = setup()
        dispose = hooks.on("approval/request", lambda req, next: "allowed-once")
        assert await service.request(agent, "echo") == "allowed-once"
        dispose()
        assert await service.request(agent, "echo") == "unavailable"

    trio.run(main)


# ----------------------------------------------------------------- policy


def test_the_policy_is_the_last_logged_switch() -> None:
    session = open_turn_session()
    assert effective_approval_policy(session.events, "ask") == "ask"
    session.append("approval/policy", {"policy": "never"})
    session.append("approval/policy", {"policy": "ask"})
    assert effective_approval_policy(session.events, "never") == "ask"
    session.append("approval/policy", {"policy": "never", "source": "delegation"})
    assert effective_approval_policy(session.events, "ask") == "never"


def test_an_invalid_policy_throws_before_appending() -> None:
    _, service, agent, _ = setup()
    before = len(agent.session)
    with pytest.raises(TypeError, match='approval policy must be one of "ask" or "never"'):
        service.set_policy(agent, "always")  # type: ignore[arg-type]
    assert len(agent.session) == before and agent.notices == []
    with pytest.raises(TypeError, match='approval policy must be one of "ask" or "never"'):
        ApprovalService(ToolRegistry(Hooks(), NULL_PROBE), policy="sometimes")
    assert ApprovalService(ToolRegistry(Hooks(), NULL_PROBE)).default_policy == "ask"


def test_config_never_rejects_without_consulting_the_answerer_but_logs_the_pair() -> None:
    async def main() -> None:
        hooks = Hooks()
        consulted: list[str] = []
        hooks.on("approval/request", lambda req, next: consulted.append("before") or "allowed-once")
        registry = ToolRegistry(hooks, NULL_PROBE)
        service = ApprovalService(registry, policy="never")
        mount(hooks, service)
        hooks.on("approval/request", lambda req, next: consulted.append("prepended") or "allowed-once", prepend=True)
        agent = FakeAgent(open_turn_session())
        assert await service.request(agent, "echo", call_id="c") == "rejected"
        assert consulted == []
        asked, decided = pair(agent)
        assert decided == [{"id": asked[0]["id"], "outcome": "rejected"}]

    trio.run(main)


def test_the_session_override_beats_the_config_in_both_directions() -> None:
    async def main() -> None:
        hooks, service, agent, _ = setup(policy="never")
        hooks.on("approval/request", lambda req, next: "allowed-once")
        agent.session.append("approval/policy", {"policy": "ask"})
        assert await service.request(agent, "echo") == "allowed-once"
        hooks2, service2, agent2, _ = setup(policy="ask")
        hooks2.on("approval/request", lambda req, next: "allowed-once")
        agent2.session.append("approval/policy", {"policy": "never"})
        assert await service2.request(agent2, "echo") == "rejected"

    trio.run(main)


def test_set_policy_twice_logs_one_switch_and_queues_one_notice() -> None:
    _, service, agent, _ = setup()
    service.set_policy(agent, "never")
    service.set_policy(agent, "never")
    assert [e.data for e in of_type(agent.session.events, "approval/policy")] == [{"policy": "never"}]
    assert agent.notices == [('The approval policy changed from "ask" to "never" (changed by the user).', "user-approval")]
    assert service.policy(agent) == "never"


def test_context_strings_are_exact() -> None:
    _, service, agent, _ = setup()
    assert (
        service.context(agent)
        == ASK_CONTEXT
        == (
            "Approval policy: ask. Operations that require approval may ask through the configured answerers; "
            "without an available answerer, the request fails closed."
        )
    )
    service.set_policy(agent, "never")
    assert (
        service.context(agent)
        == NEVER_CONTEXT
        == (
            "Approval prompts are disabled in this session: actions that require approval are rejected automatically "
            "— do not request sandbox escalation (do not set `sandbox_permissions`)."
        )
    )


# ----------------------------------------------------------------- the registry's mapping (§6)


def registry_with(policy: str | None, answer: Any = None) -> tuple[ToolRegistry, Hooks, FnTool, list[str]]:
    hooks = Hooks()
    tool = FnTool("echo", requires_approval=True)
    registry = ToolRegistry(hooks, NULL_PROBE, [tool])
    post: list[str] = []
    hooks.on("tools/post-execute", lambda pair, next: post.append(pair[0].call_id) or next(pair))
    if policy is not None:
        mount(hooks, ApprovalService(registry, policy=policy))
    if answer is not None:
        hooks.on("approval/request", answer)
    return registry, hooks, tool, post


def text(result: ToolResult) -> str:
    return result.content[0]["text"]


@pytest.mark.parametrize(
    ("policy", "answer", "expected"),
    [
        ("never", None, 'Error: the user rejected tool "echo"'),
        ("ask", lambda req, next: "rejected", 'Error: the user rejected tool "echo"'),
        ("ask", lambda req, next: "cancelled", 'Error: approval for tool "echo" was cancelled'),
        ("ask", None, 'Error: tool "echo" requires approval, but no approval channel is available'),
        (None, None, 'Error: tool "echo" requires approval'),
    ],
    ids=["never", "rejected", "cancelled", "unavailable", "no-service-with-reason"],
)
def test_registry_maps_outcomes_to_deny_texts(policy: str | None, answer: Any, expected: str) -> None:
    async def main() -> None:
        registry, _, tool, post = registry_with(policy, answer)
        agent = FakeAgent(open_turn_session())
        result = await registry.run(execution(registry, "echo", agent=agent))
        assert result.is_error and text(result) == expected
        assert tool.calls == []
        assert post == ["call-1"]  # a deny still goes through post-execute

    trio.run(main)


def test_registry_deny_texts_without_a_reason_service_or_agent() -> None:
    async def main() -> None:
        registry, hooks, _, _ = registry_with(None)
        hooks.on("tools/pre-execute", lambda ex, next: Ask())
        result = await registry.run(execution(registry, "echo", agent=FakeAgent(open_turn_session())))
        assert text(result) == 'Error: tool "echo" requires approval (not yet supported)'
        registry2, _, _, _ = registry_with("ask", lambda req, next: "allowed-once")
        result = await registry2.run(execution(registry2, "echo", agent=None))
        assert text(result) == 'Error: tool "echo" requires approval, but the call has no agent to route it through'

    trio.run(main)


def test_allowed_once_runs_the_body_for_that_call_only() -> None:
    async def main() -> None:
        answers = iter(["allowed-once", "rejected"])
        registry, _, tool, _ = registry_with("ask", lambda req, next: next_answer())

        def next_answer() -> str:
            return next(answers)

        agent = FakeAgent(open_turn_session())
        first = await registry.run(execution(registry, "echo", call_id="a", agent=agent))
        second = await registry.run(execution(registry, "echo", call_id="b", agent=agent))
        assert not first.is_error and second.is_error and tool.calls == ["a"]
        assert [a["callId"] for a in pair(agent)[0]] == ["a", "b"]

    trio.run(main)


def test_cancelled_approval_of_a_cancelled_call_is_aborted_before_dispatch() -> None:
    async def main() -> None:
        asked = trio.Event()

        async def waits(req: Any, next: Any) -> str:
            asked.set()
            await trio.sleep_forever()
            return "allowed-once"

        registry, _, tool, post = registry_with("ask", waits)
        ex = execution(registry, "echo", agent=FakeAgent(open_turn_session()))
        results: list[ToolResult] = []

        async def run() -> None:
            results.append(await registry.run(ex))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await asked.wait()
            ex.signal.abort({"kind": "user"})
        assert results == [R.aborted_before_dispatch()] and tool.calls == [] and post == []

    trio.run(main)


def test_rejected_approval_stays_a_rejection_even_if_the_call_is_cancelled_later() -> None:
    async def main() -> None:
        registry, hooks, tool, _ = registry_with("ask")
        agent = FakeAgent(open_turn_session())
        ex = execution(registry, "echo", agent=agent)

        def cancel_once_decided(event: Any) -> None:
            if event.type == "approval/decided":
                ex.signal.abort({"kind": "user"})  # the caller is cancelled after the answer "no"

        agent.session.subscribe(cancel_once_decided)
        hooks.on("approval/request", lambda req, next: "rejected")
        result = await registry.run(ex)
        assert text(result) == 'Error: the user rejected tool "echo"' and tool.calls == []

    trio.run(main)


def test_a_failing_answerer_never_grants(monkeypatch: pytest.MonkeyPatch) -> None:
    """The throwing-answerer check detects the fail-open mutant (the check guards the bug)."""

    async def check() -> None:
        registry, _, tool, _ = registry_with("ask", _raise)
        await registry.run(execution(registry, "echo", agent=FakeAgent(open_turn_session())))
        assert tool.calls == []

    trio.run(check)
    with mutants.enabled(["approval.fail_open_on_answerer_error"]), pytest.raises(AssertionError):
        trio.run(check)


def _raise(req: Any, next: Any) -> str:
    raise RuntimeError("answerer down")


def test_disposing_the_service_detaches_its_seam() -> None:
    async def main() -> None:
        registry, hooks, tool, _ = registry_with(None)
        service = ApprovalService(registry)
        ctx = mount(hooks, service)
        assert registry.approval_seam is not None
        ctx.dispose()
        assert registry.approval_seam is None
        result = await registry.run(execution(registry, "echo", agent=FakeAgent(open_turn_session())))
        assert text(result) == 'Error: tool "echo" requires approval'  # back to "no service"
        assert await service.request(FakeAgent(open_turn_session()), "echo") == "unavailable"

    trio.run(main)
