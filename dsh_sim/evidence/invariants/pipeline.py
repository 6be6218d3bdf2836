"""Invariants judged against executable models of the tool pipeline (spec §5), written apart
from the runtime (:mod:`dsh_sim.evidence.oracles`): what a result says after a cancellation,
the approval policy in force, post-execute, the result's shape, and the scheduler's limits —
each fed what a live process's log gained since the last look."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from dsh_sim.adapters.post_execute_note import NOTE_BLOCK
from dsh_sim.evidence.invariants.base import Invariant, Judge, fail
from dsh_sim.evidence.oracles import approval_policy, cancellation, post_execute, result_shape
from dsh_sim.evidence.oracles.schedule import Schedule, group_problems

if TYPE_CHECKING:
    from dsh_sim.evidence.invariants.moments import Live


CANCELLATION = "cancellation_honoured"


def check_cancellation(obs: Judge, events: Sequence[Any], lifetime: int) -> None:
    """Each new result of process ``lifetime`` says what the tools saw of its call (§5.2, §5.3)."""
    obs.count(CANCELLATION)
    for problem in cancellation.judge(events, obs.history.tool_marks, lifetime):
        fail(obs, CANCELLATION, problem.message, problem.call_id)


APPROVAL_POLICY = "approval_policy"


def check_approval_policy(obs: Judge, events: Sequence[Any], watch: approval_policy.PolicyWatch) -> None:
    """Each new approval decision followed the policy in force when it was asked (counted per
    decision judged: a log without approvals checks nothing)."""
    before = watch.judged
    problems = watch.feed(events, obs.history.approval_consulted)
    for _ in range(watch.judged - before):
        obs.count(APPROVAL_POLICY)
    for problem in problems:
        fail(obs, APPROVAL_POLICY, problem)


POST = "post_execute_once"


def check_post_execute(obs: Judge, events: Sequence[Any], lifetime: int) -> None:
    """Each new result of process ``lifetime`` passed post-execute as the spec says (§5.2)."""
    obs.count(POST)
    note = NOTE_BLOCK if obs.sim.config.post_execute_note else None
    for problem in post_execute.judge(events, obs.history.tool_marks, lifetime, note):
        fail(obs, POST, problem.message, problem.call_id)


SHAPE = "result_shape"


def check_result_shape(obs: Judge, events: Sequence[Any], lifetime: int) -> None:
    """Each new result of process ``lifetime`` has the spec's shape and, when its body threw,
    the spec's error text and info (§1.5, §5.2)."""
    obs.count(SHAPE)
    for problem in result_shape.judge(events, obs.history.tool_marks, lifetime):
        fail(obs, SHAPE, problem.message, problem.call_id)


SCHEDULE = "tool_schedule"


def check_schedule(obs: Judge, schedule: Schedule) -> None:
    """The tool bodies that ran since the last check kept the scheduler's limits (§5.1)."""
    obs.count(SCHEDULE)
    for problem in schedule.feed(obs.history.tool_marks):
        fail(obs, SCHEDULE, problem.message, problem.call_id)


def _cancellation(obs: Judge, live: Live) -> None:
    if live.fresh:
        check_cancellation(obs, live.fresh, live.life.index)


def _approval_policy(obs: Judge, live: Live) -> None:
    default = obs.sim.config.approval_policy
    if not live.fresh or default is None:
        return  # (no approval service: no decision to judge)
    watches: dict[int, approval_policy.PolicyWatch] = obs.memory(APPROVAL_POLICY)
    watch = watches.get(live.life.index)
    if watch is None:
        watch = watches[live.life.index] = approval_policy.PolicyWatch.after(live.recovered, default)
    check_approval_policy(obs, live.fresh, watch)


def _post_execute(obs: Judge, live: Live) -> None:
    if live.fresh:
        check_post_execute(obs, live.fresh, live.life.index)


def _result_shape(obs: Judge, live: Live) -> None:
    if live.fresh:
        check_result_shape(obs, live.fresh, live.life.index)


@attrs.define
class _Scheduler:
    """The scheduler model fed with every tool body's start and end, and per process the tool
    calls of the step that is open (id, tool, arguments)."""

    schedule: Schedule
    blocks: dict[int, list[tuple[str, str, str]]] = attrs.field(factory=dict)


def _schedule(obs: Judge, live: Live) -> None:
    scheduler: _Scheduler = obs.memory(SCHEDULE)
    check_schedule(obs, scheduler.schedule)
    if live.fresh:
        check_groups(obs, live, scheduler.blocks)


def check_groups(obs: Judge, live: Live, blocks: dict[int, list[tuple[str, str, str]]]) -> None:
    """At each step's end: its parallel siblings started together (when nothing else could
    hold a start back — no perturbation, no delay at a call's start, no cancellation)."""
    life = live.life
    held = obs.sim.config.perturb or any(f.point == "tools.call.appended" and f.lifetime == life.index for f in obs.faults)
    for event in live.fresh:
        if event.type == "assistant/message":
            content = event.data["message"]["content"]
            blocks[life.index] = [(b["id"], b["name"], b.get("arguments", "")) for b in content if b.get("type") == "tool-call"]
        elif event.type == "step/end" and blocks.get(life.index):
            marks = obs.history.tool_marks
            cancelled = any(m.kind == "cancel" and m.lifetime == life.index and m.turn == event.data.get("turn") for m in marks)
            if not held and not cancelled:
                obs.count(SCHEDULE)
                limit = obs.sim.config.max_parallel_tool_calls
                for problem in group_problems(blocks[life.index], marks, life.index, max_parallel=limit):
                    fail(obs, SCHEDULE, problem.message, problem.call_id)
            blocks[life.index] = []


CANCELLATION_HONOURED = Invariant(
    CANCELLATION,
    (
        "a tool result says what happened to its call: never a success when its turn was cancelled before"
        " the body returned (ABORTED then), ABORTED only for a body that started and "
        "ABORTED_BEFORE_DISPATCH only for one that never did — both only after a cancellation of the turn"
        " — and every call started after the cancellation is ABORTED_BEFORE_DISPATCH; no tool body "
        "(nested ones included) begins after the cancellation unless the runtime announced its dispatch "
        "before it"
    ),
    checks={"live": _cancellation},
)
APPROVAL_POLICY_FOLLOWED = Invariant(
    APPROVAL_POLICY,
    (
        "every approval decision follows the policy in force when it was asked (the last approval/policy "
        "before it, else the configured default): under never the user is not asked and the outcome is "
        "rejected (or cancelled); under ask a rejection comes only from the user"
    ),
    checks={"live": _approval_policy},
    memory=lambda obs: {},
)
POST_EXECUTE_ONCE = Invariant(
    POST,
    (
        "tools/post-execute runs exactly once for every result a tool body returned (unless a "
        "cancellation made it ABORTED) and never for a final one (ABORTED, ABORTED_BEFORE_DISPATCH, a "
        "body that threw, an injected failure); pre- and post-execute see the calls in the model's order"
    ),
    checks={"live": _post_execute},
)
RESULT_SHAPE = Invariant(
    SHAPE,
    (
        "every tool/result is the spec's ToolResultMessage (role user, tool source, one tool-result block"
        " of text blocks, error exactly {name, code}), and a tool body that threw gets exactly 'Error: "
        "<message>' with {name, code} for a HarnessError"
    ),
    checks={"live": _result_shape},
)
TOOL_SCHEDULE = Invariant(
    SCHEDULE,
    (
        "the tool scheduler keeps its limits: at most maxParallelToolCalls tool bodies of a process run "
        "at once, and an exclusive call (its tool does not say exactly true for its arguments: not "
        "concurrency-safe, or its classifier raised) runs alone — it starts only when no other body runs,"
        " and nothing starts or runs beside it; parallel siblings start together (the first "
        "maxParallelToolCalls of a run of concurrency-safe calls all start before any of their bodies "
        "ends)"
    ),
    checks={"live": _schedule},
    memory=lambda obs: _Scheduler(Schedule(max_parallel=obs.sim.config.max_parallel_tool_calls)),
)
