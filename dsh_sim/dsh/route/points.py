"""The DSH route's named points: where the host asks the simulator whether to go on.

Route points sit outside DSH's code (Cordis interceptors and a ``session/event`` observer in
``js/route-host.mjs``); world points are the world tools' requests; filesystem points are
the SimFS operations of DSH's JSONL backend.  ``ours`` names the point of dsh-sim's registry
(:mod:`dsh_sim.engine.points`) at the same moment of the route, which is how a scenario's
fault rule is translated and which crash states both runtimes can express.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class RoutePoint:
    name: str
    description: str
    keys: tuple[str, ...]
    ours: str | None  # the same moment in dsh-sim's runtime (None: no counterpart)
    comparable: bool = True  # a crash here is the same state in both runtimes (fs points are not)


_ROUTE = (
    RoutePoint("route.turn.start", "turn/start appended in memory (session/event observer)", ("turn", "seq"), "agent.turn.start"),
    RoutePoint("route.pre_step", "agent/pre-step, before DSH's checkpoint of the previous step", ("turn", "step"), "agent.pre_step"),
    RoutePoint(
        "route.llm.request", "llm/stream inside DSH's checkpoint: the request is durable, the adapter not yet called", (), "llm.request"
    ),
    RoutePoint(
        "route.assistant.appended", "assistant/message appended in memory (moment 1)", ("turn", "step", "seq"), "agent.assistant.appended"
    ),
    RoutePoint(
        "route.tool_call.appended",
        "tool/call appended in memory, not yet durable",
        ("call_id", "turn", "step", "seq"),
        "tools.call.appended",
    ),
    RoutePoint("route.tools.execute", "tools/execute before DSH's checkpoint of the call", ("call_id", "tool", "nested"), None),
    RoutePoint(
        "route.tools.body",
        "tools/execute inside DSH's checkpoint: the call is durable, the body about to run",
        ("call_id", "tool", "nested"),
        "tools.execute.body",
    ),
    RoutePoint(
        "route.tool_result.appended", "tool/result appended in memory, not yet durable", ("call_id", "seq"), "tools.result.appended"
    ),
    RoutePoint("route.turn_stopping", "agent/turn-stopping: a step ended the turn's work, its end not yet appended", ("turn",), None),
    RoutePoint("route.turn.end", "turn/end appended in memory", ("turn", "seq"), "agent.turn.end"),
)
_WORLD = (
    RoutePoint("world.deliver", "a world tool's request leaves (no effect yet)", ("call_id", "tool", "service"), "world.deliver"),
    RoutePoint(
        "world.respond",
        "the service acted and the ledger recorded it; the response is on its way (moment 3 passed)",
        ("call_id", "tool", "service"),
        "world.respond",
    ),
)
FS_OPS = {  # SimFS operation (node:fs name) -> point
    "open": "fs.open",
    "write": "fs.write",
    "fsync": "fs.fsync",
    "ftruncate": "fs.ftruncate",
    "truncate": "fs.truncate",
    "mkdir": "fs.mkdir",
    "link": "fs.link",
    "rm": "fs.unlink",
}
_FS = tuple(
    RoutePoint(point, f"DSH's JSONL backend: {op} (SimFS)", ("path",), point, comparable=False)
    for op, point in [*FS_OPS.items(), ("fsync", "fs.fsync_dir")]
)

POINTS: dict[str, RoutePoint] = {p.name: p for p in (*_ROUTE, *_WORLD, *_FS)}
FROM_OURS: dict[str, str] = {p.ours: p.name for p in POINTS.values() if p.ours is not None}
