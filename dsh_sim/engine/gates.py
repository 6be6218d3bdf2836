"""How a simulated process's ports reach the simulation: the probe and the filesystem gate.

Runtime named points (the probe port) and filesystem operations (SimFS's gate) both end in
:meth:`Simulation.point`, which applies crashes, delays and cancellations itself; what is
left — a domain fault — is acted out here: an I/O error or fsync failure for SimFS, an
injected tool failure or an unavailable sandbox for the runtime.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from dsh_sim.adapters.simfs import FsFault, ProcessView
from dsh_sim.adapters.simfs.frames import complete_end
from dsh_sim.engine.faults import FaultRule
from dsh_sim.engine.vocabulary import ERRNOS
from runtime.agent.sandbox import SandboxUnavailableError
from runtime.tools.results import HarnessError

if TYPE_CHECKING:
    from dsh_sim.engine.faults import Firing
    from dsh_sim.engine.lifetime import Lifetime
    from dsh_sim.engine.trace import Trace

# How a process's ports reach the simulation: announce a named point of a lifetime, get back
# the domain fault to act out (crashes, delays and cancellations are applied on the way).
PointFn = Callable[["Lifetime", str, dict[str, Any]], Awaitable["Firing | None"]]


# What an injected ``tool_failure`` raises in place of the tool body: message, name, code.
INJECTED_TOOL_FAILURE = ("injected tool failure", "InjectedToolFailure", "INJECTED")


class Probe:
    """The probe port of one process: runtime points go through the simulation."""

    def __init__(self, point: PointFn, life: Lifetime) -> None:
        self._point = point
        self._life = life

    async def at(self, point: str, **details: Any) -> None:
        firing = await self._point(self._life, point, details)
        if firing is None:
            return
        action = firing.rule.action
        if action == "tool_failure":
            message, name, code = INJECTED_TOOL_FAILURE
            raise HarnessError(message, name=name, code=code)
        if action == "sandbox_unavailable":
            raise SandboxUnavailableError(str(details.get("mode")), "injected by the fault plan")


class Gate:
    """Filesystem gate and domain gate of one process."""

    def __init__(self, point: PointFn, trace: Trace, life: Lifetime) -> None:
        self._point = point
        self._trace = trace
        self._life = life

    async def before_fs(self, view: ProcessView, op: str, path: str, details: dict[str, Any]) -> FsFault | None:
        firing = await self._point(self._life, f"fs.{op}", {"path": path, **details})
        if firing is None:
            return None
        rule = firing.rule
        errno = ERRNOS[rule.errno]
        if rule.action == "fsync_fail":
            return FsFault("fsync_fail", errno, rule.drop_dirty)
        if rule.action in ("replaced", "removed", "contended"):
            return FsFault(rule.action)
        return FsFault("error", errno)

    def after_fs(self, view: ProcessView, op: str, path: str, outcome: str) -> None:
        trace = self._trace
        if trace.enabled:  # (explore's recovery runs trace nothing: not even the call is made)
            trace.record("fs", view.pid, op, path, outcome)

    async def domain(self, point: str, details: dict[str, Any]) -> FaultRule | None:
        """For the simulated world, model and answerer: the domain fault to act out, if any."""
        firing = await self._point(self._life, point, details)
        return firing.rule if firing is not None else None


def complete_frames_end(data: bytes) -> int:
    """End offset of the last complete zstd frame (0 if none or unreadable)."""
    return complete_end(data)
