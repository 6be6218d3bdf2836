"""A model answer cut off at the token limit (``finish: max-tokens``) owes no tool calls: its
calls are dropped from the message, nothing is dispatched, and the turn ends ``max-tokens``
(spec §1.4 turn/end reasons; the loop's cut-off rule).  The scripted model can now end a
stream that way, and the progress oracle predicts it."""

from __future__ import annotations

import os

import pytest

from dsh_sim.drivers import corpus
from dsh_sim.drivers.machines.strategies import aimable_calls, aimed_crash_rule
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.evidence.oracles.progress import predict
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.args import ModelResponse, ToolCall
from dsh_sim.scenario.files import load
from runtime.adapters.script_model import ScriptedResponse, ScriptedToolCall
from runtime.ports.model import Finish
from tests.support.paths import ROOT

CUT_OFF = os.path.join(ROOT, "scenarios", "regressions", "model-cut-off-at-token-limit-owes-no-calls.json")

# Written apart from the harness (round 3): the finish reason misspelt where calls are dropped.
MISSPELT = [Edit("runtime.agent.loop", "_Assembly.content", 'self.finish == "max-tokens":', 'self.finish == "max_tokens":')]


def test_the_scripted_stream_ends_as_told():
    call = ScriptedToolCall("c1", "pay", "{}")
    assert ScriptedResponse("x", (call,)).parts()[-1] == Finish("tool-calls")
    assert ScriptedResponse("x", (call,), finish="max-tokens").parts()[-1] == Finish("max-tokens")
    assert ScriptedResponse.from_json({"text": "x", "finish": "max-tokens"}).finish == "max-tokens"


def test_progress_predicts_a_cut_off_turn():
    pay = ToolCall("c1", "pay", {"to": "bob", "amount": 1})
    cut = predict(
        [ModelResponse("a", (pay,)), ModelResponse("b", (ToolCall("c2", "pay", {}),), finish="max-tokens"), ModelResponse("c")],
        [],
        approval_policy="ask",
        approval_tools=(),
        sandbox_mode="workspace-write",
        workspace="/w",
        max_steps=10,
    )
    assert cut.ends == "max-tokens" and [c[0] for c in cut.calls] == ["c1"]


def test_a_cut_off_answer_owes_no_calls_and_the_misspelt_finish_is_caught():
    result, sim = run_scenario(load(CUT_OFF))
    assert result.violations == () and result.outcomes[1] == "turn:max-tokens"
    assert not any(e.type == "tool/call" and e.data["callId"] == "c1" for e in sim.lifetimes[0].session.events)
    with applied(MISSPELT):
        broken, _ = run_scenario(load(CUT_OFF))
    # model_exchange (the content is not what the stream makes), turn_progress, and the grammar (it reads the finish from the log);
    # each step's checks run in the registry's order
    found = {v.invariant: v.message for v in broken.violations}
    assert sorted(found) == ["log_grammar", "model_exchange", "turn_progress"]
    assert "its content is not what its stream makes" in found["model_exchange"]
    assert "did not end max-tokens" in found["turn_progress"]
    assert "cut off at the token limit carries tool calls" in found["log_grammar"]


def _run_aimed(script: dict, step: int, call_id: str, boundary: str) -> int:
    """Crashes that happened when a crash aimed at ``boundary`` of ``call_id`` was armed before ``script``."""
    rule = aimed_crash_rule(script, step, call_id, boundary, {"kind": "kill"}, 1)
    scenario = corpus._scenario(name="aimed", seed=1, steps=(corpus.BOOT, corpus.arm(rule), {"op": "prompt", "args": script}))
    result, _ = run_scenario(scenario)
    return len(result.stats["crashes"])


@pytest.mark.parametrize("boundary", ["1→2", "2→3", "3→4", "after 4"])
def test_the_fuzz_aims_crashes_only_at_calls_the_turn_carries_out(boundary):
    """Calls of an answer cut off at the token limit, or of any answer after it, never run: a
    crash aimed at them never fires (a wasted draw), so the fuzz does not aim there."""
    pay = {"name": "pay", "arguments": {"to": "bob", "amount": 1}}
    script = {
        "text": "go",
        "responses": [
            {"text": "a", "tool_calls": [{"id": "c1", **pay}]},
            {"text": "b", "tool_calls": [{"id": "c2", **pay}], "finish": "max-tokens"},
            {"text": "c", "tool_calls": [{"id": "c3", **pay}]},
        ],
        "approvals": [],
    }
    assert aimable_calls(script) == [(1, "c1")]
    assert _run_aimed(script, 1, "c1", boundary) == 1
    assert _run_aimed(script, 2, "c2", boundary) == 0  # (what the fuzz drew before)
    assert _run_aimed(script, 3, "c3", boundary) == 0
