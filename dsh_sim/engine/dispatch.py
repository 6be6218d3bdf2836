"""The point dispatcher: what happens when the runtime announces a named point.

Every port call of a simulated process (and every probe the runtime announces) arrives here
through :meth:`.machine.Simulation.point`.  In order: a point of a dead process unwinding is
only traced; a live one is counted and traced, its harness-side bookkeeping is recorded (an
acknowledged batch, a logged tool call, a dispatched body), the observers see it, the fault
plan's rules that match it fire, and the configured time passes.  Faults enter the runtime
only here, on the simulator's side of its ports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import trio

from dsh_sim.adapters.observed import ToolMark
from dsh_sim.engine import links
from dsh_sim.engine.config import PERTURB_MAX
from dsh_sim.engine.faults import Firing
from dsh_sim.engine.gates import INJECTED_TOOL_FAILURE
from dsh_sim.engine.history import FaultFired, History, WindowFact
from dsh_sim.engine.lifetime import Lifetime
from dsh_sim.engine.points import POINTS
from dsh_sim.engine.points import spec as point_spec
from dsh_sim.engine.process import SimulatedCrash
from runtime.persistence import context as durability

if TYPE_CHECKING:
    import random
    from collections.abc import Callable

    from dsh_sim.adapters.simfs.disk import Disk
    from dsh_sim.engine.config import SimConfig
    from dsh_sim.engine.crash import CrashRecord
    from dsh_sim.engine.faults import CrashSpec, FaultPlan, FaultRule
    from dsh_sim.engine.observer import Observer
    from dsh_sim.engine.trace import Trace


class Simulation(Protocol):
    """What the dispatcher reads and calls of the simulation it serves
    (:class:`dsh_sim.engine.machine.Simulation`, which calls :func:`announce`)."""

    config: SimConfig
    plan: FaultPlan
    trace: Trace
    history: History
    disk: Disk
    observers: list[Observer]
    point_hits: dict[str, int]
    unfit: str | None
    legacy_writer: Callable[[Any], str | None] | None

    @property
    def perturb_rng(self) -> random.Random: ...
    def now(self) -> float: ...
    def log_as_written(self) -> bytes | None: ...
    def corrupt(self, rule: FaultRule) -> None: ...
    def cancel_turn(self, life: Lifetime) -> None: ...
    def crash_process(
        self, life: Lifetime, crash: CrashSpec, *, point: str | None, details: dict[str, Any] | None = None
    ) -> CrashRecord: ...


# where a failed operation on the log leaves its unacknowledged bytes in place: a truncation (a
# rollback's, or the heal before an append) or the removal of a first publication's name
REMOVALS = frozenset({"fs.ftruncate", "fs.truncate", "fs.unlink"})
# fault actions that fail no filesystem operation (what the rest do fail the write they strike: an
# error, another process's file at the target of a link); a lock file replaced or removed under the
# writer is taken again (the lease retries)
NOT_FAILURES = frozenset({"crash", "delay", "cancel", "corrupt", "source_append", "linked", "replaced", "removed"})
# operations whose failure fails no write: every removal a write makes is best-effort (a temp file
# after its link, the leftovers of a rollback: durable.unlink_quietly)
BEST_EFFORT = frozenset({"fs.unlink"})


async def announce(sim: Simulation, life: Lifetime, name: str, details: dict[str, Any]) -> Firing | None:
    """Announce ``name`` for ``life``; apply crash/delay/cancel/corrupt/source_append/linked faults
    here and return a domain fault (an I/O error, a tool failure…) for the caller to raise."""
    if name not in POINTS:
        point_spec(name)  # raises on an undeclared point
    public = details  # private details (``_events``) stay out of traces and fault matching
    for key in details:
        if key.startswith("_"):
            public = {k: v for k, v in details.items() if not k.startswith("_")}
            break
    if not life.view.alive:
        # cleanup code of a dead process unwinding: not a point a crash could strike, not
        # counted, no fault fires (its filesystem calls are refused anyway)
        sim.trace.record("dead-point", life.index, name)
        return None
    hits = sim.point_hits
    hits[name] = hits.get(name, 0) + 1
    if sim.trace.enabled:  # (a disabled trace records nothing: not even the call is made)
        sim.trace.record("point", life.index, name, public)
    if name in _MARKED:
        _record_marks(sim, life, name, details)
    for observer in sim.observers:
        observer.on_point(life, name, details)
    domain: Firing | None = None
    plan = sim.plan
    if name in plan.points:  # (most announcements meet no rule at all)
        firings = plan.hit(name, public, life.index)
        if firings:
            # the lock file replaced or removed as it is locked: the lease takes it again, so a failure
            # of that same attempt fails no write — when that is the fault the operation meets (of several
            # firing at once, the last domain fault is the one acted out: a removal followed by a
            # contention leaves the lock busy, and that write fails)
            acted = [f for f in firings if f.rule.action not in _NOT_ACTED_OUT]
            retried = name == "fs.flock" and bool(acted) and acted[-1].rule.action in ("replaced", "removed")
            for firing in firings:
                if _fire(sim, life, name, public, firing, retried=retried):
                    domain = firing
                elif firing.rule.action == "delay":
                    await trio.sleep(firing.rule.delay)
    config = sim.config
    if config.points_take_time:
        # What the configuration says a point costs (in line: a coroutine per point was a
        # measurable share of a fuzz run): the seeded perturbation that lets other tasks go
        # first, and a filesystem operation's latency (the operation runs after it, so a
        # barrier, an append or a crash can meet it in flight).
        if config.perturb and sim.perturb_rng.random() < config.perturb:
            rng = sim.perturb_rng
            pause = rng.choice((0.0, rng.uniform(0.0, PERTURB_MAX)))
            sim.trace.record("perturb", life.index, name, pause)
            await life.proc.sleep(pause)  # 0: a bare yield, the other runnable tasks go first
        if (config.io_latency or config.fsync_latency) and name.startswith("fs."):
            latency = config.io_latency + (config.fsync_latency if name in _FSYNCS else 0.0)
            if latency:
                await life.proc.sleep(latency)
    if domain is None and name == "session.flush":
        # the barrier takes the queue when the runtime goes on from here: after the point's own
        # time (a delay fault, the perturbation's pause), during which a window may expire
        sim.history.window.append(WindowFact("barrier", life.index, sim.now(), label=str(details.get("reason"))))
    return domain


_FSYNCS = ("fs.fsync", "fs.fsync_dir")  # the points an fsync latency adds to
# the points whose history :func:`_record_marks` records (every other point has none)
_MARKED = frozenset({"persist.batch.durable", "tools.call.appended", "tools.execute.body", "tools.result.appended", "agent.turn.end"})


def _record_marks(sim: Simulation, life: Lifetime, name: str, details: dict[str, Any]) -> None:
    """The history a judge needs of this point: an acknowledged batch, a logged call, a body run."""
    history = sim.history
    if name == "persist.batch.durable" and details.get("session_id") == sim.config.session_id:  # (not a second session's)
        batch, before, after = tuple(details.get("_events", ())), history.acked_bytes, sim.log_as_written()
        history.acknowledged(life.index, batch, after)
        if batch:
            label = durability.current().barrier
            history.window.append(WindowFact("ack", life.index, sim.now(), batch[0].seq, len(batch), label))
        for observer in sim.observers:
            observer.on_acknowledged(life, batch, before, after)
    if name == "tools.call.appended":
        call = ToolMark(
            "call", life.index, str(details.get("call_id")), tool=str(details.get("tool")), arguments=_logged_arguments(life, details)
        )
        history.tool_marks.append(call)
    elif name == "tools.execute.body":  # the runtime says the body runs next (before any fault fires here)
        history.tool_marks.append(ToolMark("dispatch", life.index, str(details.get("call_id"))))
    elif name == "tools.result.appended":  # the call's result is in the log
        history.tool_marks.append(ToolMark("result", life.index, str(details.get("call_id"))))
    elif name == "agent.turn.end":  # turn/end is in the log: a cancellation after this is too late for the turn
        history.tool_marks.append(ToolMark("turn_end", life.index, None, details.get("turn")))


def _logged_arguments(life: Lifetime, details: dict[str, Any]) -> str | None:
    """The arguments of the tool/call just appended (``details``: its seq), as the log has them."""
    session = life.agent.session if life.agent is not None else None
    events = session.events if session is not None else ()
    seq = details.get("seq")
    event = next((e for e in reversed(events) if e.seq == seq), None)
    return event.data.get("arguments") if event is not None and event.type == "tool/call" else None


# actions _fire handles itself; every other one is the domain fault the caller acts out
_NOT_ACTED_OUT = frozenset({"crash", "delay", "cancel", "corrupt", "source_append", "linked", "target_exists"})


def _fire(sim: Simulation, life: Lifetime, name: str, public: dict[str, Any], firing: Firing, *, retried: bool = False) -> bool:
    """Record and apply one matching rule; True when it is a domain fault the caller raises
    (a crash raises :class:`SimulatedCrash` here; a delay is the caller's to sleep)."""
    rule = firing.rule
    sim.trace.record("fault", life.index, name, firing.index, rule.action)
    history, op = sim.history, durability.current()
    history.faults.append(FaultFired(life.index, name, rule.action, firing.index, op.step, sim.now(), len(history.tool_marks)))
    if name.startswith("fs.") and rule.action not in NOT_FAILURES and name not in BEST_EFFORT and not retried:  # the write fails
        history.window.append(WindowFact("fail", life.index, sim.now(), label=op.barrier))
    if rule.action == "crash":
        assert rule.crash is not None
        sim.crash_process(life, rule.crash, point=name, details=public)
        raise SimulatedCrash(f"{rule.crash.label()} at {name}")
    if rule.action == "delay":
        return False
    if rule.action == "cancel":
        if life.agent is not None:
            sim.cancel_turn(life)
        elif life.opening is not None:  # during boot: the application abandons its open
            life.opening.cancel()
    elif rule.action == "corrupt":
        sim.corrupt(rule)
    elif rule.action == "source_append":
        _legacy_append(sim)
    elif rule.action == "linked":  # the open then meets the link (links.plant)
        _link_raced(sim, str(public.get("path")))
    elif rule.action == "target_exists":  # the link then meets the foreign file (links.plant_file)
        links.plant_file(sim.disk, sim.history, str(public.get("path")))
    else:
        if name in REMOVALS and public.get("path") == sim.config.log_path:
            sim.history.unhealed = sim.log_as_written()  # the failed removal leaves the log as it is now
        if rule.action == "tool_failure":  # the body is replaced by a raise (gates.Probe)
            sim.history.tool_marks.append(ToolMark("raised", life.index, str(public.get("call_id")), error=INJECTED_TOOL_FAILURE))
        return True
    return False


def _link_raced(sim: Simulation, path: str) -> None:
    """A ``linked`` fault: a link swapped in for the session log or lock file just before this
    open.  Other opens (a temp file, a historical source) are not what it models: an unfit
    fault, reported by the step like an unfit power cut."""
    paths = sim.config.paths
    if path in (paths.log, paths.lock):
        links.plant(sim.disk, sim.history, path, directory=False)
    elif sim.unfit is None:
        sim.unfit = f"linked cannot run at the open of {path}: it swaps a link in for the session log or lock file only"


def _legacy_append(sim: Simulation) -> None:
    """A ``source_append`` fault: the legacy writer (set by the step that seeded the source)
    appends to the historical generation; one that cannot is an unfit fault, reported by the
    step like an unfit power cut."""
    why = sim.legacy_writer(sim) if sim.legacy_writer is not None else "no historical source was seeded (seed_v0)"
    if why is not None and sim.unfit is None:
        sim.unfit = f"source_append cannot run: {why}"
