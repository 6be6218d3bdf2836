"""A model answer cut off at the token limit (``finish: max-tokens``) owes no tool calls: its
calls are dropped from the message, nothing is dispatched, and the turn ends ``max-tokens``
(spec §1.4 turn/end reasons; the loop's cut-off rule).  The scripted model can now end a
stream that way, and the progress oracle predicts it."""

from __future__ import annotations

import os

from dsh_sim.drivers.replay import run_scenario
from dsh_sim.evidence.oracles.progress import predict
from dsh_sim.mutation.patch import Edit, applied
from dsh_sim.scenario.args import ModelResponse, ToolCall
from dsh_sim.scenario.files import load
from runtime.adapters.script_model import ScriptedResponse, ScriptedToolCall
from runtime.ports.model import Finish

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
    assert [v.invariant for v in broken.violations] == ["turn_progress"]
    assert "did not end max-tokens" in broken.violations[0].message
