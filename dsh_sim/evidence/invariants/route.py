"""``route_decisions``: every call's result, approval question and pipeline as the route model
(:mod:`dsh_sim.evidence.oracles.route`) predicts them, compared exactly, as a live process
appends each ``tool/result``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dsh_sim.evidence.invariants.base import Judge, fail
from dsh_sim.evidence.oracles import route

if TYPE_CHECKING:
    from dsh_sim.engine.lifetime import Lifetime

NAME = route.NAME


def deployment(obs: Judge) -> route.Deployment:
    config = obs.sim.config
    return route.Deployment(
        approval_service=config.approval_policy is not None,
        approval_tools=tuple(config.approval_tools),
        post_note=config.post_execute_note,
        checkpoint=config.checkpoint_policy,
        policies=obs.sim.call_policies,
    )


def _policy_in_force(events: Sequence[Any], index: int, default: str | None) -> str | None:
    for position in range(index, -1, -1):
        if events[position].type == "approval/policy":
            return str(events[position].data["policy"])
    return default


def check_route(obs: Judge, life: Lifetime, fresh: Sequence[Any]) -> None:
    """Each new top-level ``tool/result`` of process ``life`` against the route's prediction."""
    results = [e for e in fresh if e.type == "tool/result" and ":nested:" not in str(e.data["message"]["source"]["callId"])]
    if not results:
        return
    events = life.session.events
    setup = deployment(obs)
    marks, faults = obs.history.tool_marks, obs.history.faults
    for event in results:
        call_id = str(event.data["message"]["source"]["callId"])
        call_index = next(
            (i for i in range(event.seq - 1, -1, -1) if events[i].type == "tool/call" and events[i].data["callId"] == call_id), None
        )
        if call_index is None:
            continue  # a closer of repair (no tool/call in this log): the recovery's, judged by the reference model
        found = route.facts(marks, faults, life.index, call_id, event.data.get("turn"))
        if found is None:
            continue  # the call was not started by this process (a log it resumed)
        obs.count(NAME)
        tool = str(events[call_index].data["name"])
        between = events[call_index : event.seq]
        policy = _policy_in_force(events, call_index, obs.sim.config.approval_policy)
        expected = route.predict(tool, policy, setup, found, call_id)
        for problem in route.judge_call(expected, event.data, route.approval_pairs(between, call_id), found):
            fail(obs, NAME, f"{tool} call {call_id}: {problem}", call_id, f"route: {expected.why}")
