"""The host's real-time watchdog: a process that hangs inside one scheduler batch.

The schedule finds every hang that yields (:mod:`dsh_sim.engine.hang`).  A runtime can also
hang without ever yielding — a failure that raises before its first checkpoint, retried in a
``while`` loop — and then the host never gets control back to count anything: the loop runs
in the host's own thread, inside ``gen.send``.  Only time can tell, so one daemon thread per
host process watches the commands in flight; when one has run :data:`STALL_SECONDS` of *CPU
time* of the thread that steps it, it raises :class:`Stalled` in the thread that steps it (``PyThreadState_SetAsyncExc``:
the exception appears at the next bytecode the loop runs, wherever that is), again at every
look until the command ends.  The host returns at the first batch boundary after it fired and
kills the process; where the exception met trio's own code the run is broken, and it is
given up rather than stepped again (:meth:`~dsh_sim.engine.process.SimProcess.kill`).

The thread's CPU time, not the wall clock: a command that computes for a second does so on a
loaded machine too (it only waits longer for the core), so a load from other processes can
make the watchdog fire later, never on a command that would not stall on an idle machine
(the heaviest command of the corpus and the fuzzers takes 0.05 CPU-s; the wall clock is the
fallback where the platform has no per-thread CPU clock).

A stall is a finding like a spin, with one difference: the moment it is found is the
clock's, so a run that stalls ends with the same violation in every process but not always
after the same number of loop iterations (the loop changes nothing the harness records: it
calls no port that yields, so no filesystem or world operation, between the checkpoints).
"""

from __future__ import annotations

import ctypes
import threading
import time

import attrs

STALL_SECONDS = 10.0  # CPU seconds one command may run (the heaviest of the corpus and the fuzzers: 0.05)
POLL_SECONDS = 0.5  # how often the watchdog looks


class Stalled(BaseException):
    """Raised by the watchdog in a thread whose command stalled (``BaseException``: the
    runtime's ``except Exception`` must not swallow it and loop on)."""


@attrs.define(eq=False)
class Watch:
    thread: int
    clock: int  # the thread's CPU-time clock (time.CLOCK_MONOTONIC where there is none)
    deadline: float  # on that clock
    fired: bool = False


def _thread_clock(thread: int) -> int:
    try:
        return time.pthread_getcpuclockid(thread)
    except (AttributeError, OSError):  # no per-thread CPU clock on this platform
        return time.CLOCK_MONOTONIC


class Watchdog:
    def __init__(self, seconds: float = STALL_SECONDS, poll: float = POLL_SECONDS) -> None:
        self.seconds = seconds
        self.poll = poll  # real seconds between two looks
        self._lock = threading.Lock()
        self._armed: dict[int, Watch] = {}
        self._thread: threading.Thread | None = None

    def arm(self) -> Watch:
        """Watch the command this thread runs from now on (until :meth:`disarm`)."""
        thread = threading.get_ident()
        clock = _thread_clock(thread)
        watch = Watch(thread, clock, time.clock_gettime(clock) + self.seconds)
        self._armed[watch.thread] = watch
        if self._thread is None:
            self._start()
        return watch

    def disarm(self, watch: Watch) -> None:
        """The command ended.  A stall the watchdog raised and the thread has not met yet is
        withdrawn: it must not surface later, in the harness's own code."""
        with self._lock:
            self._armed.pop(watch.thread, None)
            if watch.fired:
                _raise_in(watch.thread, None)

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="dsh-sim-watchdog", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(self.poll)
            with self._lock:
                for watch in list(self._armed.values()):
                    if time.clock_gettime(watch.clock) > watch.deadline:  # again at every look until disarmed: code that
                        watch.fired = True  # swallows BaseException must not outlast it
                        _raise_in(watch.thread, Stalled)


def _raise_in(thread: int, error: type[BaseException] | None) -> None:
    """Raise ``error`` in ``thread`` at its next bytecode (``None``: withdraw a pending one)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread), ctypes.py_object(error) if error is not None else None)


WATCHDOG = Watchdog()
