"""A graceful stop while a turn is in flight: a cancelled — not crashed — turn never leaves a
dangling call (spec §5.3), and what the unwinding appends reaches the disk.

Found by an independent bug probe (a broken ``approval/decided`` on teardown passed every
check, because no scenario stopped a process while a turn waited): the scenarios then showed
the correct runtime leaving the call without a result, and the simulated process stopping
its store before the turn had closed.
"""

from __future__ import annotations

import os

import attrs
import pytest

from dsh_sim.drivers.replay import run_scenario
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load
from tests.support.paths import ROOT

REGRESSIONS = os.path.join(ROOT, "scenarios", "regressions")

NO_TEARDOWN_RESULTS = Edit("runtime.tools.scheduler", "StepTools.run", "            self._close_on_teardown()\n", "")
NO_ABANDON = Edit(
    "runtime.agent.loop",
    "Agent._step",
    "                    tools.abandon(calls)  # torn down before the calls started: close them all\n",
    "",
)
NO_CANCELLED_DECISION = Edit(
    "runtime.agent.approval",
    "ApprovalService.request",
    '            session.append("approval/decided", {"id": request_id, "outcome": "cancelled"})\n            raise',
    "            raise",
)


def outcome(name: str, *edits: Edit):
    with applied(list(edits)):
        result, sim = run_scenario(load(os.path.join(REGRESSIONS, f"{name}.json")))
    return {v.invariant for v in result.violations}, sim.lifetimes[0].session.events


def results_of(events) -> dict[str, str | None]:
    return {e.data["message"]["source"]["callId"]: (e.data.get("error") or {}).get("code") for e in events if e.type == "tool/result"}


def test_a_call_waiting_for_approval_is_closed_and_everything_reaches_the_disk():
    caught, events = outcome("approval-hangs-at-shutdown")
    assert caught == set()
    assert results_of(events) == {"c1": "ABORTED_BEFORE_DISPATCH"}
    assert [e.type for e in events[-4:]] == ["approval/decided", "tool/result", "step/end", "turn/end"]
    assert events[-1].data["reason"] == {"kind": "aborted", "reason": {"kind": "disposed"}}


def test_a_dispatched_call_is_aborted_and_an_unstarted_one_never_dispatched():
    caught, events = outcome("tool-body-in-flight-at-shutdown")
    assert caught == set()
    assert results_of(events) == {"c1": "ABORTED", "c2": "ABORTED_BEFORE_DISPATCH"}


def test_calls_of_an_appended_message_are_closed_when_the_pipeline_never_started():
    caught, events = outcome("assistant-appended-then-shutdown")
    assert caught == set()
    assert results_of(events) == {"c1": "ABORTED_BEFORE_DISPATCH", "c2": "ABORTED_BEFORE_DISPATCH"}


@pytest.mark.parametrize(
    ("name", "edit"),
    [
        ("approval-hangs-at-shutdown", NO_TEARDOWN_RESULTS),
        ("tool-body-in-flight-at-shutdown", NO_TEARDOWN_RESULTS),
        ("assistant-appended-then-shutdown", NO_ABANDON),
        ("approval-hangs-at-shutdown", NO_CANCELLED_DECISION),
    ],
    ids=["no-results-on-teardown", "no-results-for-a-body-in-flight", "calls-never-started", "approval-undecided"],
)
def test_each_teardown_rule_is_judged(name, edit):
    caught, _ = outcome(name, edit)
    # the grammar judges the log's shape; the route model judges an undecided question too
    assert caught == ({"log_grammar", "route_decisions"} if edit is NO_CANCELLED_DECISION else {"log_grammar"})


def test_the_store_stops_only_after_the_commands_have_unwound():
    """The simulated process nests the host's commands inside the runtime's lifetime, as an
    application does: stopping both at once lets the store write its last batch before the
    turn has closed, and the closing events never reach the disk."""
    at_once = Edit(
        "dsh_sim.engine.process",
        "SimProcess._driver",
        "                        commands.cancel_scope.cancel()\n                        break\n",
        "                        nursery.cancel_scope.cancel()\n                        break\n",
    )
    caught, _ = outcome("approval-hangs-at-shutdown", at_once)
    assert "eventually_durable" in caught
    # the loss depends on the order the scheduler picks when both stop at once: over a range
    # of seeds it shows in some, and the nested stop never loses anything
    scenario = load(os.path.join(REGRESSIONS, "approval-hangs-at-shutdown.json"))
    caught_by_seed = []
    for seed in range(8):
        with applied([at_once]):
            result, _ = run_scenario(attrs.evolve(scenario, seed=seed))
        caught_by_seed.append("eventually_durable" in {v.invariant for v in result.violations})
        correct, _ = run_scenario(attrs.evolve(scenario, seed=seed))
        assert not correct.violations, (seed, [v.describe() for v in correct.violations])
    assert any(caught_by_seed)
