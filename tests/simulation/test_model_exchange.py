"""What a step appends before its model request, what the model is sent, how its answer is recorded,
each payload's shape and
a cancelled turn's end reason: careless edits of the agent loop that every other judge passed
(survivors of the mutation tool over the route modules), each named by the judge written for it.
"""

from __future__ import annotations

import os

import pytest

from dsh_sim.drivers.replay import run_scenario
from dsh_sim.evidence.oracles import payloads
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load
from tests.support.paths import REGRESSIONS, STARTER

LOOP = "runtime.agent.loop"
APPROVAL = "runtime.agent.approval"
REG = "runtime.tools.registry"
RUNTIME = "runtime.agent.runtime"


def invariants(path: str) -> dict[str, list[str]]:
    result, _ = run_scenario(load(path))
    out: dict[str, list[str]] = {}
    for v in result.violations:
        out.setdefault(v.invariant, []).append(v.message)
    return out


TWO_STEPS = os.path.join(STARTER, "boundary-2-3-pay.json")  # a turn of two requests, a crash, a resumed turn
CANCELLED = os.path.join(REGRESSIONS, "route-cancel-at-each-stage.json")
STOPPED = os.path.join(REGRESSIONS, "route-stop-while-user-thinks.json")
APPROVED = os.path.join(REGRESSIONS, "route-approval-answered-late-in-time.json")
MID_STREAM = os.path.join(REGRESSIONS, "cancel-mid-stream-marks-message-interrupted.json")

SLIPS = {
    "header-appended-at-every-step": (
        [Edit(LOOP, "Agent._append_request_events", '        previous = session.last_of("request/header")\n', "        previous = None\n")],
        TWO_STEPS,
        "model_exchange",
        "request headers",
    ),
    "context-appended-at-every-step": (
        [Edit(LOOP, "Agent._append_request_events", '        last = session.last_of("request/context")\n', "        last = None\n")],
        TWO_STEPS,
        "model_exchange",
        "request contexts",
    ),
    "model-sent-a-history-without-tool-results": (
        [
            Edit(
                LOOP,
                "derived_history",
                "        if event.type in SURFACE_TYPES:\n",
                '        if event.type in SURFACE_TYPES and event.type != "tool/result":\n',
            )
        ],
        TWO_STEPS,
        "model_exchange",
        "the model was sent",
    ),
    "prompt-entered-in-the-wrong-step": (
        [Edit(LOOP, "Agent.run_turn", "entering if step == 1 else", "entering if step == 2 else")],
        TWO_STEPS,
        "model_exchange",
        "the prompt said",
    ),
    "system-prompt-forgotten-at-creation": (
        [
            Edit(
                RUNTIME,
                "Runtime.create_agent",
                "        return Agent(self, session, system=self.config.system)\n",
                "        return Agent(self, session)\n",
            )
        ],
        TWO_STEPS,
        "model_exchange",
        "the system prompt belongs first",
    ),
    "tool-descriptions-under-another-key": (
        [Edit(REG, "ToolRegistry.specs", '"description": t.description', '"summary": t.description')],
        TWO_STEPS,
        "model_exchange",
        "the model is offered",
    ),
    "interrupted-prefix-dropped": (
        [Edit(LOOP, "Agent._stream", "        if interrupted and not content:\n", "        if interrupted and content:\n")],
        MID_STREAM,
        "model_exchange",
        "the step ended without an assistant message",
    ),
    "cut-message-not-marked-interrupted": (
        [Edit(LOOP, "Agent._stream", '        if interrupted:\n            data["interrupted"] = True\n', "")],
        MID_STREAM,
        "model_exchange",
        "but is not marked interrupted",
    ),
    "usage-recorded-under-another-key": (
        [Edit(LOOP, "Agent._stream", 'data["usage"] = {', 'data["tokens"] = {')],
        TWO_STEPS,
        "model_exchange",
        "usage None",
    ),
    "pre-step-announces-the-step-before": (
        [Edit(LOOP, "Agent.run_turn", '"agent.pre_step", turn=turn, step=step + 1)', '"agent.pre_step", turn=turn, step=step)')],
        TWO_STEPS,
        "points_truthful",
        "the next is",
    ),
    "empty-interruption-announced-as-appended": (
        [
            Edit(
                LOOP,
                "Agent._stream",
                "        if interrupted and not content:\n            return False, []\n",
                "        if interrupted and not content:\n            return True, []\n",
            )
        ],
        os.path.join(REGRESSIONS, "route-cancel-as-the-model-is-asked.json"),
        "points_truthful",
        "agent.assistant.appended announced",
    ),
    "interrupted-message-not-announced": (
        [
            Edit(
                LOOP,
                "Agent._stream",
                "        if interrupted:\n            return True, []\n",
                "        if interrupted:\n            return False, []\n",
            )
        ],
        MID_STREAM,
        "points_truthful",
        "agent.assistant.appended was never announced",
    ),
    "aborted-reason-misspelt": (
        [
            Edit(
                LOOP,
                "Agent.run_turn",
                '"reason": signal.reason or {"kind": "user"}}\n                    break\n                if not more',
                '"why": signal.reason or {"kind": "user"}}\n                    break\n                if not more',
            )
        ],
        CANCELLED,
        "format_conformance",
        "aborted reason",
    ),
    "approval-question-key-misspelt": (
        [Edit(APPROVAL, "ApprovalService.request", '{"id": request_id, "toolName": tool_name}', '{"id": request_id, "tool": tool_name}')],
        APPROVED,
        "format_conformance",
        "approval/asked",
    ),
    "stopped-turn-blames-the-user": (
        [
            Edit(
                LOOP,
                "Agent.run_turn",
                'reason = {"kind": "aborted", "reason": {"kind": "disposed"}}',
                'reason = {"kind": "aborted", "reason": {"kind": "user"}}',
            )
        ],
        STOPPED,
        "route_decisions",
        "ends {'kind': 'aborted', 'reason': {'kind': 'user'}}, not one of",
    ),
}


@pytest.mark.parametrize("path", [TWO_STEPS, CANCELLED, STOPPED, APPROVED, MID_STREAM], ids=os.path.basename)
def test_the_scenarios_hold_on_the_runtime_as_shipped(path: str) -> None:
    result, _ = run_scenario(load(path))
    assert [v.describe() for v in result.violations] == []
    assert result.stats["checked"]["model_exchange"] > 0


@pytest.mark.parametrize("name", sorted(SLIPS))
def test_each_slip_is_named(name: str) -> None:
    edits, path, invariant, words = SLIPS[name]
    with applied(edits):
        found = invariants(path)
    assert invariant in found, found
    assert any(words in message for message in found[invariant]), found[invariant]


@pytest.mark.parametrize(
    ("kind", "data", "words"),
    [
        ("turn/end", {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "USER"}}}, "none of"),
        ("turn/end", {"turn": 1, "reason": {"kind": "error", "error": {"message": "x"}}}, "missing ['code']"),
        ("turn/end", {"turn": 1, "reason": {"kind": "completed", "why": 1}}, "keys the spec does not define"),
        (
            "user/message",
            {"id": None, "role": "user", "content": [{"type": "text", "text": "go"}], "source": {"kind": "user"}},
            "message id",
        ),
        (
            "user/message",
            {"id": "u", "role": "user", "content": [{"type": "text", "text": None}], "source": {"kind": "user"}},
            "text block",
        ),
        ("request/header", {"header": {"config": {"provider": "p", "model": "m"}}, "reason": "fallback"}, "reason 'fallback'"),
        ("request/header", {"header": {"config": {"provider": "p"}, "TOOLS": []}, "reason": "initial"}, "keys the spec does not define"),
        ("approval/decided", {"id": "a", "outcome": "allowed"}, "outcome 'allowed'"),
        (
            "assistant/message",
            {"turn": 1, "step": 1, "message": {"id": "a", "role": "assistant", "content": [], "source": {"kind": "MODEL"}}},
            "source",
        ),
    ],
)
def test_a_payload_off_the_spec_table_is_named(kind: str, data: object, words: str) -> None:
    found = payloads.problem(kind, data)
    assert found is not None and words in found, found


def test_the_spec_table_payloads_pass() -> None:
    good = {
        "turn/end": {"turn": 2, "reason": {"kind": "aborted", "reason": {"kind": "hook", "reason": "no"}}},
        "request/context": {"provider": "p", "model": "m", "contextWindow": 8},
        "approval/asked": {"id": "a", "toolName": "pay", "callId": "c", "reason": "needs approval"},
        "approval/policy": {"policy": "never", "source": "delegation"},
        "session/end-seed": {},
    }
    assert {kind: payloads.problem(kind, data) for kind, data in good.items()} == dict.fromkeys(good)


CUT_PAIR = os.path.join(REGRESSIONS, "tool-arguments-streamed-cut-inside-a-surrogate-pair.json")


@pytest.mark.parametrize(
    ("slip", "invariant"),
    [
        (
            Edit(
                "runtime.agent.loop",
                "_Assembly.add",
                'block["arguments"] = join_text(block["arguments"], part.arguments_delta)',
                'block["arguments"] += part.arguments_delta',
            ),
            "turn_progress",
        ),
        (Edit("runtime.session.lossless", "join_text", "<< 10)", "<< 11)"), "model_exchange"),
        (Edit("runtime.session.lossless", "join_text", "+ right[1:]", "+ right[2:]"), "model_exchange"),
    ],
    ids=["halves-kept-apart", "pair-miscomputed", "character-after-dropped"],
)
def test_arguments_cut_inside_a_surrogate_pair_are_joined_as_javascript_joins_them(slip: Edit, invariant: str) -> None:
    """The scripted model cuts a call's arguments at the middle of their UTF-16 code units, as a
    provider may: here inside an astral character (join_text had no case in the harness)."""
    result, _ = run_scenario(load(CUT_PAIR))
    assert result.violations == ()
    with applied([slip]):
        result, _ = run_scenario(load(CUT_PAIR))
    assert invariant in [v.invariant for v in result.violations], result.violations
