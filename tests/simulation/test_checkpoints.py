"""A checkpoint that goes on in place schedules exactly as one that goes round the scheduler.

:mod:`dsh_sim.engine.checkpoints` lets a simulated process's port checkpoint continue the task
without yielding when yielding could only resume it.  These tests run one program — tasks
that checkpoint while others are runnable or still to run in the batch, a task started
mid-batch, deadlines and harness sleeps due at the very instant of a checkpoint, a scope
cancelled around a checkpoint loop, trio's own callbacks, a spin — with the shortcut and with
every checkpoint taking the long way, and require the same task steps (the trace), the same
results and the same replies, and that the shortcut was taken.  Each condition of the
shortcut, left out, is caught (the seeded slips below).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import trio
import trio.testing

from dsh_sim.engine import checkpoints
from dsh_sim.engine import hang as hang_module
from dsh_sim.engine import process as process_module
from dsh_sim.engine.determinism import new_clock
from dsh_sim.engine.instruments import PlainInstrument
from dsh_sim.engine.process import SimProcess
from dsh_sim.engine.trace import TaskTracer, Trace
from dsh_sim.mutants.patch import Edit, applied


def _program(seen: list[Any]) -> Any:
    async def main(proc: SimProcess) -> None:
        token = trio.lowlevel.current_trio_token()
        ready = trio.Event()

        async def worker(name: str, times: int, pause: float) -> None:
            for index in range(times):
                await proc.checkpoint()
                seen.append((name, index, trio.current_time()))
                if index % 3 == 2:
                    await trio.sleep(pause)  # (0: a bare yield with others runnable)

        async def waiter() -> None:
            await ready.wait()
            for index in range(4):
                await proc.checkpoint()
                seen.append(("waiter", index, trio.current_time()))

        async def deadline_at_a_checkpoint() -> None:
            with trio.move_on_after(0.02) as scope:  # expires at the instant the loop below checkpoints
                while True:
                    await trio.sleep(0.01)
                    await proc.checkpoint()
                    seen.append(("deadline-loop", trio.current_time()))
            seen.append(("deadline-expired", scope.cancelled_caught, trio.current_time()))

        async def sleeper_at_a_checkpoint() -> None:
            await proc.sleep(0.03)  # a harness sleep due at the instant another task checkpoints
            seen.append(("harness-sleeper", trio.current_time()))

        async def cancelled_loop() -> None:
            with trio.CancelScope() as scope:
                scope.cancel()
                for index in range(3):
                    try:
                        await proc.checkpoint()
                    except trio.Cancelled:
                        seen.append(("cancelled-at", index))
                        raise
            seen.append(("cancelled-caught", scope.cancelled_caught))

        async def alone_at_a_checkpoint() -> None:
            """Moments when the checkpointing task is the only one to run, but must not go on."""
            await trio.sleep(0.07)
            with trio.CancelScope() as scope:
                scope.deadline = trio.current_time()  # due now: the next pass cancels it
                await proc.checkpoint()
                seen.append(("not-cancelled-at-its-deadline",))
            seen.append(("deadline-now", scope.cancelled_caught))
            await trio.sleep(0.02)
            with trio.CancelScope() as scope:
                scope.cancel()
                await proc.checkpoint()
                seen.append(("not-cancelled",))
            seen.append(("cancelled-alone", scope.cancelled_caught))
            await trio.sleep(0.02)
            token.run_sync_soon(seen.append, ("callback-alone",))
            await proc.checkpoint()
            seen.append(("after-the-callback",))

        async def sleeps_for_nothing() -> None:
            await trio.sleep(0.13)
            await proc.sleep(1e-18)  # a harness sleep due at once (0.13 + 1e-18 == 0.13)
            seen.append(("woken-at", trio.current_time()))

        async def checkpoints_beside_it() -> None:
            await trio.sleep(0.13)
            for index in range(3):
                await proc.checkpoint()
                seen.append(("beside", index))

        async def spawner(nursery: trio.Nursery) -> None:
            for index in range(3):
                await proc.checkpoint()
                nursery.start_soon(worker, f"spawned-{index}", 2, 0.0)
                token.run_sync_soon(seen.append, ("callback", index))
                await proc.checkpoint()
            ready.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(worker, "a", 9, 0.01)
            nursery.start_soon(worker, "b", 7, 0.0)
            nursery.start_soon(waiter)
            nursery.start_soon(deadline_at_a_checkpoint)
            nursery.start_soon(sleeper_at_a_checkpoint)
            nursery.start_soon(cancelled_loop)
            nursery.start_soon(spawner, nursery)
            nursery.start_soon(alone_at_a_checkpoint)
            nursery.start_soon(sleeps_for_nothing)
            nursery.start_soon(checkpoints_beside_it)
            for _ in range(5):  # checkpoints at 0.03, when the harness sleeper is due
                await trio.sleep(0.01)
                await proc.checkpoint()
                seen.append(("main", trio.current_time()))
        proc.ready = True
        await trio.sleep_forever()

    return main


class _EveryHook(PlainInstrument):
    """Every instrument hook trio calls, in order, with what it is given (the shortcut calls
    the same ones, in the same order, with the same values)."""

    def __init__(self, calls: list[Any], clock: Any) -> None:
        self.calls, self.clock = calls, clock

    def _add(self, hook: str, what: Any) -> None:
        self.calls.append((hook, what if isinstance(what, float) else getattr(what, "name", what), self.clock.current_time()))
        if hook == "task_scheduled":
            # trio expires deadlines due together in the order of their scopes' ids (memory
            # addresses; the batch is sorted before it runs): a run of wake-ups is kept sorted
            start = len(self.calls) - 1
            while start and self.calls[start - 1][0] == "task_scheduled":
                start -= 1
            self.calls[start:] = sorted(self.calls[start:])

    def task_scheduled(self, task: trio.lowlevel.Task) -> None:
        self._add("task_scheduled", task)

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        self._add("after_task_step", task)

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self._add("before_task_step", task)

    def before_io_wait(self, timeout: float) -> None:
        self._add("before_io_wait", float(timeout))

    def after_io_wait(self, timeout: float) -> None:
        self._add("after_io_wait", float(timeout))


def _run(seed: int) -> tuple[list[Any], list[Any], list[str]]:
    clock = new_clock()
    trace = Trace(keep=True)
    seen: list[Any] = []
    hooks: list[Any] = []
    proc = SimProcess(1, _program(seen), clock=clock, seed=seed, instruments=[TaskTracer(trace, 1, clock), _EveryHook(hooks, clock)])
    states = [proc.start().state]

    async def from_the_host() -> None:
        for _ in range(20):
            await proc.checkpoint()
        await trio.sleep(0.05)
        await proc.checkpoint()

    states.append(proc.call(from_the_host).state)
    states.append(proc.advance(1.0).state)
    states.append(proc.stop().state)
    return trace.records + hooks, seen, states


def _spin_run(spins: int) -> tuple[list[Any], Any]:
    clock = new_clock()
    trace = Trace(keep=True)
    seen: list[Any] = []

    async def main(proc: SimProcess) -> None:
        proc.ready = True
        await trio.sleep_forever()

    proc = SimProcess(1, main, clock=clock, seed=5, instruments=[TaskTracer(trace, 1, clock)])
    proc.start()

    async def spin() -> None:
        for index in range(spins):  # virtual time stands still: a spin (bounded, should nothing look)
            await proc.checkpoint()
            seen.append(index)
        await trio.sleep(1.0)

    reply = proc.call(spin)
    return seen, (reply.state, getattr(reply.error, "kind", None), getattr(reply.error, "batches", None))


def _sleepy(seen: list[Any], nurseries: list[trio.Nursery]) -> Any:
    async def main(proc: SimProcess) -> None:
        async def alone() -> None:
            for index in range(6):
                await proc.sleep(0.125)  # nothing else due meanwhile: the clock moves in place
                seen.append(("alone", index, trio.current_time()))

        async def on_trio_deadline() -> None:
            await trio.sleep(2.75)  # the same instant a harness sleep below falls due
            seen.append(("trio-deadline", trio.current_time()))

        async def with_trio_deadline() -> None:
            await trio.sleep(2.5)
            await proc.sleep(0.25)  # due at 2.75, with on_trio_deadline
            seen.append(("with-trio-deadline", trio.current_time()))

        async def first_sleeper() -> None:
            await proc.sleep(3.5)
            seen.append(("first-sleeper", trio.current_time()))

        async def second_sleeper() -> None:
            await trio.sleep(3.0)
            await proc.sleep(0.5)  # due at 3.5, with first_sleeper
            seen.append(("second-sleeper", trio.current_time()))

        async with trio.open_nursery() as nursery:
            for task in (alone, on_trio_deadline, with_trio_deadline, first_sleeper, second_sleeper):
                nursery.start_soon(task)
        proc.ready = True
        async with trio.open_nursery() as nursery:
            nurseries.append(nursery)
            await trio.sleep_forever()

    return main


def _sleepy_run(seed: int) -> tuple[list[Any], list[Any], list[Any]]:
    clock = new_clock()
    trace = Trace(keep=True)
    seen: list[Any] = []
    hooks: list[Any] = []
    nurseries: list[trio.Nursery] = []
    instruments = [TaskTracer(trace, 1, clock), _EveryHook(hooks, clock)]
    proc = SimProcess(1, _sleepy(seen, nurseries), clock=clock, seed=seed, instruments=instruments)
    replies = [(proc.start().state, clock.current_time())]

    async def background() -> None:
        for index in range(4):
            await proc.sleep(0.25)  # goes on after the command that started it returned
            seen.append(("background", index, trio.current_time()))

    async def starts_background() -> None:
        nurseries[0].start_soon(background)

    async def past_the_horizon() -> None:
        await proc.sleep(0.5)
        seen.append(("past-the-horizon", trio.current_time()))

    for command in (
        lambda: proc.call(starts_background),
        lambda: proc.call(past_the_horizon, horizon=0.375),
        lambda: proc.advance(0.625),
        lambda: proc.advance(2.0),
    ):
        reply = command()
        replies.append((reply.state, reply.done, clock.current_time()))
    replies.append((proc.stop().state, clock.current_time()))
    return trace.records + hooks, seen, replies


class _Counted:
    """How often the shortcut was taken (the original function, counted)."""

    def __init__(self) -> None:
        self.taken = 0
        self.original = checkpoints.continue_at_checkpoint

    def __call__(self, *args: Any) -> Any:
        task = self.original(*args)
        self.taken += task is not None
        return task


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Counted]:
    counter = _Counted()
    monkeypatch.setattr(process_module, "continue_at_checkpoint", counter)
    yield counter


def _long_way(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process_module, "continue_at_checkpoint", lambda *args: None)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_going_on_in_place_schedules_exactly_as_going_round(seed: int, counted: _Counted, monkeypatch: pytest.MonkeyPatch) -> None:
    shortcut = _run(seed)
    assert counted.taken >= 20  # (the host's command alone checkpoints 20 times with nothing else to run)
    with monkeypatch.context() as patch:
        _long_way(patch)
        long_way = _run(seed)
    assert shortcut == long_way
    records, seen, states = shortcut
    assert states == ["idle", "idle", "idle", "exited"]
    assert ("deadline-expired", True, 0.02) in seen and ("harness-sleeper", 0.03) in seen
    assert ("cancelled-at", 0) in seen and ("cancelled-caught", True) in seen
    assert [s for s in seen if s[0] == "callback"] == [("callback", 0), ("callback", 1), ("callback", 2)]
    assert ("deadline-now", True) in seen and ("cancelled-alone", True) in seen
    assert ("callback-alone",) in seen and ("woken-at", 0.13) in seen


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_sleep_that_passes_in_place_schedules_exactly_as_one_through_the_host(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    slept = []
    original = process_module.round_trip_slept
    monkeypatch.setattr(process_module, "round_trip_slept", lambda *args: slept.append(1) or original(*args))
    in_place = _sleepy_run(seed)
    assert len(slept) >= 4  # (most of the lone sleeper's, the background's)
    with monkeypatch.context() as patch:
        patch.setattr(process_module, "sleep_passes_alone", lambda *args: False)
        through_the_host = _sleepy_run(seed)
    assert in_place == through_the_host
    _, seen, replies = in_place
    assert ("with-trio-deadline", 2.75) in seen and ("second-sleeper", 3.5) in seen
    # the boot ends at 3.5; the horizon (3.875) replies at 3.75, before the sleep ends at 4.0;
    # the background sleeper goes on between commands and through the advances
    assert replies[2] == ("idle", False, 3.75) and ("past-the-horizon", 4.0) in seen
    assert [s for s in seen if s[0] == "background"] == [("background", i, 3.75 + 0.25 * i) for i in range(4)]


def test_a_spin_is_found_at_the_same_batch(counted: _Counted, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hang_module, "CHECK_EVERY", 100)
    monkeypatch.setattr(process_module, "CHECK_EVERY", 100)
    monkeypatch.setattr(checkpoints, "CHECK_EVERY", 100)
    shortcut = _spin_run(1_000)
    assert counted.taken >= 90
    with monkeypatch.context() as patch:
        _long_way(patch)
        long_way = _spin_run(1_000)
    assert shortcut == long_way
    assert shortcut[1] == ("hung", "spin", 100)


def _idle_waiter_run(seed: int) -> tuple[list[Any], list[Any], list[Any]]:
    """Sleeps beside a task waiting for the run to go idle (its cushion is the idle pass's
    timeout, which the I/O-wait hooks are handed)."""
    clock = new_clock()
    trace = Trace(keep=True)
    seen: list[Any] = []
    hooks: list[Any] = []

    async def main(proc: SimProcess) -> None:
        async def idle_waiter() -> None:
            await trio.testing.wait_all_tasks_blocked(cushion=0.5)
            seen.append(("idle", trio.current_time()))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(idle_waiter)
            for index in range(3):
                await proc.sleep(0.125)
                seen.append(("slept", index, trio.current_time()))
            proc.ready = True
            await trio.sleep_forever()

    proc = SimProcess(1, main, clock=clock, seed=seed, instruments=[TaskTracer(trace, 1, clock), _EveryHook(hooks, clock)])
    replies = [(proc.start().state, clock.current_time())]
    replies.append((proc.stop().state, clock.current_time()))
    return trace.records + hooks, seen, replies


def test_a_task_waiting_for_idle_keeps_sleeps_the_long_way(monkeypatch: pytest.MonkeyPatch) -> None:
    in_place = _idle_waiter_run(1)
    with monkeypatch.context() as patch:
        patch.setattr(process_module, "sleep_passes_alone", lambda *args: False)
        through_the_host = _idle_waiter_run(1)
    assert in_place == through_the_host
    assert ("before_io_wait", 0.5, 0.125) in in_place[0]  # (the cushion, as trio hands it)


class _WhereHooksRun(trio.abc.Instrument):
    """An instrument that looks at the run: the current task its I/O-wait hooks see (none: trio
    calls them between task steps).  Not plain, so its runs take no shortcut."""

    def __init__(self, calls: list[Any]) -> None:
        self.calls = calls

    def _where(self, hook: str) -> None:
        try:
            self.calls.append((hook, trio.lowlevel.current_task().name))
        except RuntimeError:
            self.calls.append((hook, None))

    def before_io_wait(self, timeout: float) -> None:
        self._where("before_io_wait")

    def after_io_wait(self, timeout: float) -> None:
        self._where("after_io_wait")


def _hook_context_run() -> list[Any]:
    calls: list[Any] = []

    async def main(proc: SimProcess) -> None:
        proc.ready = True
        await trio.sleep_forever()

    proc = SimProcess(1, main, clock=new_clock(), seed=1, instruments=[_WhereHooksRun(calls)])
    proc.start()

    async def checkpoints_alone() -> None:
        for _ in range(3):
            await proc.checkpoint()
            await proc.sleep(0.25)

    proc.call(checkpoints_alone)
    proc.stop()
    return calls


def test_an_instrument_that_looks_at_the_run_keeps_the_long_way(counted: _Counted, monkeypatch: pytest.MonkeyPatch) -> None:
    shortcut = _hook_context_run()
    assert counted.taken == 0
    with monkeypatch.context() as patch:
        _long_way(patch)
        patch.setattr(process_module, "sleep_passes_alone", lambda *args: False)
        long_way = _hook_context_run()
    assert shortcut == long_way
    assert ("before_io_wait", None) in shortcut


# Each condition of the shortcut, left out: the schedule (or the spin check) moves.
SLIPS = {
    "another task runnable": Edit(
        "dsh_sim.engine.checkpoints",
        "continue_at_checkpoint",
        '    if runner.runq or getattr(_CONTEXT, "batch", True) or not _RUN._ALLOW_DETERMINISTIC_SCHEDULING:\n',
        '    if getattr(_CONTEXT, "batch", True) or not _RUN._ALLOW_DETERMINISTIC_SCHEDULING:\n',
    ),
    "tasks left in the batch": Edit(
        "dsh_sim.engine.checkpoints",
        "continue_at_checkpoint",
        '    if runner.runq or getattr(_CONTEXT, "batch", True) or not _RUN._ALLOW_DETERMINISTIC_SCHEDULING:\n',
        "    if runner.runq or not _RUN._ALLOW_DETERMINISTIC_SCHEDULING:\n",
    ),
    "a deadline or sleeper due": Edit(
        "dsh_sim.engine.checkpoints",
        "continue_at_checkpoint",
        "    if next_sleeper <= now or runner.deadlines.next_deadline() <= now:\n",
        "    if False:\n",
    ),
    "a harness sleeper due": Edit(
        "dsh_sim.engine.checkpoints",
        "continue_at_checkpoint",
        "    if next_sleeper <= now or runner.deadlines.next_deadline() <= now:\n",
        "    if runner.deadlines.next_deadline() <= now:\n",
    ),
    "a cancelled scope": Edit(
        "dsh_sim.engine.checkpoints",
        "continue_at_checkpoint",
        "    if task._cancel_status.effectively_cancelled or (task is runner.main_task and runner.ki_pending):\n",
        "    if task is runner.main_task and runner.ki_pending:\n",
    ),
    "a callback queued": Edit(
        "dsh_sim.engine.checkpoints",
        "continue_at_checkpoint",
        "    if queue.queue or queue.idempotent_queue:\n",
        "    if False:\n",
    ),
    "the hooks' order": Edit(
        "dsh_sim.engine.checkpoints",
        "round_trip_seen",
        "    for hook in _ROUND_TRIP_HOOKS:\n",
        "    for hook in reversed(_ROUND_TRIP_HOOKS):\n",
    ),
    "the trace's task step": Edit(
        "dsh_sim.engine.checkpoints",
        "round_trip_seen",
        "            else:\n                instruments.call(hook, task)\n",
        '            elif hook != "before_task_step":\n                instruments.call(hook, task)\n',
    ),
}


@pytest.mark.parametrize("slip", list(SLIPS))
def test_each_condition_left_out_is_caught(slip: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _runs_with(SLIPS[slip], _run) != _runs_the_long_way(_run, monkeypatch)


def _runs_the_long_way(run: Any, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """``run`` for four seeds, every checkpoint and sleep going round the scheduler."""
    with monkeypatch.context() as patch:
        _long_way(patch)
        patch.setattr(process_module, "sleep_passes_alone", lambda *args: False)
        return [run(seed) for seed in (1, 2, 3, 4)]


def _runs_with(slip: Edit, run: Any) -> list[Any]:
    """``run`` for four seeds with ``slip`` in place (a slip may break trio itself: its error)."""
    with applied([slip]):
        try:
            return [run(seed) for seed in (1, 2, 3, 4)]
        except (AssertionError, trio.TrioInternalError, RuntimeError) as err:
            return [repr(err)]


SLEEP_SLIPS = {
    "a trio deadline due with it": Edit(
        "dsh_sim.engine.checkpoints",
        "sleep_passes_alone",
        "        and runner.deadlines.next_deadline() > due\n",
        "",
    ),
    "a harness sleep due with it": Edit(
        "dsh_sim.engine.checkpoints",
        "sleep_passes_alone",
        "        next_sleeper > due\n",
        "        True\n",
    ),
    "the host would reply first": Edit(
        "dsh_sim.engine.process",
        "SimProcess.sleep",
        "                if gap > 0 and sleep_passes_alone(runner, next_sleeper, due) and self._jumps(now, gap):\n",
        "                if gap > 0 and sleep_passes_alone(runner, next_sleeper, due):\n",
    ),
    "the wake-up before the clock moves": Edit(
        "dsh_sim.engine.checkpoints",
        "round_trip_slept",
        '    clock.jump(gap)\n    if "task_scheduled" in instruments:\n        instruments.call("task_scheduled", task)\n',
        '    if "task_scheduled" in instruments:\n        instruments.call("task_scheduled", task)\n    clock.jump(gap)\n',
    ),
    "the clock left where it was": Edit(
        "dsh_sim.engine.checkpoints",
        "round_trip_slept",
        "    clock.jump(gap)\n",
        "    clock.jump(gap) if False else None\n",
    ),
}


@pytest.mark.parametrize("slip", list(SLEEP_SLIPS))
def test_each_condition_of_a_sleep_left_out_is_caught(slip: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _runs_with(SLEEP_SLIPS[slip], _sleepy_run) != _runs_the_long_way(_sleepy_run, monkeypatch)


def test_the_review_s_conditions_left_out_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    idle_waiter = Edit("dsh_sim.engine.checkpoints", "sleep_passes_alone", "        and not runner.waiting_for_idle\n", "")
    with monkeypatch.context() as patch:
        patch.setattr(process_module, "sleep_passes_alone", lambda *args: False)
        expected = _idle_waiter_run(1)
    with applied([idle_waiter]):
        assert _idle_waiter_run(1) != expected
    looking = Edit(
        "dsh_sim.engine.process",
        "SimProcess.checkpoint",
        "            if self._in_place\n",
        "            if True\n",
    )
    with monkeypatch.context() as patch:
        _long_way(patch)
        expected_calls = _hook_context_run()
    with applied([looking]):
        assert _hook_context_run() != expected_calls


def test_a_spin_check_skipped_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hang_module, "CHECK_EVERY", 100)
    monkeypatch.setattr(process_module, "CHECK_EVERY", 100)
    monkeypatch.setattr(checkpoints, "CHECK_EVERY", 100)
    slip = Edit("dsh_sim.engine.checkpoints", "continue_at_checkpoint", "    if (batches + 1) % CHECK_EVERY == 0:\n", "    if False:\n")
    with applied([slip]):
        seen, reply = _spin_run(1_000)
    assert reply != ("hung", "spin", 100) and len(seen) == 1_000  # the spin ran to its end unseen
