"""The simulation: one simulated machine with its disk, world, clock and processes.

Everything the runtime sees comes from here, through its ports: the disk through a
per-process :class:`ProcessView`, time from the shared ``MockClock``, ids from the seeded
generator, faults from the plan at named points.  Process lifetimes follow one another
(crash → reboot → resume with repair); the disk and the world's ledger outlive them.

The methods are the *operations* a state machine or a scenario step performs; each runs
the current process until it is quiescent again.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Coroutine
from typing import Any

import trio

from dsh_sim.adapters.observed import ToolMark
from dsh_sim.adapters.policy import CallPolicy
from dsh_sim.adapters.simfs import Disk, FidelityError, ProcessView
from dsh_sim.adapters.simfs.crash import (
    DROP_ALL,
    PowerCut,
    apply_power_cut,
    keep_all,
    misfit,
    random_state,
    torn_last_write,
)
from dsh_sim.adapters.world import World
from dsh_sim.engine.config import SimConfig
from dsh_sim.engine.crash import CrashPoint, CrashRecord, Evidence, crash_phase
from dsh_sim.engine.determinism import SimClock, SimIds, derive_seed, new_clock
from dsh_sim.engine.dispatch import announce
from dsh_sim.engine.faults import CrashSpec, FaultPlan, FaultRule, Firing
from dsh_sim.engine.gates import Gate, Probe
from dsh_sim.engine.hang import Hung
from dsh_sim.engine.history import History, WindowFact
from dsh_sim.engine.lifetime import Lifetime
from dsh_sim.engine.media import as_written, corrupt
from dsh_sim.engine.observer import Observer
from dsh_sim.engine.process import Reply, SimProcess, SimulatedCrash
from dsh_sim.engine.programs import (
    Surroundings,
    agent_main,
    second_writer_main,
    storage_main,
)
from dsh_sim.engine.trace import TaskTracer, Trace
from runtime.adapters.script_model import ScriptedResponse
from runtime.ports import Ports


class Simulation:
    def __init__(
        self,
        seed: int,
        config: SimConfig | None = None,
        plan: FaultPlan | None = None,
        *,
        keep_trace: bool = False,
        kind: str = "agent",
        trace: bool = True,
        disk: Disk | None = None,
        world: World | None = None,
    ) -> None:
        if kind not in ("agent", "storage"):
            raise ValueError(f"simulation kind must be agent or storage, got {kind!r}")
        self.kind = kind
        self.seed = seed
        self.config = config or SimConfig()
        self.plan = plan or FaultPlan()
        # why a crash could not leave the post-crash state its scenario recorded (the step that
        # met it reports that it cannot run as written; see crash_process)
        self.unfit: str | None = None
        # the older runtime a ``source_append`` fault lets append to the historical source: set
        # by the step that seeded it; returns why it cannot (None: it appended)
        self.legacy_writer: Callable[[Simulation], str | None] | None = None
        self.trace = Trace(keep=keep_trace, enabled=trace)
        self.clock = new_clock()
        self.ids_rng = random.Random(derive_seed(seed, "ids"))
        if disk is None:
            disk = Disk()
            if self.config.root_exists:
                disk.mkdirs_durable(self.config.root)
            disk.mkdirs_durable(self.config.workspace)
        self.disk = disk
        self.world = World() if world is None else world
        self.model_queue: list[ScriptedResponse] = []
        self.approval_answers: list[str] = []
        self.approval_delay: list[float] = [0.0]  # the simulated user's time to answer (a cell the prompt sets)
        self.call_policies: dict[str, CallPolicy] = {}  # config policy: how the deployment answers each call
        self.lifetimes: list[Lifetime] = []
        self.handle_sessions = 0  # second sessions the storage machine's handle-seam appends created
        self.primary: Lifetime | None = None
        self.retries = 0  # harness-minted retry call ids stay unique
        self.history = History()
        self.observers: list[Observer] = []
        self.point_hits: dict[str, int] = {}

    # The generators of random crash states and of perturbations are made when first drawn
    # from, seeded as when they were made with the simulation (``seed`` never changes): most
    # simulations never draw from them, and seeding one costs more than many a point.
    @functools.cached_property
    def fault_rng(self) -> random.Random:
        return random.Random(derive_seed(self.seed, "faults"))

    @functools.cached_property
    def perturb_rng(self) -> random.Random:
        return random.Random(derive_seed(self.seed, "perturb"))

    def notify(self, hook: str, *args: Any) -> None:
        """Announce a driver-level happening (a step, a failed flush) to every observer."""
        for observer in self.observers:
            getattr(observer, hook)(*args)

    def evidence(self, life: Lifetime) -> Evidence:
        """What a crash of ``life`` at this instant would leave for the judges, besides the disk."""
        return Evidence.capture(
            life.session.events if life.session is not None else (),
            agent=life.agent is not None,
            world=self.world,
            scripted=self.model_queue,
            acked=self.history.acked,
            acked_bytes=self.history.acked_bytes,
            now=self.now(),
        )

    # -- starting from a recorded instant ---------------------------------------------------

    def capture(self, life: Lifetime, name: str, details: dict[str, Any], *, index: int, step_index: int, occurrence: int) -> CrashPoint:
        """This instant as a point a crash could strike (explore records one per named point)."""
        return CrashPoint(
            index=index,
            step_index=step_index,
            lifetime=life.index,
            point=name,
            occurrence=occurrence,
            details={k: v for k, v in details.items() if not k.startswith("_")},
            image=self.disk.image(),
            world=self.world.snapshot(),
            history=self.history.snapshot(),
            evidence=self.evidence(life),
        )

    @classmethod
    def from_crash_point(
        cls, point: CrashPoint, crash: CrashSpec, cut: PowerCut | None, disk: Disk, phase: str, *, seed: int, config: SimConfig, kind: str
    ) -> Simulation:
        """A new simulation that starts right after a crash at ``point``: the post-crash
        ``disk`` (the recorded image, cut by ``cut`` under power loss; ``phase`` names what that
        did to the log), the world and history as they were, the clock at the crash instant.
        No process runs yet; the next boot recovers."""
        sim = cls(seed, config, FaultPlan(), kind=kind, trace=False, disk=disk, world=point.world.snapshot())
        sim.history = point.history.snapshot()
        sim.history.prior_crash = point.record(
            kind=crash.kind, label=crash.label(), cut=cut.describe() if cut else None, phase=phase, image=disk.image()
        )
        sim.clock.jump(point.evidence.time)
        return sim

    # -- time and identity -----------------------------------------------------------------

    def now(self) -> float:
        return self.clock.current_time()

    @property
    def current(self) -> Lifetime | None:
        """The primary process (a second writer never becomes current)."""
        return self.primary

    @property
    def alive(self) -> bool:
        life = self.current
        return life is not None and not life.dead and life.boot_error is None and life.session is not None

    # -- named points ----------------------------------------------------------------------

    def point(self, life: Lifetime, name: str, details: dict[str, Any]) -> Coroutine[Any, Any, Firing | None]:
        """Announce a named point; apply crash/delay/cancel/corrupt; return a domain fault
        (see :func:`.dispatch.announce`: its coroutine, awaited by the caller — no frame of
        this method's own per point)."""
        return announce(self, life, name, details)

    def log_as_written(self) -> bytes | None:
        """The log's bytes as the runtime wrote them (see :func:`.media.as_written`)."""
        log = self.config.log_path
        return as_written(self.disk.read_path(log), self.history.corruptions, log)

    def corrupt(self, rule: FaultRule) -> None:
        """Media corruption: flip one stored byte (see :func:`.media.corrupt`)."""
        corrupt(self.disk, self.history.corruptions, rule, self.config)

    # -- crashes ---------------------------------------------------------------------------

    def power_cut(self, crash: CrashSpec) -> PowerCut:
        """The post-crash state a power crash of this spec leaves on the disk as it is now."""
        if crash.state == "drop":
            return DROP_ALL
        if crash.state == "random":
            return random_state(self.disk, self.fault_rng)
        if crash.state == "cut":
            return crash.cut or PowerCut()
        if crash.state == "torn":
            return torn_last_write(self.disk, self.disk.resolve(self.config.log_path), crash.torn_fraction)
        return keep_all(self.disk)

    def crash_process(self, life: Lifetime, crash: CrashSpec, *, point: str | None, details: dict[str, Any] | None = None) -> CrashRecord:
        """Fix the disk at the crash instant, revoke the dead views, record the evidence."""
        evidence = self.evidence(life)
        cut = self.power_cut(crash) if crash.kind == "power" else None
        problem = misfit(self.disk, cut) if cut is not None and crash.state == "cut" else None
        if problem is not None:
            # a recorded state that no crash can leave here is never invented: the process dies
            # as killed (the disk as it is), and the step reports that it cannot run as written
            where = f"at {point}" if point is not None else "now"
            self.unfit = f"the power cut {cut.describe() if cut else ''} {where} is not a post-crash state of this disk: {problem}"
            crash, cut = CrashSpec(kind="kill"), None
        phase = crash_phase(self.disk, self.config.log_path, crash.kind, cut)
        if cut is not None:
            for other in self.lifetimes:
                other.view.revoke()
                other.dead = True
            apply_power_cut(self.disk, cut)
        else:
            life.view.revoke()
            life.dead = True
        record = evidence.record(
            lifetime=life.index,
            point=point,
            details=details or {},
            kind=crash.kind,
            label=crash.label(),
            cut=cut.describe() if cut is not None else None,
            phase=phase,
            image=self.disk.image(),
        )
        life.crash = record
        self.trace.record("crash", life.index, point, crash.label(), record.cut)
        self.history.crashes.append(record)
        for observer in self.observers:
            observer.on_crash(record)
        return record

    # -- processes ---------------------------------------------------------------------------

    def ports(self, life: Lifetime) -> Ports:
        """A process's view of the world: its SimFS view, virtual time, seeded ids, the probe."""
        return Ports(fs=life.view, clock=SimClock(self.clock), ids=SimIds(self.ids_rng), probe=Probe(self.point, life))

    def _surroundings(self, life: Lifetime) -> Surroundings:
        gate = life.view.gate
        assert isinstance(gate, Gate)
        return Surroundings(
            self.config,
            self.ports(life),
            gate,
            self.world,
            self.now,
            self.model_queue,
            self.approval_answers,
            self.history.answerer_failures,
            self.history.tool_marks,
            self.history.model_requests,
            self.history.approval_consulted,
            self.approval_delay,
            self.call_policies,
            self.watch_admissions,
        )

    def watch_admissions(self, life: Lifetime, session: Any) -> None:
        """Record every event ``session`` admits from now on as a write-behind input (its time
        and order among the acknowledgements, failures and barriers); events it holds that are
        not yet acknowledged count as admitted now (bound at the start of the process)."""
        window, index = self.history.window, life.index
        stored = life.store.binding(session).handle.next_seq  # what the log held when the store bound it
        for event in session.events[stored:]:
            window.append(WindowFact("admit", index, self.now(), event.seq, label="bound"))
        session.subscribe(lambda event: window.append(WindowFact("admit", index, self.now(), event.seq)))

    def boot(self, *, secondary: bool = False) -> Lifetime:
        """Start a process; it resumes the session with repair (or creates it).

        A ``secondary`` process is a second writer: it opens the stored session for write
        while the primary is alive, appends one event and exits — the lock must refuse it.
        """
        index = len(self.lifetimes) + 1
        last = self.lifetimes[-1] if self.lifetimes else None
        if last is not None and all(other.dead for other in self.lifetimes):
            for observer in self.observers:
                observer.before_boot(last.crash)

        async def main(proc: SimProcess) -> None:
            program = second_writer_main if secondary else agent_main if self.kind == "agent" else storage_main
            await program(self._surroundings(life), life)

        tracer: list[trio.abc.Instrument] = [TaskTracer(self.trace, index, self.clock)] if self.trace.enabled else []
        proc = SimProcess(index, main, clock=self.clock, seed=derive_seed(self.seed, "sched", index), instruments=tracer)
        view = ProcessView(self.disk, index, None, now_ns=lambda: int(self.now() * 1e9), checkpoint=proc.checkpoint)
        life = Lifetime(index, proc, view)
        life.log_at_boot = self.disk.read_path(self.config.log_path)
        view.gate = Gate(self.point, self.trace, life)
        self.lifetimes.append(life)
        if not secondary:
            self.primary = life
        self.trace.record("boot", index, secondary)
        reply = proc.start()
        self._after(life, reply)
        if secondary:
            if not life.dead:
                self._after(life, proc.stop())
            life.dead = True
            for observer in self.observers:
                observer.on_second_writer(life)
        else:
            self._committed_at_open(life)
            for observer in self.observers:
                observer.on_boot(life)
        return life

    def _committed_at_open(self, life: Lifetime) -> None:
        """Record what a process that opened the log found committed there."""
        if life.boot_error is not None or life.report is None or life.session is None:
            return
        torn = getattr(life.report, "torn", None)
        self.history.committed_at_open(
            tuple(life.report.events),
            len(torn.recovered) if torn is not None else 0,
            self.log_as_written(),
            torn.truncate_to if torn is not None else None,
        )

    def _after(self, life: Lifetime, reply: Reply) -> Reply:
        """Account for a command's reply; a crash is known from our own record, not the exception.

        (Cleanup code of the dying process may raise something else on top of the crash.)
        A command that hung its process (:mod:`.hang`) is a finding; the harness then kills
        the process as an operator would, and the run goes on from that crash.
        """
        if reply.state == "hung":
            hang = reply.error
            assert isinstance(hang, Hung)
            life.hung = hang
            self.trace.record("hung", life.index, hang.kind, hang.batches)
            # a stop the fault plan slowed down on purpose may overrun its grace: killed all
            # the same, as an operator would, but not the runtime's fault
            delayed = any(f.action == "delay" and f.lifetime == life.index for f in self.history.faults)
            if not (hang.kind == "overrun" and delayed):
                for observer in self.observers:
                    observer.on_hang(life, hang)
            if life.crash is None:
                self.crash_process(life, CrashSpec(kind="kill"), point=None)
            reply = life.proc.kill(hang)
        if reply.state == "exited":
            life.dead = True
            error = reply.error
            if life.crash is not None:
                pass
            elif isinstance(error, (SimulatedCrash, FidelityError)):
                raise RuntimeError(f"process {life.index} died ({error!r}) without a crash record")
            elif error is not None and not life.proc.ready:
                life.boot_error = error
            elif error is not None:
                life.exit_error = error
        return reply

    def run(self, fn: Callable[[Lifetime], Any], horizon: float = 600.0) -> Reply:
        """Run ``fn(life)`` inside the current process until done or quiescent."""
        life = self.current
        if life is None or life.dead:
            raise RuntimeError("no live simulated process")

        async def task() -> Any:
            return await fn(life)

        return self._after(life, life.proc.call(task, horizon))

    def advance(self, seconds: float) -> Reply | None:
        life = self.current
        if life is None or life.dead:
            self.clock.jump(seconds)
            return None
        return self._after(life, life.proc.advance(seconds))

    def kill_now(self, crash: CrashSpec) -> CrashRecord:
        """A crash at a quiescent moment (not at a named point)."""
        life = self.current
        assert life is not None and not life.dead
        record = self.crash_process(life, crash, point=None)
        self._after(life, life.proc.crash())
        return record

    def cancel_turn(self, life: Lifetime) -> None:
        """Cancel ``life``'s running turn (a cancel step or fault), noting it for the judges."""
        self.note_cancel(life, "signal")
        if life.agent is not None:
            life.agent.cancel()

    def note_cancel(self, life: Lifetime, how: str) -> None:
        """The turn in flight (if any) is cancelled now: by a cancel, or a graceful stop."""
        agent = life.agent
        if agent is None or not agent.turn_active:
            return
        turn = next((e.data.get("turn") for e in reversed(agent.session.events) if e.type == "turn/start"), None)
        self.history.tool_marks.append(ToolMark("cancel", life.index, None, turn, how=how))

    def shutdown(self) -> None:
        """Stop every live process gracefully; a clean stop must have persisted everything."""
        for life in self.lifetimes:
            if not life.dead and not life.proc.exited:
                faults_before = len(self.history.faults)
                self.note_cancel(life, "stop")  # a turn in flight is torn down: its calls are cancelled
                # the stop cancels the process's tasks, the write-behind worker with its timer among
                # them, before its store drains the queue (shielded): a window expiring in between
                # starts no background write
                self.history.window.append(WindowFact("stop", life.index, self.now()))
                self._after(life, life.proc.stop())
                life.dead = True
                if life.hung is not None:
                    continue  # killed, not stopped: nothing of a clean stop to judge
                for observer in self.observers:
                    observer.on_shutdown(life, len(self.history.faults) > faults_before)
