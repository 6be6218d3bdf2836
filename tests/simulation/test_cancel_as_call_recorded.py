"""A cancellation that lands as a call is recorded reaches the call: its abort signal is made
from a step signal already aborted, so the body never runs (spec §5.3, checkpoint C).

A child signal that forgot its parent's earlier abort (a slip written apart from the harness,
round 4) passed every method: no committed scenario cancelled at ``tools.call.appended``.
"""

from __future__ import annotations

import os

from dsh_sim.drivers.replay import run_scenario
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load
from tests.support.paths import ROOT

SCENARIO = os.path.join(ROOT, "scenarios", "regressions", "cancel-as-call-is-recorded-dispatches-nothing.json")
FORGETS_PRIOR_ABORT = Edit(
    "runtime.agent.signal",
    "AbortSignal.child",
    "        if self.aborted:\n            child.abort(self.reason)\n        else:\n            self._children.append(child)\n",
    "        self._children.append(child)\n",
)


def test_the_call_is_aborted_before_dispatch():
    result, sim = run_scenario(load(SCENARIO))
    assert result.violations == () and result.not_applicable is None
    (tool_result,) = [e for e in sim.lifetimes[0].session.events if e.type == "tool/result"]
    assert tool_result.data["error"]["code"] == "ABORTED_BEFORE_DISPATCH"
    assert sim.world.ledger == []


def test_a_child_signal_that_forgets_the_prior_abort_is_caught():
    with capture_runtime_logs(), applied([FORGETS_PRIOR_ABORT]):
        result, _ = run_scenario(load(SCENARIO))
    assert [v.invariant for v in result.violations][:1] == ["cancellation_honoured"], result.violations
