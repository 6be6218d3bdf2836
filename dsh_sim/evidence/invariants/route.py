"""``route_decisions``: every call's result, approval question and pipeline as the route model
(:mod:`dsh_sim.evidence.oracles.route`) predicts them, compared exactly, as a live process
appends each ``tool/result``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dsh_sim.adapters.world_tools import TOOL_KINDS
from dsh_sim.evidence.invariants.base import Invariant, Judge, fail
from dsh_sim.evidence.invariants.moments import Live
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


# how a cancelled turn ends (spec §1.5): the user's cancel, or the process's owner tearing it down
ABORTED = {"signal": {"kind": "aborted", "reason": {"kind": "user"}}, "stop": {"kind": "aborted", "reason": {"kind": "disposed"}}}


def check_turn_ends(obs: Judge, life: Lifetime, fresh: Sequence[Any]) -> None:
    """A turn cancelled before it ended says so exactly (spec §1.5, §1.6): ``aborted`` with the
    user as the reason after a cancel, ``disposed`` after a graceful stop tore it down — or, when
    a fault struck the turn, the error that may have ended it first; never ``completed``."""
    marks = obs.history.tool_marks
    for event in fresh:
        if event.type != "turn/end":
            continue
        turn = event.data.get("turn")
        mine = [(i, m) for i, m in enumerate(marks) if m.lifetime == life.index and m.turn == turn]
        ended = next((i for i, m in mine if m.kind == "turn_end"), len(marks))
        cancels = [m for i, m in mine if m.kind == "cancel" and i < ended]
        if not cancels:
            continue
        obs.count(NAME)
        reason = event.data.get("reason")
        # a cancel the loop had not yet noticed when a graceful stop tore the turn down: either says what happened
        expected = [ABORTED["stop" if m.how == "stop" else "signal"] for m in cancels]
        if reason in expected:
            continue
        struck = any(f.lifetime == life.index and f.marks > _turn_began(marks, life.index, turn) for f in obs.history.faults)
        if struck and isinstance(reason, dict) and reason.get("kind") == "error":
            continue  # a fault's error may have ended the turn before the cancellation did
        hows = "/".join(str(m.how) for m in cancels)
        fail(obs, NAME, f"turn {turn} was cancelled ({hows}) before it ended, but it ends {reason!r}, not one of {expected!r}")


def _turn_began(marks: Sequence[Any], lifetime: int, turn: Any) -> int:
    """The position in ``marks`` after the previous turn of ``lifetime`` ended (its start, near enough)."""
    return max((i for i, m in enumerate(marks) if m.kind == "turn_end" and m.lifetime == lifetime and m.turn != turn), default=-1)


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


def _live(obs: Judge, live: Live) -> None:
    if live.fresh:
        check_route(obs, live.life, live.fresh)


ROUTE_DECISIONS = Invariant(
    NAME,
    (
        "every call's tool/result, approval question and pipeline are exactly what an executable model of"
        " the route (spec §4-§6, written apart from the runtime) predicts from the deployment, the gate "
        "and guard answers, the user's answers, the cancellation and the faults: the decision (allow, "
        "deny, ask; a raising gate or guard fails closed), whether the guard, the body and post-execute "
        "ran, the question's reason and outcome, and the result's exact text, error and content"
    ),
    checks={"live": _live},
)
