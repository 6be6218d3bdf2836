"""A trio run that holds no OS resource: no epoll instance, no socket pairs, no signal handler.

``trio.run`` opens, for every run, an epoll instance and two socket pairs (its I/O manager's
force-wakeup pair and its entry queue's wake-up pair) and installs a SIGINT handler, and
closes them all at the end: a dozen system calls and five descriptors per run.  A simulated
process does no real I/O — every port it has is simulated — and one exploration starts a
run for every crash state it recovers (thousands), so the simulator builds its runs with an
I/O manager that reaches nothing and a wake-up that is a flag (:func:`setup_quiet_runner`).

The one thing the wake-up socket carried is kept, at the same moment: trio's own callbacks
(``run_sync_soon``: its shutdown uses one) wake the entry queue's task.  The host looks at the
queue after every batch, as it did, and asks the I/O manager for its events only when a
callback is queued; the manager reports the wake-up exactly when epoll reported the socket
readable — a byte was written and the entry task waits for it — and the next batch's
``process_events`` reschedules that task where epoll's readiness did.  So the schedule is the
same, batch for batch, and so is every digest (the corpus's recorded digests check it).

Waiting for any other descriptor is refused: nothing in a simulated process owns one.
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from typing import Any

import attrs
import trio
from trio.lowlevel import Abort, Task, current_task, reschedule, wait_task_rescheduled

from dsh_sim.engine.determinism import run_module

_RUN = run_module()
_WOKEN = [("entry-queue", 1)]  # the one event a quiet run reports: the entry queue's wake-up


class QuietWakeup:
    """The entry queue's wake-up (trio's ``WakeupSocketpair``) as a flag: a byte written is
    ``pending`` until the woken task drains it."""

    wakeup_sock = "entry-queue"  # what the entry task waits on (it names no descriptor)

    def __init__(self) -> None:
        self.pending = False

    def wakeup_thread_and_signal_safe(self) -> None:
        self.pending = True

    async def wait_woken(self) -> None:
        await trio.lowlevel.wait_readable(self.wakeup_sock)  # type: ignore[arg-type]
        self.drain()

    def drain(self) -> None:
        self.pending = False

    def wakeup_on_signals(self) -> None:
        pass  # (the host owns signals: runs start with host_uses_signal_set_wakeup_fd)

    def close(self) -> None:
        pass


@attrs.frozen
class _Statistics:
    tasks_waiting_read: int
    tasks_waiting_write: int = 0
    backend: str = "quiet"


class QuietIO:
    """The run's I/O manager: the entry queue's task is the only waiter it knows."""

    def __init__(self, wakeup: QuietWakeup) -> None:
        self._wakeup = wakeup
        self._reader: Task | None = None

    def statistics(self) -> _Statistics:
        return _Statistics(int(self._reader is not None))

    def close(self) -> None:
        pass

    def force_wakeup(self) -> None:
        pass  # (guest mode's; a quiet run is stepped by its host, never woken from a thread)

    def get_events(self, timeout: float) -> list[tuple[str, int]]:
        """What epoll would report without waiting: the wake-up, if a byte is there and the
        entry task waits for it."""
        return _WOKEN if self._wakeup.pending and self._reader is not None else []

    def process_events(self, events: Sequence[tuple[str, int]]) -> None:
        if events and self._reader is not None:
            task, self._reader = self._reader, None
            reschedule(task)

    async def wait_readable(self, fd: object) -> None:
        if fd != QuietWakeup.wakeup_sock:
            raise _real_descriptor(fd)
        if self._reader is not None:
            raise trio.BusyResourceError("another task is already reading / writing this fd")
        self._reader = current_task()

        def abort(_: Any) -> Abort:
            self._reader = None
            return Abort.SUCCEEDED

        await wait_task_rescheduled(abort)

    async def wait_writable(self, fd: object) -> None:
        raise _real_descriptor(fd)

    def notify_closing(self, fd: object) -> None:
        pass


def _real_descriptor(fd: object) -> RuntimeError:
    return RuntimeError(f"a simulated process waited for a real descriptor ({fd!r}); its ports are all simulated")


def setup_quiet_runner(clock: trio.abc.Clock, instruments: Sequence[trio.abc.Instrument]) -> Any:
    """trio's ``setup_runner`` (strict exception groups, no KeyboardInterrupt delivery) with a
    quiet I/O manager and entry queue; called in an empty context, as ``setup_runner`` was."""
    if _RUN.in_trio_run():
        raise RuntimeError("Attempted to call run() from inside a run()")
    wakeup = QuietWakeup()
    runner = _RUN.Runner(
        clock=clock,
        instruments=_RUN.Instruments(instruments),
        io_manager=QuietIO(wakeup),
        system_context=contextvars.copy_context(),
        ki_manager=_RUN.KIManager(),  # never installed: Ctrl-C stays the host's
        strict_exception_groups=True,
        entry_queue=_RUN.EntryQueue(wakeup=wakeup),
    )
    runner.asyncgens.install_hooks(runner)
    _RUN.GLOBAL_RUN_CONTEXT.runner = runner
    return runner
