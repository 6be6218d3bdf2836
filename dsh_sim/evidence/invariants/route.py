"""``route_decisions``: every call's result, approval question and pipeline as the route model
(:mod:`dsh_sim.evidence.oracles.route`) predicts them, compared exactly, as a live process
appends each ``tool/result``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dsh_sim.adapters.world_tools import TOOL_KINDS
from dsh_sim.evidence.invariants.base import Judge, fail
from dsh_sim.evidence.oracles import route

if TYPE_CHECKING:
    from dsh_sim.engine.lifetime import Lifetime

NAME = route.NAME
UNKNOWN_TOOLS = frozenset(name for name, kind in TOOL_KINDS.items() if kind == "unknown")


def deployment(obs: Judge) -> route.Deployment:
    config = obs.sim.config
    return route.Deployment(
        approval_service=config.approval_policy is not None,
        approval_tools=tuple(config.approval_tools),
        post_note=config.post_execute_note,
        checkpoint=config.checkpoint_policy,
        policies=obs.sim.call_policies,
        unknown_tools=UNKNOWN_TOOLS,
    )


def _policy_in_force(events: Sequence[Any], index: int, default: str | None) -> str | None:
    for position in range(index, -1, -1):
        if events[position].type == "approval/policy":
            return str(events[position].data["policy"])
    return default


def check_turn_ends(obs: Judge, life: Lifetime, fresh: Sequence[Any]) -> None:
    """A turn its signal cancelled before it ended never reports itself ``completed`` (spec §1.6:
    the reason says what happened — aborted, or the error that ended it first)."""
    for event in fresh:
        if event.type != "turn/end":
            continue
        turn = event.data.get("turn")
        marks = obs.history.tool_marks
        cancel = next(
            (i for i, m in enumerate(marks) if m.kind == "cancel" and m.how != "stop" and m.lifetime == life.index and m.turn == turn), None
        )
        ended = next((i for i, m in enumerate(marks) if m.kind == "turn_end" and m.lifetime == life.index and m.turn == turn), None)
        if cancel is None or (ended is not None and ended < cancel):
            continue
        obs.count(NAME)
        reason = event.data.get("reason", {}).get("kind")
        if reason == "completed":
            fail(obs, NAME, f"turn {turn} was cancelled before it ended, but it ends 'completed'")


def check_route(obs: Judge, life: Lifetime, fresh: Sequence[Any]) -> None:
    """Each new top-level ``tool/result`` of process ``life`` against the route's prediction."""
    check_turn_ends(obs, life, fresh)
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
