"""A simulated OS process: one ``trio.run`` per lifetime, driven in strict turns.

The run lives in its own thread only so that a synchronous caller (a Hypothesis rule, the
scenario replayer) can hand it one command at a time; the two never run at once.  Inside
the run a driver task waits until every other task is blocked, hands control back, and
then blocks the whole thread on the next command — so virtual time is frozen between
commands and results depend only on the seed.

A crash ends the run by raising :class:`SimulatedCrash` (a ``BaseException`` application
code cannot swallow).  The disk image is fixed *before* the raise; the unwinding that
follows runs ``finally`` blocks, whose filesystem calls the revoked view refuses.
"""

from __future__ import annotations

import math
import queue
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio
import trio.testing

from dsh_sim.adapters.simfs.disk import FidelityError
from dsh_sim.engine.determinism import seed_scheduler

HOST_TIMEOUT = 120.0  # real seconds a host waits for one command before declaring a hang
DEFAULT_HORIZON = 600.0  # virtual seconds a command may run before it stops waiting


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
        self._commands: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._replies: queue.Queue[Reply] = queue.Queue()
        self._thread: threading.Thread | None = None
        self.ready = False  # set by main when the process finished booting
        self.exited = False
        self.exit_error: BaseException | None = None

    # -- host side -----------------------------------------------------------------------

    def start(self) -> Reply:
        self._thread = threading.Thread(target=self._thread_main, name=f"simproc-{self.pid}", daemon=True)
        self._thread.start()
        return self._wait()

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
        self._commands.put((kind, payload))
        return self._wait()

    def _wait(self) -> Reply:
        try:
            reply = self._replies.get(timeout=HOST_TIMEOUT)
        except queue.Empty:
            raise HarnessHang(f"simulated process {self.pid} did not hand back control within {HOST_TIMEOUT}s") from None
        if reply.state == "exited":
            self.exited = True
            if self._thread is not None:
                self._thread.join()
        return reply

    # -- inside the run --------------------------------------------------------------------

    def _thread_main(self) -> None:
        # Seed before the run starts: trio shuffles its very first batch (the init and system
        # tasks) before any task of ours could seed it.
        seed_scheduler(self._seed)
        try:
            trio.run(self._driver, clock=self._clock, instruments=self._instruments, strict_exception_groups=True)
        except BaseException as err:  # the end of this process, reported to the host
            self.exit_error = _unwrap(err)
        self._replies.put(Reply("exited", error=self.exit_error))

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
            self._replies.put(Reply("idle", done=True))
            while True:
                kind, payload = self._commands.get()  # blocks the thread: virtual time stands still
                if kind == "stop":
                    nursery.cancel_scope.cancel()
                    return
                if kind == "crash":
                    raise SimulatedCrash(f"process {self.pid} killed by the harness")
                if kind == "advance":
                    await trio.sleep(payload)
                    await trio.testing.wait_all_tasks_blocked()
                    self._replies.put(Reply("idle", done=True))
                    continue
                fn, horizon = payload
                task = _Task()
                nursery.start_soon(self._run_task, fn, task, name="host-command")

                def finished(task: _Task = task) -> bool:
                    return task.done

                await self._settle(finished, horizon)
                self._replies.put(Reply("idle", done=task.done, value=task.value, error=task.error))

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
