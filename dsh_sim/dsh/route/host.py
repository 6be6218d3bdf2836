"""One Node process of the DSH route host, and the simulator's answers to its questions.

The host (``js/route-host.mjs``) asks synchronously at every named point, for every model
response, for each world request and each approval, and for every filesystem operation of
DSH's JSONL backend; :class:`RouteWorld` answers from the scenario's script, the world and the
crash rules.  A crash is an exception raised inside an answer (:class:`Crashed`): it leaves
the Node side blocked on its question, and the caller kills the process.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import attrs

from dsh_sim.adapters.simfs.crash import PowerCut, apply_power_cut
from dsh_sim.adapters.simfs.disk import Disk
from dsh_sim.adapters.world import LedgerEntry, World
from dsh_sim.adapters.world_tools import SERVICES
from dsh_sim.dsh.bridge import Bridge
from dsh_sim.dsh.install import Installation
from dsh_sim.dsh.simfs_server import SimFsServer
from dsh_sim.engine.faults import CrashSpec
from dsh_sim.engine.gates import INJECTED_TOOL_FAILURE
from dsh_sim.scenario.args import ModelResponse

from .log import decode
from .points import FS_OPS
from .program import RouteRule

SCRIPT = "route-host.mjs"


class Crashed(Exception):
    """The process dies at ``point`` (``None``: ``crash_now`` between steps)."""

    def __init__(self, spec: CrashSpec, point: str | None) -> None:
        super().__init__(f"crash at {point or 'crash_now'} ({spec.label()})")
        self.spec = spec
        self.point = point


@attrs.frozen
class EffectCheck:
    """At a world effect: was the call's ``tool/call`` durable (on disk after a power loss)?"""

    call_id: str
    tool: str
    lifetime: int
    durable_call: bool


def _durable_calls(disk: Disk, path: str, compression: str) -> set[str]:
    """The call ids of the ``tool/call`` events a power loss now would leave in the log."""
    survivor = Disk.from_image(disk.image())
    apply_power_cut(survivor, PowerCut())
    events = decode(survivor.read_path(path), compression)
    return set() if isinstance(events, str) else {str(e.data.get("callId")) for e in events if e.type == "tool/call"}


class RouteWorld:
    """The simulator's side of the route: disk, world, scripted model and user, crash rules.

    It outlives the Node processes it serves (one per lifetime), as the world and the disk
    outlive a crashed agent.
    """

    def __init__(self, rules: tuple[RouteRule, ...], log_path: str, compression: str, chunk_delay: float) -> None:
        self.disk = Disk()
        self.world = World()
        self.rules = rules
        self.active: list[bool] = [False] * len(rules)
        self.counts: list[int] = [0] * len(rules)
        self.fired: list[bool] = [False] * len(rules)
        self.log_path = log_path
        self.compression = compression
        self.chunk_delay = chunk_delay
        self.model_queue: list[ModelResponse] = []
        self.approvals: list[str] = []
        self.approval_delay = 0.0  # the simulated user's thinking time (a prompt's approval_delay)
        self.lifetime = 0
        self.trace: list[tuple[Any, ...]] = []
        self.effects: list[EffectCheck] = []
        self.duplicate: dict[str, bool] = {}  # call id -> its request is delivered twice
        self.model_calls = 0
        # each announcement: (lifetime, point, details) — the route coverage and the trace
        self.hits: dict[str, int] = {}
        self.on_point: Callable[[str, dict[str, Any]], None] | None = None  # explore records here

    # -- crash rules ---------------------------------------------------------------------

    def announce(self, point: str, details: dict[str, Any]) -> RouteRule | None:
        """Count the announcement against every armed rule: a crash raises :class:`Crashed`;
        another fault is returned for the caller to apply (the first that fires)."""
        self.hits[point] = self.hits.get(point, 0) + 1
        self.trace.append(("point", self.lifetime, point, tuple(sorted((k, str(v)) for k, v in details.items()))))
        if self.on_point is not None:
            self.on_point(point, details)
        fired: RouteRule | None = None
        for index, rule in enumerate(self.rules):
            if not self.active[index] or self.fired[index] or rule.point != point:
                continue
            if rule.lifetime is not None and rule.lifetime != self.lifetime:
                continue
            if any(str(details.get(key)) != str(value) for key, value in rule.match):
                continue
            self.counts[index] += 1
            if self.counts[index] < rule.hit:
                continue
            if self.counts[index] >= rule.hit + rule.times - 1:
                self.fired[index] = True
            self.trace.append(("fault", self.lifetime, point, index, rule.action))
            if rule.action == "crash":
                raise Crashed(rule.crash, point)
            fired = fired or rule
        return fired

    # -- the host's questions --------------------------------------------------------------

    def callback(self, message: dict[str, Any]) -> dict[str, Any]:
        kind = message["cb"]
        if kind == "point":
            rule = self.announce(str(message["name"]), dict(message.get("details") or {}))
            if rule is None:
                return {"ok": True}
            if rule.action == "cancel":
                return {"ok": True, "cancel": True}
            if rule.action == "delay":
                return {"ok": True, "delayMs": rule.delay * 1000}
            return {"ok": True, "fail": list(INJECTED_TOOL_FAILURE)}  # tool_failure: the body raises instead
        if kind == "model":
            return {"ok": True, "value": self._model()}
        if kind == "world":
            return {"ok": True, "value": self._world(message)}
        if kind == "approval":
            answer = self.approvals.pop(0) if self.approvals else None
            self.trace.append(("approval", self.lifetime, message.get("call_id"), answer))
            return {"ok": True, "value": {"answer": answer, "delayMs": self.approval_delay * 1000}}
        raise ValueError(f"unknown route host callback {kind!r}")

    def _model(self) -> dict[str, Any]:
        response = self.model_queue.pop(0) if self.model_queue else ModelResponse(text="ok")
        self.model_calls += 1
        calls = [
            {
                "id": c.id,
                "name": c.name,
                "arguments": c.arguments if isinstance(c.arguments, str) else _json(c.arguments),
            }
            for c in response.tool_calls
        ]
        self.trace.append(("model", self.lifetime, response.text, tuple(c["id"] for c in calls)))
        delay = float(response.chunk_delay) or self.chunk_delay
        return {"text": response.text, "calls": calls, "finish": response.finish, "chunkDelay": delay * 1000}

    def _world(self, message: dict[str, Any]) -> dict[str, Any]:
        tool, call_id = str(message["tool"]), str(message["call_id"])
        service_name, op = SERVICES[tool]
        service = self.world.services[service_name]
        details = {"service": service_name, "call_id": call_id, "root_call_id": call_id, "tool": tool}
        # as dsh-sim's World.call: the same faults at the same moments, the same error texts
        if message["phase"] == "deliver":
            rule = self.announce("world.deliver", details)
            self.duplicate[call_id] = rule is not None and rule.action == "duplicate"
            out: dict[str, Any] = {"latencyMs": service.request_latency * 1000}
            if rule is not None and rule.action == "request_lost":
                return {"latencyMs": 0, "error": f"request to {service_name} was lost"}
            if rule is not None and rule.action == "timeout":
                return {"latencyMs": rule.delay * 1000, "error": f"request to {service_name} timed out"}
            if rule is not None and rule.action == "delay":
                out["latencyMs"] += rule.delay * 1000
            if rule is not None and rule.action == "cancel":
                out["cancel"] = True
            return out
        key = message.get("key")
        args = message.get("args")
        args = args if isinstance(args, dict) else {}  # as dsh-sim's world tools read arguments
        self.effects.append(
            EffectCheck(call_id, tool, self.lifetime, call_id in _durable_calls(self.disk, self.log_path, self.compression))
        )
        response: dict[str, Any] = {}
        for delivery in range(2 if self.duplicate.pop(call_id, False) else 1):
            applied, response = service.handle(op, args, key if service.idempotent else None)
            note = "applied" if applied else ("read" if service.read_only or op in ("lookup", "read") else "deduplicated")
            if delivery:
                note = "duplicate-delivery"
            ledger = self.world.ledger
            ledger.append(
                LedgerEntry(
                    len(ledger),
                    service_name,
                    op,
                    call_id,
                    key,
                    applied,
                    note,
                    0.0,
                    self.lifetime,
                    copy.deepcopy(args),
                    copy.deepcopy(response),
                )
            )
            self.trace.append(("world", self.lifetime, service_name, op, call_id, key, applied))
        rule = self.announce("world.respond", details)
        latency = service.response_latency * 1000
        answer: dict[str, Any] = {"text": repr(sorted(response.items())), "latencyMs": latency}
        if rule is not None and rule.action == "response_lost":
            answer["error"] = f"the response from {service_name} was lost"
        elif rule is not None and rule.action == "timeout":
            answer.update(latencyMs=latency + rule.delay * 1000, error=f"the response from {service_name} timed out")
        elif rule is not None and rule.action == "delay":
            answer["latencyMs"] = latency + rule.delay * 1000
        elif rule is not None and rule.action == "cancel":
            answer["cancel"] = True
        return answer

    def fs_point(self, server: SimFsServer) -> Callable[[str, dict[str, Any]], None]:
        def before(op: str, args: dict[str, Any]) -> None:
            point = FS_OPS.get(op)
            if point is None:
                return
            fd = args.get("fd")
            if op == "fsync" and isinstance(fd, int) and server.fds.get(fd, ("", False))[1]:
                point = "fs.fsync_dir"
            self.announce(point, {"path": str(args.get("path", args.get("dst", "")))})

        return before

    # -- processes -------------------------------------------------------------------------

    def spawn(self, install: Installation, seed: str) -> Bridge:
        server = SimFsServer(self.disk, self.lifetime, f"{seed}:{self.lifetime}")
        server.before = self.fs_point(server)
        return Bridge(install, server, script=SCRIPT, callbacks=self.callback)


def _json(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"), sort_keys=True)
