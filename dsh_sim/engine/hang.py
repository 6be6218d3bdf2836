"""A simulated process that hangs, found deterministically, and the kill that ends it.

A command the host gives a process (boot, a prompt, a flush, a graceful stop) ends when the
process hands control back.  A runtime can fail to: it *spins* — tasks keep running without
virtual time moving (a failed write retried at once forever, two tasks waking each other) —
or, while it stops, it *deadlocks* — every task waits and nothing is left that could wake one
(no timer, no runnable task, no command to come: the driver itself is busy stopping) — or
*overruns*: the stop still runs after :data:`STOP_GRACE` virtual seconds, its clock moving
(a failing write retried after a pause, forever).  A prompt or an advance has its horizon;
a stop had none.  An overrun where the fault plan's delays fired in that process is killed
without a finding: the plan slowed it on purpose.

Both are found from the schedule alone, never from the wall clock, so a hang is a finding
like any other: the same seed hangs at the same scheduler batch in every process, and a
found example shrinks and replays.  A spin is a window of :data:`CHECK_EVERY` scheduler
batches with virtual time standing still — a command of the longest legitimate workload (64
parallel tool calls of 64 responses) runs at most 80 at one instant, so the bound is two
orders of magnitude away from any real work and still finds a spin in well under a second.
(A runtime that hangs inside one batch, without ever yielding, is beyond any schedule: the
host's real-time watchdog finds it, :mod:`dsh_sim.engine.watchdog`.)

The harness then kills the hung process, as an operator would: :func:`crash_tasks` makes
every task of the program raise :class:`~dsh_sim.engine.process.SimulatedCrash` where it
waits, whatever its cancel scopes shield, and the run unwinds as after any crash.
"""

from __future__ import annotations

from typing import Any, NoReturn

import outcome
import trio

from dsh_sim.engine.watchdog import WATCHDOG

# scheduler batches between two looks at the clock (and at the host's watchdog): a whole
# window of them with virtual time standing still is a spin
CHECK_EVERY = 10_000
KILL_ROUNDS = 64  # most rounds of a kill (each reaches one more nested shielded cleanup)
# virtual seconds a graceful stop may run, its clock moving, before it has overrun: the
# operator's grace period (systemd gives 90 s before its kill); a stop that waits between
# the attempts of a retry that never succeeds is neither a spin nor a deadlock
STOP_GRACE = 600.0


class Hung(Exception):
    """A command hung its process: ``kind`` is ``"spin"``, ``"deadlock"``, ``"overrun"`` (a
    stop past :data:`STOP_GRACE`) or ``"stall"`` (:mod:`dsh_sim.engine.watchdog`)."""

    def __init__(self, pid: int, kind: str, batches: int, at: float) -> None:
        self.pid, self.kind, self.batches, self.at = pid, kind, batches, at
        if kind == "spin":
            what = f"spun {batches} scheduler batches without virtual time moving (at t={at:g}s)"
        elif kind == "overrun":
            what = f"was still stopping after {STOP_GRACE:g} virtual seconds, its clock moving ({batches} scheduler batches; at t={at:g}s)"
        elif kind == "stall":
            what = f"stalled: one command ran {WATCHDOG.seconds:g} CPU seconds (a loop that does not yield, or yields without end; at t={at:g}s)"
        else:
            what = f"deadlocked while stopping after {batches} scheduler batches: every task waits and nothing can wake one (at t={at:g}s)"
        super().__init__(f"process {pid} {what}")


def crash_tasks(runner: Any, error: type[BaseException], message: str) -> int:
    """Make every task of the program (not trio's own) raise ``error`` where it waits; return
    how many were reached.

    Through trio's own abort path, as a cancellation would reach it but whatever its scopes
    shield: a waiting task's abort function runs (a parking lot lets it go and it raises the
    error; a nursery waiting for its children records the error and goes on waiting for
    them).  A runnable task is reached only where replacing its wake-up is what a
    cancellation does too: one that resumes from a bare schedule point, or from a wait that a
    cancellation aborted.  Any other (woken for real: its waker already did its part) is
    reached at its next wait, on a later round."""

    def crash() -> NoReturn:
        raise error(message)

    reached = 0
    for task in sorted(runner.tasks, key=_spawn_order):
        if not _descends(task, runner.main_task):
            continue  # trio's own: its init task and the system tasks beside the main task
        if task._next_send_fn is None:  # waiting
            if task._abort_func is not None:
                task._attempt_abort(crash)
                reached += 1
        elif _replaceable(task):
            task._next_send = outcome.capture(crash)
            reached += 1
    return reached


def _replaceable(task: Any) -> bool:
    """A runnable task resumes from a bare schedule point (``cancel_shielded_checkpoint``) or
    from a wait a cancellation aborted: raising instead there is what a cancellation does."""
    pending = task._next_send
    trap = _trap(task.coro)
    if trap == "cancel_shielded_checkpoint":
        return isinstance(pending, outcome.Value)
    return trap == "wait_task_rescheduled" and isinstance(pending, outcome.Error) and isinstance(pending.error, trio.Cancelled)


def _trap(coro: Any) -> str | None:
    """The name of the function that awaits trio's innermost yield in ``coro``'s await chain."""
    awaiting = None
    while True:
        inner = getattr(coro, "cr_await", None) if hasattr(coro, "cr_await") else getattr(coro, "gi_yieldfrom", None)
        if inner is None:
            return awaiting
        code = getattr(coro, "cr_code", None) or getattr(coro, "gi_code", None)
        awaiting = code.co_name if code is not None else None
        coro = inner


def _descends(task: Any, ancestor: Any) -> bool:
    """``task`` is ``ancestor`` or runs in a nursery of one of its descendants."""
    while task is not None:
        if task is ancestor:
            return True
        nursery = task.parent_nursery
        task = nursery.parent_task if nursery is not None else None
    return False


def _spawn_order(task: Any) -> int:
    """Tasks in the order they were spawned (their ids increase): a set's order is not stable."""
    return int(task._counter)
