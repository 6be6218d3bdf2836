"""``points_truthful``: the runtime's probe announces what just happened, with its declared details.

Every fault rule, crash boundary and coverage case is keyed on the named points the runtime
announces through its probe port.  An announcement that drops a declared detail (or sends
``null``) silently disarms every rule that matches on it; one that names the wrong call puts a
crash somewhere else than the scenario says.  So each runtime announcement must carry every
detail key its point declares (:mod:`dsh_sim.engine.points`), none null, and the points that
report an event appended in memory must name an event that the live log holds: a ``tool/call``
(with that seq, call id and tool) or the newest ``tool/result`` (of that call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dsh_sim.engine.points import spec
from dsh_sim.evidence.invariants.base import Judge, fail

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
    elif name == "tools.result.appended":
        events = life.session.events if life.session is not None else ()
        last = events[-1] if events else None
        newest = (last.type, last.data["message"]["source"]["callId"] if last.type == "tool/result" else None) if last else None
        if newest != ("tool/result", details["call_id"]):
            fail(obs, NAME, f"tools.result.appended names the result of {details['call_id']}, but the newest event is {newest}")
