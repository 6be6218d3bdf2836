"""A simulated OS process: one trio run per lifetime, stepped by the host in strict turns.

The run is trio's own run loop — the generator that ``trio.run`` and guest mode drive —
stepped directly on the caller's thread: the host advances it one scheduler batch at a time
until the driver task inside hands back a reply, and then simply stops stepping.  Virtual
time is frozen between commands because nothing runs, and results depend only on the seed.
There is no thread per process and no thread handoff per command, and no I/O wait between
batches: a simulated process does no real I/O (every port it has is simulated), so where
``trio.run`` would poll epoll the host reports "no I/O happened" and steps on — except when
trio queued a callback for itself (``run_sync_soon``, which its shutdown uses), whose
wake-up arrives through a socket.

Inside the run a driver task waits until every other task is blocked, parks itself with its
reply, and is woken with the next command.  The run's scheduler is seeded before the run
starts, so its very first batch (the init and system tasks) is already deterministic.

A crash ends the run by raising :class:`SimulatedCrash` (a ``BaseException`` application
code cannot swallow).  The disk image is fixed *before* the raise; the unwinding that
follows runs ``finally`` blocks, whose filesystem calls the revoked view refuses.

Several runs can be paused at once on one thread (a second writer boots while the primary
waits), so each step installs its run's thread-local trio state and puts the host's back
afterwards: between steps the host thread is not "inside" any run.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import attrs
import outcome
import trio
import trio.testing
from sniffio import thread_local as sniffio_library

from dsh_sim.adapters.simfs.disk import FidelityError
from dsh_sim.engine.determinism import run_module, seed_scheduler

HOST_TIMEOUT = 120.0  # real seconds one command may take before it is declared a hang
DEFAULT_HORIZON = 600.0  # virtual seconds a command may run before it stops waiting
_NO_IO: list[Any] = []  # what the host reports after every batch: no descriptor became ready
_LIVE: set[SimProcess] = set()  # runs not finished: kept alive as a blocked thread kept its run


class SimulatedCrash(BaseException):
    """The simulated process died (kill or power loss)."""


class HarnessHang(RuntimeError):
    pass


@attrs.frozen
class Reply:
    state: str  # "idle" (command done, process alive) | "exited" (the run is over)
    done: bool = False  # the command's task finished
    value: Any = None
    error: BaseException | None = None  # the command task's exception, or the run's


@attrs.define
class _Task:
    done: bool = False
    value: Any = None
    error: BaseException | None = None


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
        self._runner: Any = None
        self._gen: Any = None  # trio's run loop, a generator of I/O timeouts
        self._state: dict[str, Any] = {}  # this run's thread-local trio state between steps
        self._hooks: Any = None  # this run's async-generator hooks between steps
        self._parked: trio.lowlevel.Task | None = None  # the driver, waiting for a command
        self._reply: Reply | None = None
        self.ready = False  # set by main when the process finished booting
        self.exited = False
        self.exit_error: BaseException | None = None

    # -- host side -----------------------------------------------------------------------

    def start(self) -> Reply:
        # Seed before the run starts: trio shuffles its very first batch (the init and system
        # tasks) before any task of ours could seed it.
        seed_scheduler(self._seed)
        run = run_module()
        with self._installed():
            # an empty context: the tasks must not inherit whatever the host has set
            runner = contextvars.Context().run(run.setup_runner, self._clock, self._instruments, False, True)
            runner.ki_manager.close()  # Ctrl-C stays the host's, as when runs lived in threads
            self._runner = runner
            self._gen = run.unrolled_run(runner, self._driver, (), host_uses_signal_set_wakeup_fd=True)
        _LIVE.add(self)
        return self._step(None)

    def call(self, fn: Callable[[], Awaitable[Any]], horizon: float = DEFAULT_HORIZON) -> Reply:
        """Run ``fn`` as a task of this process until it finishes or the process is quiescent."""
        return self._send("call", (fn, horizon))

    def advance(self, seconds: float) -> Reply:
        return self._send("advance", seconds)

    def crash(self) -> Reply:
        return self._send("crash", None)

    def stop(self) -> Reply:
        return self._send("stop", None)

    def _send(self, kind: str, payload: Any) -> Reply:
        if self.exited:
            raise RuntimeError(f"process {self.pid} has already exited")
        task, self._parked = self._parked, None
        assert task is not None, "a live process waits for its next command"
        self._runner.reschedule(task, outcome.Value((kind, payload)))
        return self._step(_NO_IO)

    def _step(self, first: Any) -> Reply:
        """Run scheduler batches until the driver replies or the run ends."""
        self._reply = None
        send, gen, batches = first, self._gen, 0
        deadline = time.monotonic() + HOST_TIMEOUT
        with self._installed():
            while self._reply is None:
                try:
                    gen.send(send)
                except StopIteration:
                    return self._exited(self._runner.main_task_outcome)
                except BaseException as err:  # trio itself failed: the end of this process
                    return self._exited(outcome.Error(err))
                # trio's own callbacks (``run_sync_soon``: the run's shutdown uses one) arrive
                # through its wake-up socket: poll for real only when one is queued
                queue = self._runner.entry_queue
                send = self._runner.io_manager.get_events(0) if queue.queue or queue.idempotent_queue else _NO_IO
                batches += 1
                if batches % 10_000 == 0 and time.monotonic() > deadline:
                    raise HarnessHang(f"simulated process {self.pid} did not hand back control within {HOST_TIMEOUT}s")
        return self._reply

    def _exited(self, result: outcome.Outcome[Any] | None) -> Reply:
        if isinstance(result, outcome.Error):
            self.exit_error = _unwrap(result.error)
        self.exited = True
        self._gen = self._runner = None
        _LIVE.discard(self)
        if isinstance(self.exit_error, KeyboardInterrupt):
            raise self.exit_error  # Ctrl-C belongs to the host, not to the simulated process
        return Reply("exited", error=self.exit_error)

    @contextlib.contextmanager
    def _installed(self) -> Iterator[None]:
        """This run's thread-local trio state in place for one stretch of steps, then the host's."""
        run = run_module()
        local = run.GLOBAL_RUN_CONTEXT.__dict__
        host_state, host_hooks, host_library = dict(local), sys.get_asyncgen_hooks(), sniffio_library.name
        local.clear()
        local.update(self._state)
        if self._hooks is not None:
            sys.set_asyncgen_hooks(firstiter=self._hooks.firstiter, finalizer=self._hooks.finalizer)
        sniffio_library.name = "trio"
        try:
            yield
        finally:
            self._state, self._hooks = dict(local), sys.get_asyncgen_hooks()
            local.clear()
            local.update(host_state)
            sys.set_asyncgen_hooks(firstiter=host_hooks.firstiter, finalizer=host_hooks.finalizer)
            sniffio_library.name = host_library

    # -- inside the run --------------------------------------------------------------------

    async def _reply_and_wait(self, reply: Reply) -> tuple[str, Any]:
        """Hand ``reply`` to the host and sleep until its next command (time stands still:
        the host steps nothing while it holds control)."""
        self._reply = reply
        self._parked = trio.lowlevel.current_task()
        command: tuple[str, Any] = await trio.lowlevel.wait_task_rescheduled(lambda _: trio.lowlevel.Abort.FAILED)
        return command

    async def _driver(self) -> None:
        booted = _Task()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._run_main, booted, name="process-main")
            await self._settle(lambda: self.ready or booted.done, DEFAULT_HORIZON)
            if booted.done:
                nursery.cancel_scope.cancel()
                if booted.error is not None:
                    raise booted.error
                return
            reply = Reply("idle", done=True)
            while True:
                kind, payload = await self._reply_and_wait(reply)
                if kind == "stop":
                    nursery.cancel_scope.cancel()
                    return
                if kind == "crash":
                    raise SimulatedCrash(f"process {self.pid} killed by the harness")
                if kind == "advance":
                    await trio.sleep(payload)
                    await trio.testing.wait_all_tasks_blocked()
                    reply = Reply("idle", done=True)
                    continue
                fn, horizon = payload
                task = _Task()
                nursery.start_soon(self._run_task, fn, task, name="host-command")

                def finished(task: _Task = task) -> bool:
                    return task.done

                await self._settle(finished, horizon)
                reply = Reply("idle", done=task.done, value=task.value, error=task.error)

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

    @staticmethod
    async def _settle(done: Callable[[], bool], horizon: float) -> None:
        """Run until ``done()`` or until nothing is runnable and no timer falls in the horizon."""
        limit = trio.current_time() + horizon
        while True:
            await trio.testing.wait_all_tasks_blocked()
            if done():
                return
            gap = trio.lowlevel.current_statistics().seconds_to_next_deadline
            if math.isinf(gap) or trio.current_time() + gap > limit:
                return
            await trio.sleep(gap)


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
