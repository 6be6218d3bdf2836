"""A scenario run on the DSH route: one Node process per lifetime, crashes for real.

Each ``boot`` starts a fresh host process on the simulated disk; it creates the session, or
resumes it with DSH's own repair when a log is there.  A crash (``crash_now``, or a rule firing
at a point) kills the process where it stands: ``kill`` keeps the page cache, a power loss
drops (``drop``) or keeps (``keep``) what was not synced.  A run that ends with its last
process dead gets one more boot that only recovers, so every crash is judged; a run that ends
with a live process stops it cleanly (the write-behind window drains, the session closes).

The result is everything the judges need: the log's bytes after every recovery and at the
end, the world's ledger, each effect's durability check, and a trace whose digest is the
run's fingerprint (one seed + one scenario file → the same digest and log bytes).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import attrs

from dsh_sim.adapters.simfs.crash import PowerCut, apply_power_cut, keep_all, torn_last_write
from dsh_sim.adapters.simfs.disk import Disk
from dsh_sim.adapters.world import LedgerEntry
from dsh_sim.dsh.bridge import Bridge, BridgeError
from dsh_sim.dsh.install import Installation
from dsh_sim.engine.faults import CrashSpec
from runtime.persistence.layout import encode_segment, project_key

from .host import Crashed, EffectCheck, RouteWorld
from .log import decode
from .program import RouteProgram

SUFFIX = {"none": "session.jsonl", "zstd": "session.jsonl.zstd"}


@attrs.frozen
class Recovery:
    """One boot that found a log: what it read, and what DSH's repair appended."""

    lifetime: int
    before: bytes  # the log as the crash left it
    after: bytes | None  # the log once the resumed session was opened (None: the boot failed)
    error: str | None
    found_synced: bool = True  # the log the boot found was durable: its name in its directory, and every byte
    durable_events: int = 0  # how many of the events it found a power loss would have kept (DSH-8)
    crashed: bool = False  # the boot itself died at a point (a crash during recovery: not a failure)


@attrs.frozen
class RouteCrash:
    lifetime: int
    point: str | None
    label: str


@attrs.frozen
class RouteRun:
    name: str
    outcomes: tuple[str, ...]  # one per step, then "final:..." lines
    crashes: tuple[RouteCrash, ...]
    recoveries: tuple[Recovery, ...]
    ledger: tuple[LedgerEntry, ...]
    effects: tuple[EffectCheck, ...]
    log: bytes  # the log at the end (after the final recovery or clean stop)
    durable_at_stop: bytes | None  # a clean stop's log after a power loss (None: no clean stop)
    events_at_stop: int | None  # how many events the stopped session held in memory
    hits: dict[str, int]
    digest: str
    compression: str
    versions: dict[str, str]
    unfired: tuple[str, ...] = ()  # rules of the scenario that never fired on the route


def durable_events(disk: Disk, path: str, compression: str) -> int:
    """How many events of the log a power loss now would keep."""
    survivor = Disk.from_image(disk.image())
    apply_power_cut(survivor, PowerCut())
    events = decode(survivor.read_path(path), compression)
    return len(events) if isinstance(events, list) else 0


def found_synced(disk: Disk, path: str) -> bool:
    """Whether the log at ``path`` is on the medium as a process now sees it: its name durable in
    its directory and no write of it pending (what a killed writer may leave otherwise)."""
    ino = disk.resolve(path)
    if ino is None:
        return True
    return disk.resolve(path, durable=True) == ino and not disk.file(ino).pending


def log_path(program: RouteProgram) -> str:
    cfg = program.config
    return f"{cfg.root}/{project_key(cfg.workspace)}/{encode_segment(cfg.session_id)}/{SUFFIX[cfg.compression]}"


class RouteRunner:
    def __init__(
        self,
        install: Installation,
        program: RouteProgram,
        *,
        policy: str | None = None,
        tools: str | None = None,
        extra: tuple[str, ...] = (),
    ) -> None:
        self.install = install
        self.program = program
        cfg = program.config
        self.path = log_path(program)
        self.sim = RouteWorld(program.rules, self.path, cfg.compression, cfg.chunk_delay)
        self.sim.disk.mkdirs_durable("/sim")
        if cfg.root_exists:
            self.sim.disk.mkdirs_durable(cfg.root)
        self.sim.disk.mkdirs_durable(cfg.workspace)
        self.seed = f"{program.scenario.name}:{program.scenario.seed}"
        self.plugins = {"policy": policy, "tools": tools, "extra": list(extra)}
        if not cfg.checkpoint_policy and policy is None:
            self.plugins["policy"] = "none"
        self.bridge: Bridge | None = None
        self.now = 0
        self.outcomes: list[str] = []
        self.crashes: list[RouteCrash] = []
        self.recoveries: list[Recovery] = []
        self.versions: dict[str, str] = {}
        self.durable_at_stop: bytes | None = None
        self.current_step = -1  # the scenario step running now (len(steps): the run's own ending)
        self.events_at_stop: int | None = None

    # -- processes -----------------------------------------------------------------------

    def _request(self, op: str, **fields: Any) -> Any:
        assert self.bridge is not None
        reply = self.bridge.request(op, **fields)
        if not reply.ok:
            error = reply.error or {}
            raise RouteError(f"{error.get('name')}: {error.get('message')}")
        if isinstance(reply.value, dict) and "now" in reply.value:
            self.now = int(reply.value["now"])
        return reply.value

    def _die(self, spec: CrashSpec, point: str | None) -> None:
        assert self.bridge is not None
        self.bridge.kill()
        self.bridge = None
        if spec.kind == "power":
            disk = self.sim.disk
            if spec.state == "keep":
                cut = keep_all(disk)
            elif spec.state == "torn":
                cut = torn_last_write(disk, disk.resolve(self.path), spec.torn_fraction)
            else:
                cut = PowerCut()
            apply_power_cut(disk, cut)
        self.crashes.append(RouteCrash(self.sim.lifetime, point, spec.label()))
        self.sim.trace.append(("crash", self.sim.lifetime, point, spec.label()))

    def _guarded(self, op: str, **fields: Any) -> Any:
        """A request that may die at a point: ``None`` when it did."""
        try:
            return self._request(op, **fields)
        except Crashed as crash:
            self._die(crash.spec, crash.point)
            return None

    def boot(self) -> str:
        if self.bridge is not None:
            return "not-applicable: a process is already running"
        cfg = self.program.config
        self.sim.lifetime += 1
        before = self.sim.disk.read_path(self.path)
        synced = found_synced(self.sim.disk, self.path)
        kept = durable_events(self.sim.disk, self.path, cfg.compression)
        self.bridge = self.sim.spawn(self.install, self.seed)
        self.versions = dict(self.bridge.hello.get("versions", {}))
        start = self.start_args(resume=before is not None, lifetime=self.sim.lifetime, now=self.now + 1000 if self.now else None)
        try:
            started = self._request("start", **start)
        except Crashed as crash:
            self._die(crash.spec, crash.point)
            if before is not None:
                self.recoveries.append(Recovery(self.sim.lifetime, before, None, None, synced, kept, crashed=True))
            return f"crashed:{crash.point}"
        except RouteError as err:
            self._stop_quietly()
            if before is None:
                raise RouteError(f"the route host could not start a new session: {err}") from None
            self.recoveries.append(Recovery(self.sim.lifetime, before, None, str(err), synced, kept))
            return f"refused:{err}"
        if before is not None:
            self.recoveries.append(Recovery(self.sim.lifetime, before, self.sim.disk.read_path(self.path), None, synced, kept))
        return f"booted:{started['events']}"

    def start_args(self, *, resume: bool, lifetime: int, now: int | None) -> dict[str, Any]:
        """The host's ``start``: the app composed for this scenario's configuration."""
        cfg = self.program.config
        return {
            "root": cfg.root,
            "cwd": cfg.workspace,
            "sessionId": cfg.session_id,
            "compression": cfg.compression,
            "resume": resume,
            "seed": self.seed,
            "lifetime": lifetime,
            "now": now,  # the next process starts a second after the last one stopped
            "maxParallel": cfg.max_parallel_tool_calls,
            "approvalPolicy": cfg.approval_policy,
            "approvalTools": list(cfg.approval_tools),
            **{k: v for k, v in self.plugins.items() if v},
        }

    def _stop_quietly(self) -> None:
        if self.bridge is not None:
            self.bridge.kill()
            self.bridge = None

    # -- steps ---------------------------------------------------------------------------

    def step(self, index: int) -> str:
        step = self.program.steps[index]
        for rule_index, armed in enumerate(self.program.armed_at):
            if armed == index:
                self.sim.active[rule_index] = True
        if step.op == "arm":
            return "armed"
        if step.op == "boot":
            return self.boot()
        if self.bridge is None:
            return "not-applicable: no process is running"
        if step.op == "crash_now":
            self._die(step.args, None)
            return f"crashed:{step.args.label()}"
        if step.op == "prompt":
            self.sim.model_queue[:] = list(step.args.responses)
            self.sim.approvals[:] = list(step.args.approvals)
            self.sim.approval_delay = float(step.args.approval_delay)
            value = self._guarded("prompt", text=step.args.text, horizonMs=float(step.args.horizon) * 1000)
            if value is None:
                return f"crashed:{self.crashes[-1].point}"
            return f"turn:{value['reason']}" if value["ended"] else "turn:blocked"
        if step.op == "flush":
            return "flushed" if self._guarded("flush") is not None else f"crashed:{self.crashes[-1].point}"
        if step.op == "cancel":
            value = self._guarded("cancel", settle=float(step.args.settle))
            return "cancelled" if value is not None else f"crashed:{self.crashes[-1].point}"
        if step.op == "advance":
            value = self._guarded("settle", ms=float(step.args.seconds) * 1000)
            return "ok" if value is not None else f"crashed:{self.crashes[-1].point}"
        raise AssertionError(f"untranslated step {step.op}")

    def run(self) -> RouteRun:
        for rule_index, armed in enumerate(self.program.armed_at):
            if armed < 0:
                self.sim.active[rule_index] = True
        try:
            for index in range(len(self.program.steps)):
                self.current_step = index
                outcome = self.step(index)
                self.outcomes.append(outcome)
                if outcome.startswith("not-applicable"):
                    break  # as dsh-sim's runner: a step that cannot run ends the scenario
            self.current_step = len(self.program.steps)
            self._finish()
        finally:
            self._stop_quietly()
        trace = json.dumps([list(t) for t in self.sim.trace] + [self.outcomes], sort_keys=True, default=str)
        log = self.sim.disk.read_path(self.path) or b""
        digest = hashlib.sha256(trace.encode() + b"\0" + log).hexdigest()
        return RouteRun(
            self.program.scenario.name,
            tuple(self.outcomes),
            tuple(self.crashes),
            tuple(self.recoveries),
            tuple(self.sim.world.ledger),
            tuple(self.sim.effects),
            log,
            self.durable_at_stop,
            self.events_at_stop,
            dict(sorted(self.sim.hits.items())),
            digest,
            self.program.config.compression,
            self.versions,
            tuple(
                f"{rule.action} at {rule.point} (hit {rule.hit}) never fired: the route announced it {self.sim.counts[i]} matching time(s)"
                for i, rule in enumerate(self.sim.rules)
                if not self.sim.fired[i]
            ),
        )

    def _finish(self) -> None:
        # rules stop firing: the end of the scenario is not a fault site
        self.sim.active = [False] * len(self.sim.rules)
        if self.bridge is None and self.crashes and self.sim.disk.read_path(self.path) is not None:
            self.outcomes.append("final:" + self.boot())
        if self.bridge is None:
            return
        # as dsh-sim's shutdown: a graceful stop right away (a turn in flight is torn down)
        stopped = self._request("stop")
        self.events_at_stop = int(stopped["events"])
        self.bridge.close()
        self.bridge = None
        after_power = Disk.from_image(self.sim.disk.image())
        apply_power_cut(after_power, PowerCut())
        self.durable_at_stop = after_power.read_path(self.path)
        self.outcomes.append(f"final:stopped:{stopped['events']}")


class RouteError(RuntimeError):
    """DSH refused a request of the host (its message)."""


def run_route(install: Installation, program: RouteProgram, **plugins: Any) -> RouteRun:
    try:
        return RouteRunner(install, program, **plugins).run()
    except BridgeError as err:
        raise RouteError(str(err)) from err
