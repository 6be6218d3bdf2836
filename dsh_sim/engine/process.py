"""A simulated OS process: one trio run per lifetime, stepped by the host in strict turns.

The run is trio's own run loop — the generator that ``trio.run`` and guest mode drive —
stepped directly on the caller's thread: the host advances it one scheduler batch at a time
until the driver task inside hands back a reply, and then simply stops stepping.  Virtual
time is frozen between commands because nothing runs, and results depend only on the seed.
There is no thread per process and no thread handoff per command, and no I/O wait between
batches: a simulated process does no real I/O (every port it has is simulated), so where
``trio.run`` would poll epoll the host reports "no I/O happened" and steps on — except when
trio queued a callback for itself (``run_sync_soon``, which its shutdown uses), whose
wake-up the run's quiet I/O manager reports (:mod:`.quiet_io`: a run opens no descriptor).

Inside the run a driver task starts what the host asks for (the program, a command's task)
and waits for the next command.  The host watches the run: whenever every task is blocked
it replies (the command is done, or nothing is due within its horizon) or moves virtual time
to the next timer, as trio's autojump clock would (see :class:`_Settle`).  The driver takes
no turn while it has nothing to do, so the schedule holds only the program's own tasks.  The
run's scheduler is seeded before the run starts, so its very first batch (the init and
system tasks) is already deterministic.

A crash ends the run by raising :class:`SimulatedCrash` (a ``BaseException`` application
code cannot swallow).  The disk image is fixed *before* the raise; the unwinding that
follows runs ``finally`` blocks, whose filesystem calls the revoked view refuses.

Several runs can be paused at once on one thread, so each stretch of steps installs its run's
thread-local trio state (:mod:`.run_locals`).  A command that hangs the process — a spin, a
deadlock while stopping, a stall inside one batch — is replied to as ``"hung"``
(:mod:`.hang`, :mod:`.watchdog`), and :meth:`SimProcess.kill` ends the run.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import outcome
import trio
import trio.testing

from dsh_sim.adapters.simfs.disk import FidelityError
from dsh_sim.engine.checkpoints import continue_at_checkpoint, round_trip_seen, round_trip_slept, sleep_passes_alone
from dsh_sim.engine.determinism import run_module, seed_scheduler
from dsh_sim.engine.hang import CHECK_EVERY, KILL_ROUNDS, STOP_GRACE, Hung, crash_tasks
from dsh_sim.engine.instruments import PlainInstrument, fast_instruments
from dsh_sim.engine.quiet_io import setup_quiet_runner
from dsh_sim.engine.run_locals import RunLocals
from dsh_sim.engine.sleepers import Sleepers
from dsh_sim.engine.sleepers import sleep as timed_sleep
from dsh_sim.engine.watchdog import WATCHDOG, Stalled, Watch

DEFAULT_HORIZON = 600.0  # virtual seconds a command may run before it stops waiting
_NO_IO: list[Any] = []  # what the host reports after every batch: no descriptor became ready
_LIVE: set[SimProcess] = set()  # runs not finished: kept alive as a blocked thread kept its run
# runs trio itself gave up on (the watchdog's exception met trio's own code): never collected,
# since their finalizers would run trio's cleanup against a run state that is no longer there
_BROKEN: list[Any] = []
_RUN = run_module()  # trio's run module, looked up once (not per step)


class SimulatedCrash(BaseException):
    """The simulated process died (kill or power loss)."""


@attrs.frozen
class Reply:
    state: str  # "idle" (command done, process alive) | "exited" (the run is over) | "hung" (see hang)
    done: bool = False  # the command's task finished
    value: Any = None
    error: BaseException | None = None  # the command task's exception, or the run's


@attrs.define
class _Task:
    done: bool = False
    value: Any = None
    error: BaseException | None = None


@attrs.define
class _Settle:
    """What the host waits for while a command runs (the driver's old ``_settle`` loop).

    Whenever everything is blocked and the driver waits for a command, the host asks: is it
    ``done``?  Then reply.  Is there no timer within ``limit``?  Then reply too (quiescent) —
    unless virtual time must first reach ``until`` (an ``advance``).  Otherwise the host moves
    the clock to the next timer, as trio's autojump would; the driver stays asleep (it has
    nothing to do until the next command, so it takes no turn in the schedule)."""

    done: Callable[[], bool]
    limit: float
    reply: Callable[[], Reply]
    boot: _Task | None = None  # booting: main finishing means the process ended
    until: float | None = None  # advancing: the clock reaches this before the reply


class SimProcess:
    def __init__(
        self,
        pid: int,
        main: Callable[[SimProcess], Awaitable[Any]],
        *,
        clock: trio.testing.MockClock,
        seed: int,
        instruments: list[trio.abc.Instrument] | None = None,
    ) -> None:
        self.pid = pid
        self._main = main
        self._clock = clock
        self._seed = seed
        self._instruments = instruments or []
        # the scheduler shortcuts call the hooks from inside the task: only for plain instruments
        self._in_place = all(isinstance(instrument, PlainInstrument) for instrument in self._instruments)
        self._runner: Any = None
        self._gen: Any = None  # trio's run loop, a generator of I/O timeouts
        self._locals = RunLocals()  # this run's thread-local trio state between steps
        self._parked: trio.lowlevel.Task | None = None  # the driver, waiting for a command
        self._sleepers = Sleepers()  # the harness's timed sleeps in this run (see sleepers)
        self._settle: _Settle | None = None
        self._batches_run = 0  # scheduler batches of the current command (the spin check counts them)
        self.ready = False  # set by main when the process finished booting
        self.exited = False
        self.exit_error: BaseException | None = None

    # -- host side -----------------------------------------------------------------------

    def start(self) -> Reply:
        # Seed before the run starts: trio shuffles its very first batch (the init and system
        # tasks) before any task of ours could seed it.
        seed_scheduler(self._seed)
        run = _RUN
        booted = _Task()
        host = self._locals.install()
        try:
            # an empty context: the tasks must not inherit whatever the host has set
            runner = contextvars.Context().run(setup_quiet_runner, self._clock, self._instruments)
            fast_instruments(runner)
            self._runner = runner
            self._gen = run.unrolled_run(runner, self._driver, (booted,), host_uses_signal_set_wakeup_fd=True)
        finally:
            self._locals.uninstall(host)
        _LIVE.add(self)
        # the limit is read when the run starts: the clock does not move before the first batch
        self._settle = _Settle(lambda: self.ready or booted.done, self._clock.current_time() + DEFAULT_HORIZON, _IDLE, booted)
        return self._step(None)

    def call(self, fn: Callable[[], Awaitable[Any]], horizon: float = DEFAULT_HORIZON) -> Reply:
        """Run ``fn`` as a task of this process until it finishes or the process is quiescent."""
        task = _Task()
        self._settle = _Settle(
            lambda: task.done,
            self._clock.current_time() + horizon,
            lambda: Reply("idle", done=task.done, value=task.value, error=task.error),
        )
        return self._send("call", (fn, task))

    def advance(self, seconds: float) -> Reply:
        """Let ``seconds`` of virtual time pass (the host moves the clock through the timers due
        meanwhile and replies at the first moment everything is blocked at the end)."""
        self._check_alive()
        clock = self._clock
        limit = clock.current_time() + seconds
        self._settle = _Settle(lambda: clock.current_time() >= limit, limit, _IDLE, until=limit)
        assert self._parked is not None, "a live process waits for its next command"
        # the run is idle between commands: move the clock before stepping it (a step of an
        # idle run would let trio's autojump move it to trio's next deadline, past the limit)
        with self._locals.installed():
            reply = self._when_blocked()
        return reply if reply is not None else self._step(_NO_IO)

    def crash(self) -> Reply:
        return self._send("crash", None)

    def kill(self, hang: Hung) -> Reply:
        """End a run that ``hang`` hung (:mod:`dsh_sim.engine.hang`): every task of the program
        raises :class:`SimulatedCrash` where it waits, and the run unwinds — round after round
        while a round still reaches a task (each nested shielded cleanup takes one).  A run
        that a round no longer reaches, or one trio itself gave up, is given up and kept,
        never collected: closing a trio run from outside would clear whichever run's state is
        installed at the time."""
        for _ in range(KILL_ROUNDS):
            if self.exited:  # (a stall can end the run: the watchdog's exception unwound it)
                return Reply("exited", error=self.exit_error)
            self._parked = None  # the driver too is killed where it waits
            with self._locals.installed():
                reached = crash_tasks(self._runner, SimulatedCrash, f"process {self.pid} hung and was killed by the harness")
            reply = self._step(_NO_IO)
            if reply.state == "exited":
                return reply
            if not reached:
                break
        if self.exited:
            return Reply("exited", error=self.exit_error)
        self.exited = True  # given up: kept in _LIVE, never stepped again
        self.exit_error = hang
        return Reply("exited", error=self.exit_error)

    def stop(self) -> Reply:
        return self._send("stop", None)

    async def sleep(self, seconds: float) -> None:
        """``trio.sleep`` for the harness's own code in this process, timed by the host; where
        the sleeper is the only thing that could run until it wakes, the clock moves in place
        (:mod:`dsh_sim.engine.checkpoints`)."""
        if seconds == 0:
            await self.checkpoint()  # what trio.sleep(0) is
            return
        runner, clock, sleepers = self._runner, self._clock, self._sleepers
        if seconds > 0 and self._parked is not None and self._in_place:  # (not while a stop unwinds: the host counts its grace)
            now = clock.current_time()
            next_sleeper = sleepers.next_deadline()
            task = continue_at_checkpoint(runner, next_sleeper, now, self._batches_run)
            if task is not None:
                due = now + seconds
                gap = float(due - now)  # what the host's look at the next deadline computes
                if gap > 0 and sleep_passes_alone(runner, next_sleeper, due) and self._jumps(now, gap):
                    self._batches_run += 1
                    round_trip_slept(runner, task, clock, gap)
                    return
        await timed_sleep(sleepers, clock, seconds)

    async def checkpoint(self) -> None:
        """``trio.lowlevel.checkpoint()`` for the harness's ports in this process, without the
        round trip through the scheduler when it could only resume the task at once
        (:mod:`dsh_sim.engine.checkpoints`)."""
        runner = self._runner
        task = (
            continue_at_checkpoint(runner, self._sleepers.next_deadline(), self._clock.current_time(), self._batches_run)
            if self._in_place
            else None
        )
        if task is None:
            await trio.lowlevel.checkpoint()
            return
        self._batches_run += 1
        round_trip_seen(runner, task)

    def _check_alive(self) -> None:
        if self.exited:
            raise RuntimeError(f"process {self.pid} has already exited")

    def _send(self, kind: str, payload: Any) -> Reply:
        self._check_alive()
        task, self._parked = self._parked, None
        assert task is not None, "a live process waits for its next command"
        self._runner.reschedule(task, outcome.Value((kind, payload)))
        return self._step(_NO_IO)

    def _step(self, first: Any) -> Reply:
        """Run scheduler batches until the command settles (see :class:`_Settle`), the run
        ends, or the command hangs the process (:mod:`.hang`, :mod:`.watchdog`)."""
        watch = WATCHDOG.arm()
        host = self._locals.install()
        reply: Reply | None = None
        try:
            try:
                reply = self._batches(first, watch)
            finally:
                WATCHDOG.disarm(watch)
        except Stalled:  # the watchdog's exception met the host's own code, not the program's
            pass
        finally:
            self._locals.uninstall(host)
        if reply is None or (watch.fired and reply.state != "hung"):  # (fired after the last batch)
            return Reply("hung", error=Hung(self.pid, "stall", 0, self._clock.current_time()))
        return reply

    def _batches(self, first: Any, watch: Watch) -> Reply:
        send, gen, runner = first, self._gen, self._runner
        self._batches_run = 0
        queue = runner.entry_queue
        sleeping = self._sleepers.heap
        clock = self._clock
        still = started = clock.current_time()  # virtual time at the last look (a spin keeps it)
        while True:
            if sleeping:  # (an empty heap has no sleeper to wake: the common case)
                self._wake_due()
            try:
                gen.send(send)
            except StopIteration:
                return self._exited(runner.main_task_outcome)
            except BaseException as err:  # trio itself failed: the end of this process
                _BROKEN.append((gen, runner))
                return self._exited(outcome.Error(err))
            if watch.fired:  # the watchdog's stall: no further step before the harness kills it
                return Reply("hung", error=Hung(self.pid, "stall", self._batches_run, clock.current_time()))
            send = _NO_IO
            if queue.queue or queue.idempotent_queue:
                # trio's own callbacks (``run_sync_soon``: the run's shutdown uses one)
                # arrive through its wake-up socket: poll for real only when one is queued
                send = runner.io_manager.get_events(0)
            elif not runner.runq:
                if self._parked is not None:
                    reply = self._when_blocked()
                    if reply is not None:
                        return reply
                elif not self._sleep_on():  # the driver is busy (unwinding a stop): trio's autojump
                    return Reply("hung", error=Hung(self.pid, "deadlock", self._batches_run, clock.current_time()))
                elif clock.current_time() - started > STOP_GRACE:
                    return Reply("hung", error=Hung(self.pid, "overrun", self._batches_run, clock.current_time()))
            self._batches_run += 1  # (a checkpoint that went on in place counted itself: self.checkpoint)
            if self._batches_run % CHECK_EVERY == 0:
                now = self._clock.current_time()
                if now == still:  # a whole window of batches at one instant
                    return Reply("hung", error=Hung(self.pid, "spin", self._batches_run, now))
                still = now

    def _when_blocked(self) -> Reply | None:
        """No task can run and the driver waits for a command: reply, or move the clock to the
        next timer (or to the end of an ``advance``)."""
        now = self._clock.current_time()
        gap = self._to_next_deadline()
        if gap <= 0:
            return None  # a timer is due now: trio wakes its task at the next step
        if self._jumps(now, gap):
            self._clock.jump(gap)
            self._wake_due()
            return None
        settle = self._settle
        assert settle is not None
        if settle.boot is not None and settle.boot.done:
            settle.boot = None
            task, self._parked = self._parked, None
            assert task is not None
            self._runner.reschedule(task, outcome.Value(("booted", None)))  # main ended: so does the run
            return None
        if settle.until is not None and now < settle.until and not settle.done():
            # nothing is due before the end of the advance: time reaches it, and the run
            # is as blocked there as it is now (stepping it would let trio's autojump
            # move the clock on to its next deadline, past the end)
            self._clock.jump(settle.until - now)
        return settle.reply()

    def _jumps(self, now: float, gap: float) -> bool:
        """Whether the host, finding every task blocked with the next timer ``gap`` ahead, moves
        the clock there and steps on (rather than replying to the command or ending the boot)."""
        settle = self._settle
        assert settle is not None
        if settle.boot is not None and settle.boot.done:
            return False
        if settle.done():
            return False
        return not (math.isinf(gap) or now + gap > settle.limit)

    def _to_next_deadline(self) -> float:
        """``current_statistics().seconds_to_next_deadline`` without building the statistics
        (their I/O backend's figures included) twice per settle check."""
        due = min(self._runner.deadlines.next_deadline(), self._sleepers.next_deadline())
        return float(due - self._clock.current_time())

    def _sleep_on(self) -> bool:
        """Everything is blocked while the driver is busy (e.g. unwinding a stop): move the
        clock to the first timer due — trio's or a harness sleep's
        (:mod:`dsh_sim.engine.sleepers`) — as trio's autojump would, and wake the sleepers
        whose time has come.  False when there is no timer at all: nothing can ever wake a
        task again (no command comes while the driver is busy) — a deadlock."""
        jump = self._to_next_deadline()
        if jump == math.inf:
            return False
        if jump > 0:
            self._clock.jump(jump)
        self._wake_due()
        return True

    def _wake_due(self) -> None:
        """Wake the harness sleepers whose time has come (what trio's expiry of their
        deadlines would do at the start of the next batch)."""
        due = self._sleepers.pop_due(self._clock.current_time())
        for sleeper in due:
            self._runner.reschedule(sleeper)

    def _exited(self, result: outcome.Outcome[Any] | None) -> Reply:
        if isinstance(result, outcome.Error):
            self.exit_error = _unwrap(result.error)
        self.exited = True
        self._gen = self._runner = self._parked = None
        self._sleepers.clear()
        _LIVE.discard(self)
        if isinstance(self.exit_error, KeyboardInterrupt):
            raise self.exit_error  # Ctrl-C belongs to the host, not to the simulated process
        return Reply("exited", error=self.exit_error)

    # -- inside the run --------------------------------------------------------------------

    async def _next_command(self) -> tuple[str, Any]:
        """Sleep until the host sends a command (the host moves virtual time meanwhile)."""
        self._parked = trio.lowlevel.current_task()
        command: tuple[str, Any] = await trio.lowlevel.wait_task_rescheduled(_abort)
        return command

    async def _driver(self, booted: _Task) -> None:
        """Main (the runtime) and the host's commands (a prompt, a flush) run in nested
        scopes, as an application would nest its work inside the runtime's context: a graceful
        stop first cancels the commands and waits until they have unwound — a turn in flight
        closes its calls, step and turn in the log — and only then stops the runtime, whose
        store writes what they appended."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._run_main, booted, name="process-main")
            async with trio.open_nursery() as commands:
                while True:
                    kind, payload = await self._next_command()
                    if kind == "booted":  # main returned or failed while booting
                        nursery.cancel_scope.cancel()
                        if booted.error is not None:
                            raise booted.error
                        return
                    if kind == "stop":
                        commands.cancel_scope.cancel()
                        break
                    if kind == "crash":
                        raise SimulatedCrash(f"process {self.pid} killed by the harness")
                    fn, task = payload
                    commands.start_soon(self._run_task, fn, task, name="host-command")
            nursery.cancel_scope.cancel()

    async def _run_main(self, booted: _Task) -> None:
        try:
            await self._main(self)
        except Exception as err:
            booted.error = err
        finally:
            booted.done = True

    @staticmethod
    async def _run_task(fn: Callable[[], Awaitable[Any]], task: _Task) -> None:
        try:
            task.value = await fn()
        except Exception as err:
            task.error = err
        finally:
            task.done = True


def _IDLE() -> Reply:
    return Reply("idle", done=True)


def _abort(_: Any) -> trio.lowlevel.Abort:
    return trio.lowlevel.Abort.SUCCEEDED


def _unwrap(err: BaseException) -> BaseException:
    """The meaningful exception of a finished run: a crash wins over cleanup noise."""
    if isinstance(err, BaseExceptionGroup):
        crash: BaseExceptionGroup[BaseException] | None = err.split(SimulatedCrash)[0]
        if crash is None:
            crash = err.split(FidelityError)[0]
        if crash is not None:
            return _leaves(crash)[0]
        leaves = [e for e in _leaves(err) if not isinstance(e, trio.Cancelled)]
        return leaves[0] if leaves else err
    return err


def _leaves(err: BaseException) -> list[BaseException]:
    if isinstance(err, BaseExceptionGroup):
        out: list[BaseException] = []
        for sub in err.exceptions:
            out.extend(_leaves(sub))
        return out
    return [err]
