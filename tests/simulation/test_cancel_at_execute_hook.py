"""A cancellation while a ``tools/execute`` plugin awaits (``plugin.tools_execute``): after
``prepare``'s last abort check, before the body.  The registry as shipped checks the signal
again in its body and answers ABORTED_BEFORE_DISPATCH; a registry without that check runs the
body after the cancel (a payment lands), and ``cancellation_honoured`` must say so — for a
nested call (which the checkpoint policy's hook skips) and for a top-level one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh_sim.drivers.replay import run_scenario
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load, parse
from tests.support.paths import ROOT

REGRESSIONS = Path(ROOT) / "scenarios" / "regressions"
SCENARIOS = ["tools-cancel-at-execute-hook-nested.json", "tools-cancel-at-execute-hook.json"]
BODY_SKIPS_ABORT_CHECK = Edit(
    "runtime.tools.registry",
    "ToolRegistry._body",
    "        if ex.signal.aborted:\n            return R.aborted_before_dispatch()\n        tool = self._tools.get(ex.name)",
    "        tool = self._tools.get(ex.name)",
)


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_shipped_registry_does_not_run_a_body_cancelled_in_an_execute_hook(name: str) -> None:
    result, sim = run_scenario(load(str(REGRESSIONS / name)))
    assert not result.violations
    assert result.unfired == (), "the cancel never fired"
    assert [f.point for f in sim.history.faults] == ["plugin.tools_execute"]
    assert [e for e in sim.world.ledger if e.service == "payments"] == []  # nothing was paid
    bodies = {m.call_id for m in sim.history.tool_marks if m.kind == "body"}
    assert "c1:nested:0" not in bodies and "c2" not in bodies


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_body_that_skips_the_abort_check_is_caught(name: str) -> None:
    with applied([BODY_SKIPS_ABORT_CHECK]):
        result, sim = run_scenario(load(str(REGRESSIONS / name)))
    assert result.unfired == ()
    assert [e.args["to"] for e in sim.world.ledger if e.service == "payments"] == ["bob"]  # the effect after the cancel
    found = [v for v in result.violations if v.invariant == "cancellation_honoured"]
    assert found and "began after the turn was cancelled" in found[0].message


def test_a_cancel_at_the_dispatch_announcement_lets_the_body_run() -> None:
    """A cancellation at ``tools.execute.body`` comes after the abort checks: the body may begin
    (its result is then ABORTED), and the oracle does not call that late."""
    document = json.loads((REGRESSIONS / SCENARIOS[1]).read_text())
    document["steps"][1]["args"]["rule"] = {
        "point": "tools.execute.body",
        "action": "cancel",
        "hit": 1,
        "lifetime": 1,
        "match": {"call_id": "c1"},
    }
    del document["trace_digest"]
    result, sim = run_scenario(parse(document))
    assert result.unfired == ()
    assert [e.args["to"] for e in sim.world.ledger if e.service == "payments"] == ["bob"]
    assert not result.violations
