"""``points_truthful``: the runtime's probe announces what just happened, with its declared details.

Every fault rule, crash boundary and coverage case is keyed on the named points the runtime
announces through its probe port.  An announcement that drops a declared detail (or sends
``null``) silently disarms every rule that matches on it; one that names the wrong call puts a
crash somewhere else than the scenario says.  So each runtime announcement must carry every
detail key its point declares (:mod:`dsh_sim.engine.points`), none null, and the points that
report an event appended in memory must name an event that the live log holds: a ``tool/call``
(with that seq, call id and tool) or the newest ``tool/result`` (of that call), the newest
``turn/start``, ``assistant/message`` or ``turn/end`` (of that turn and step); the points inside
a turn name the turn that is open and the step that is open — or, before a step, the one about
to open.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dsh_sim.engine.points import spec
from dsh_sim.evidence.invariants.base import Invariant, Judge, fail
from dsh_sim.evidence.invariants.moments import Live, Point

if TYPE_CHECKING:
    from dsh_sim.engine.lifetime import Lifetime

NAME = "points_truthful"


def check_announcement(obs: Judge, life: Lifetime, name: str, details: dict[str, Any]) -> None:
    point = spec(name)
    if point.layer != "runtime":
        return  # the simulator's own ports announce the other layers
    obs.count(NAME)
    missing = [key for key in point.details if details.get(key) is None]
    if missing:
        fail(obs, NAME, f"{name} was announced without {missing} (declared details {list(point.details)})", None, repr(details))
        return
    if name == "tools.call.appended":
        events = life.session.events if life.session is not None else ()  # (a copy of the log: only where it is read)
        seq = details["seq"]
        event = events[seq] if type(seq) is int and 0 <= seq < len(events) else None
        if (
            event is None
            or event.type != "tool/call"
            or (event.data.get("callId"), event.data.get("name")) != (details["call_id"], details["tool"])
        ):
            what = f"{event.type} {event.data.get('callId')}" if event is not None else "nothing"
            fail(
                obs,
                NAME,
                f"tools.call.appended names tool/call {details['call_id']} ({details['tool']}) at seq {seq}, where the log holds {what}",
            )
    elif name in _AGENT:
        events = life.session.events if life.session is not None else ()
        found = _agent_problem(name, details, events)
        if found:
            fail(obs, NAME, f"{name} announced {details}, but {found}")
    elif name == "tools.result.appended":
        events = life.session.events if life.session is not None else ()
        last = events[-1] if events else None
        newest = (last.type, last.data["message"]["source"]["callId"] if last.type == "tool/result" else None) if last else None
        if newest != ("tool/result", details["call_id"]):
            fail(obs, NAME, f"tools.result.appended names the result of {details['call_id']}, but the newest event is {newest}")


_NEWEST = {"agent.turn.start": "turn/start", "agent.assistant.appended": "assistant/message", "agent.turn.end": "turn/end"}
_AGENT = frozenset({*_NEWEST, "agent.pre_step", "llm.request", "llm.chunk"})


def _agent_problem(name: str, details: dict[str, Any], events: Any) -> str | None:
    """What is untrue of an agent point's turn and step, read from the live log (None: nothing)."""
    if name in _NEWEST:
        last = events[-1] if events else None
        wanted = {k: details[k] for k in ("turn", "step") if k in details}
        if last is None or last.type != _NEWEST[name] or any(last.data.get(k) != v for k, v in wanted.items()):
            return f"the newest event is {(last.type, {k: last.data.get(k) for k in wanted}) if last else None}"
        return None
    turn_at = next((i for i in range(len(events) - 1, -1, -1) if events[i].type in ("turn/start", "turn/end")), None)
    if turn_at is None or events[turn_at].type != "turn/start":
        return "no turn is open"
    turn = events[turn_at].data.get("turn")
    steps = [e for e in events[turn_at:] if e.type in ("step/start", "step/end")]
    if name == "agent.pre_step":
        opened = sum(1 for e in steps if e.type == "step/start")
        if (details["turn"], details["step"]) != (turn, opened + 1) or (steps and steps[-1].type == "step/start"):
            return f"turn {turn} is open with {opened} steps opened (the next is {opened + 1}), {'one still open' if steps and steps[-1].type == 'step/start' else 'none open'}"
        return None
    if not steps or steps[-1].type != "step/start":
        return f"no step of turn {turn} is open"
    open_step = steps[-1].data.get("step")
    if (details["turn"], details["step"]) != (turn, open_step):
        return f"the open step is turn {turn} step {open_step}"
    return None


def _announced(obs: Judge, at: Point) -> None:
    check_announcement(obs, at.life, at.name, at.details)
    if at.name == "agent.assistant.appended":
        announced: set[tuple[int, Any, Any]] = obs.memory(NAME)
        announced.add((at.life.index, at.details.get("turn"), at.details.get("step")))


def check_message_announcements(obs: Judge, live: Live) -> None:
    """Every assistant message a live process appended was announced (agent.assistant.appended,
    moment 1 of a call: where faults and crashes aimed at it strike)."""
    announced: set[tuple[int, Any, Any]] = obs.memory(NAME)
    for event in live.fresh:
        if event.type == "assistant/message":
            obs.count(NAME)
            turn, step = event.data.get("turn"), event.data.get("step")
            if (live.life.index, turn, step) not in announced:
                fail(
                    obs,
                    NAME,
                    f"assistant/message {event.seq} (turn {turn} step {step}) was appended, but agent.assistant.appended was never announced",
                )


POINTS_TRUTHFUL = Invariant(
    NAME,
    (
        "every named point the runtime announces carries each detail it is declared with (none null), and"
        " one that reports an appended tool/call or tool/result names the event the log holds"
    ),
    checks={"point": _announced, "live": check_message_announcements},
    memory=lambda obs: set(),  # (process, turn, step) of each agent.assistant.appended announced
)
