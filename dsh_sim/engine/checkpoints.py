"""A checkpoint or a sleep that does not go round the scheduler when going round could only resume it.

Every filesystem operation of a simulated process is a checkpoint (``trio.lowlevel.checkpoint``:
the task yields, trio reschedules it, and other runnable tasks may go first).  Nearly always
there is no other: the task is the last of its scheduler batch, nothing else is runnable, no
deadline or harness sleep is due at this instant and trio has no callback queued.  Then the
round trip — the task's whole chain of coroutines suspended and resumed, one pass of trio's
run loop, one turn of the host's loop (:meth:`.process.SimProcess._batches`) — can only end
in the very same task resuming at the very same virtual time, with nothing else having run.
Exploring the standard 8-prompt session made some 150,000 of these round trips.

:func:`continue_at_checkpoint` says whether this is such a moment; the caller then goes on
without yielding and does everything the round trip would have done that anyone can see: the
instruments' hooks in trio's order (``task_scheduled``, ``after_task_step``, ``before_io_wait``,
``after_io_wait``, ``before_task_step``: the trace's task steps stay step for step what they
were, and with them every recorded trace digest), the task's schedule and cancel counts, and
one more scheduler batch in the host's count — the spin check (:mod:`.hang`) looks at the same
batches it always did, so a checkpoint that would be a batch where the host looks is always
taken the long way.  trio documents the liberty ("the scheduler has the option of ignoring
this and continuing to run the current task if it decides this is appropriate").

Where anything could differ, the checkpoint goes round the scheduler as before: another task
runnable or still to run in this batch, a deadline or a sleeper due now (the next pass would
expire or wake it first), a callback queued, the task's scope cancelled (the checkpoint
raises ``Cancelled`` the way trio raises it), a KeyboardInterrupt pending.

A harness sleep (:mod:`.sleepers`: I/O latency, the model's chunk delays) is the same with
time in it: when nothing else is runnable or left in the batch and no deadline or other sleep
falls due before it or with it, the pass would find every task blocked and the host would move
the clock to the sleep's end and wake it — unless it replies first (the command is done, its
horizon is nearer: :meth:`.process.SimProcess._jumps` decides both ways).  Then the clock
moves in place (:func:`sleep_passes_alone`, :func:`round_trip_slept`).

The hooks are called from inside the running task, where trio calls the I/O-wait hooks between
task steps and every hook in the host's context: only a run whose instruments are all
:class:`.instruments.PlainInstrument` (they read what they are given and the clock, such as
the trace's :class:`.trace.TaskTracer`) takes the shortcuts.

The batch trio is running is the list it hands its scheduler's shuffle
(:func:`.determinism.shuffle_batch` keeps it in the run's thread-local context, which each
run has of its own: :mod:`.run_locals`); trio pops the batch's tasks from its end, so while a
task steps, that list holds exactly the tasks still to run after it.
"""

from __future__ import annotations

from typing import Any

from dsh_sim.engine.determinism import RUN_CONTEXT as _CONTEXT
from dsh_sim.engine.determinism import run_module
from dsh_sim.engine.hang import CHECK_EVERY

_RUN = run_module()
# the instrument hooks one round trip through the scheduler calls, in trio's order
_ROUND_TRIP_HOOKS = ("task_scheduled", "after_task_step", "before_io_wait", "after_io_wait", "before_task_step")


def continue_at_checkpoint(runner: Any, next_sleeper: float, now: float, batches: int) -> Any:
    """The running task, if a checkpoint of it now could only resume it at once; else None.

    ``next_sleeper``: the first harness sleep's deadline (:mod:`.sleepers`); ``batches``: the
    scheduler batches the host has counted in this command (the next one may be a spin check's)."""
    if runner.runq or getattr(_CONTEXT, "batch", True) or not _RUN._ALLOW_DETERMINISTIC_SCHEDULING:
        return None  # another task runs first (or this is not a batch the shuffle saw)
    if (batches + 1) % CHECK_EVERY == 0:
        return None  # the host looks at the clock after that batch: it runs
    queue = runner.entry_queue
    if queue.queue or queue.idempotent_queue:
        return None
    task = _CONTEXT.task
    if task._cancel_status.effectively_cancelled or (task is runner.main_task and runner.ki_pending):
        return None
    if next_sleeper <= now or runner.deadlines.next_deadline() <= now:
        return None  # the next pass expires a deadline or wakes a sleeper before the task resumes
    return task


def round_trip_seen(runner: Any, task: Any) -> None:
    """What a round trip through the scheduler leaves visible, done in place (see the module doc)."""
    task._schedule_points += 1
    task._cancel_points += 1
    task.custom_sleep_data = None
    instruments = runner.instruments
    for hook in _ROUND_TRIP_HOOKS:
        if hook in instruments:
            if hook in {"before_io_wait", "after_io_wait"}:
                instruments.call(hook, 0)  # the timeout of a pass with a task runnable
            else:
                instruments.call(hook, task)


def sleep_passes_alone(runner: Any, next_sleeper: float, due: float) -> bool:
    """Whether nothing but the sleeper itself wakes up to ``due``: no deadline of trio's and no
    other harness sleep falls due before it or with it (the pass that wakes it would wake them
    too), and the idle pass is the plain one — no task waits for the run to go idle
    (``wait_all_tasks_blocked``: its cushion would be the pass's timeout), the clock's autojump
    threshold is the simulator's 0 (trio hands the pass's hooks that threshold)."""
    return (
        next_sleeper > due
        and runner.deadlines.next_deadline() > due
        and not runner.waiting_for_idle
        and runner.clock_autojump_threshold == 0
    )


def round_trip_slept(runner: Any, task: Any, clock: Any, gap: float) -> None:
    """What a timed sleep through the scheduler leaves visible, done in place: the task parks,
    the loop finds nothing to run and hands the host an idle pass, the host moves the clock
    by ``gap`` (exactly as :meth:`.process.SimProcess._when_blocked` moves it) and wakes the
    sleeper, and the next pass runs it alone."""
    task._schedule_points += 1
    task._cancel_points += 1
    task.custom_sleep_data = None
    instruments = runner.instruments
    if "after_task_step" in instruments:
        instruments.call("after_task_step", task)
    timeout = runner.clock_autojump_threshold  # an idle pass's timeout: the threshold, 0 (see sleep_passes_alone)
    if "before_io_wait" in instruments:
        instruments.call("before_io_wait", timeout)
    clock.jump(gap)
    if "task_scheduled" in instruments:
        instruments.call("task_scheduled", task)
    if "after_io_wait" in instruments:
        instruments.call("after_io_wait", timeout)
    if "before_task_step" in instruments:
        instruments.call("before_task_step", task)
