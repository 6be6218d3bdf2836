"""approval_policy: each approval decision follows the policy in force when it was asked (the
newest approval/policy event, else the configured default), judged against whom the simulated
user was actually asked."""

from __future__ import annotations

import json
import os

import pytest

from dsh_sim.drivers.replay import run_scenario
from dsh_sim.evidence.oracles.approval_policy import PolicyWatch
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load, parse
from runtime.session.events import Event
from tests.support.paths import ROOT

SWITCHED = os.path.join(ROOT, "scenarios", "regressions", "approval-policy-switched-back-to-ask.json")

# Written apart from the harness (round 3): the first approval/policy event read as the one in force.
FIRST_WINS = [
    Edit("runtime.agent.approval", "effective_approval_policy", "    for event in reversed(events):\n", "    for event in events:\n")
]


def _e(kind: str, seq: int, **data: object) -> Event:
    return Event(kind, seq, 0, dict(data))


def test_the_newest_policy_is_in_force():
    log = [
        _e("approval/policy", 0, policy="never"),
        _e("approval/asked", 1, id="a", callId="c1"),
        _e("approval/decided", 2, id="a", outcome="rejected"),
    ]
    log += [
        _e("approval/policy", 3, policy="ask"),
        _e("approval/asked", 4, id="b", callId="c2"),
        _e("approval/decided", 5, id="b", outcome="allowed-once"),
    ]
    watch = PolicyWatch("ask")
    assert watch.feed(log, consulted={"b"}) == [] and watch.judged == 2


@pytest.mark.parametrize(
    ("policy", "outcome", "consulted", "said"),
    [
        ("never", "allowed-once", {"a"}, "the user was asked although the policy in force was never"),
        ("never", "unavailable", set(), "decided 'unavailable' although the policy in force was never"),
        ("ask", "rejected", set(), "rejected without asking the user although the policy in force was ask"),
    ],
)
def test_a_decision_the_policy_in_force_does_not_allow_is_named(policy, outcome, consulted, said):
    log = [
        _e("approval/policy", 0, policy=policy),
        _e("approval/asked", 1, id="a", callId="c1"),
        _e("approval/decided", 2, id="a", outcome=outcome),
    ]
    watch = PolicyWatch("ask")
    assert watch.feed(log, consulted) == [f"approval a of call c1: {said}"] and watch.judged == 1


def test_a_resumed_log_starts_from_its_last_policy():
    recovered = [_e("approval/policy", 0, policy="never"), _e("approval/policy", 1, policy="ask")]
    assert PolicyWatch.after(recovered, "never").policy == "ask"
    assert PolicyWatch.after([], "never").policy == "never"


def test_switched_back_to_ask_holds_and_catches_the_first_policy_read_as_in_force():
    result, _ = run_scenario(load(SWITCHED))
    assert result.violations == () and result.stats["checked"]["approval_policy"] == 3  # one per decision
    with applied(FIRST_WINS):
        broken, _ = run_scenario(load(SWITCHED))
    assert any(v.invariant == "approval_policy" and "rejected without asking" in v.message for v in broken.violations)


def test_the_first_policy_read_as_in_force_fails_open():
    """Default never, switched to ask and back to never: reading the first event asks the user,
    who allows the call — an allowed-once decision exists, so the gate and fail-closed judges pass;
    this judge names the question that should never have been asked."""
    with open(SWITCHED) as f:
        document = json.load(f)
    document.pop("trace_digest")
    document["config"] = {"approval_policy": "never"}
    prompt = document["steps"][2]
    document["steps"] = [
        {"op": "boot", "args": {}},
        {"op": "set_approval_policy", "args": {"policy": "ask"}},
        {"op": "set_approval_policy", "args": {"policy": "never"}},
        prompt,
    ]
    scenario = parse(document)
    result, _ = run_scenario(scenario)
    assert result.violations == ()
    with applied(FIRST_WINS):
        broken, _ = run_scenario(scenario)
    named = [v for v in broken.violations if v.invariant == "approval_policy"]
    assert len(named) == 1 and "asked although the policy in force was never" in named[0].message
    assert not {"approval_gate", "fail_closed"} & {v.invariant for v in broken.violations}
