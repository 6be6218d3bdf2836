"""Each domain fault does exactly what it says (and nothing else)."""

from __future__ import annotations

from dsh_sim.engine.machine import Simulation
from dsh_sim.evidence.checker import Checker
from dsh_sim.scenario.args import Step
from dsh_sim.scenario.codec import step_of
from dsh_sim.scenario.steps import apply

PAY = {"id": "c1", "name": "pay", "arguments": {"to": "bob", "amount": 5}}


def run(*steps: Step) -> Simulation:
    sim = Simulation(seed=11)
    Checker.attach(sim)
    try:
        for step in (Step("boot"),) + steps:
            apply(sim, step)
    finally:
        sim.shutdown()
    return sim


def arm(point: str, action: str, **extra) -> Step:
    return step_of("arm", {"rule": {"point": point, "action": action, "hit": 1, **extra}})


def prompt(*calls, approvals=()) -> Step:
    return step_of("prompt", {"responses": [{"text": "x", "tool_calls": list(calls)}, {"text": "done"}], "approvals": list(approvals)})


def result_text(sim: Simulation, call_id: str) -> str:
    for event in sim.primary.session.events:
        if event.type == "tool/result" and event.data["message"]["source"]["callId"] == call_id:
            return event.data["message"]["content"][0]["content"][0]["text"]
    raise AssertionError(f"no result for {call_id}")


def test_duplicate_delivery_reaches_an_idempotent_service_twice_but_applies_once():
    sim = run(arm("world.deliver", "duplicate"), prompt(PAY))
    assert [(e.note, e.applied) for e in sim.world.ledger] == [("applied", True), ("duplicate-delivery", False)]
    assert not Checker.of(sim).violations


def test_duplicate_delivery_applies_twice_at_a_service_without_idempotency():
    sim = run(arm("world.deliver", "duplicate"), prompt({**PAY, "name": "pay_legacy"}))
    assert [e.applied for e in sim.world.ledger] == [True, True]


def test_a_lost_request_has_no_effect_and_fails_the_call():
    sim = run(arm("world.deliver", "request_lost"), prompt(PAY))
    assert sim.world.ledger == []
    assert "request to payments was lost" in result_text(sim, "c1")


def test_a_lost_response_hides_an_effect_that_happened():
    sim = run(arm("world.respond", "response_lost"), prompt(PAY))
    assert [e.applied for e in sim.world.ledger] == [True]
    assert "response from payments was lost" in result_text(sim, "c1")


def test_a_timeout_takes_virtual_time_and_fails_the_call():
    sim = run(arm("world.respond", "timeout", delay=5.0), prompt(PAY))
    assert sim.now() >= 5.0
    assert "timed out" in result_text(sim, "c1")


def test_a_cut_model_stream_ends_the_turn_with_an_error():
    sim = run(arm("model.stream", "stream_cut"), prompt(PAY))
    ends = [e.data["reason"] for e in sim.primary.session.events if e.type == "turn/end"]
    assert ends[-1]["kind"] == "error" and "cut mid-response" in ends[-1]["error"]["message"]
    assert sim.world.ledger == []


def test_a_failing_answerer_fails_closed():
    sim = run(
        arm("approval.answer", "answerer_failure"),
        prompt({"id": "c1", "name": "send_message", "arguments": {"to": "a", "text": "t"}}, approvals=["allowed-once"]),
    )
    outcomes = [e.data["outcome"] for e in sim.primary.session.events if e.type == "approval/decided"]
    assert outcomes == ["unavailable"] and sim.history.answerer_failures == ["c1"]
    assert sim.world.ledger == []


def test_an_unavailable_sandbox_never_runs_the_command():
    sim = run(
        arm("sandbox.confine", "sandbox_unavailable"),
        prompt({"id": "c1", "name": "shell", "arguments": {"argv": ["write", "out.txt", "x"]}}),
    )
    assert sim.world.ledger == []
    assert "no sandbox backend is usable" in result_text(sim, "c1")


def test_an_injected_tool_failure_happens_before_the_body():
    sim = run(arm("tools.execute.body", "tool_failure"), prompt(PAY))
    assert sim.world.ledger == []
    assert "injected tool failure" in result_text(sim, "c1")
