"""The host-timed harness sleep schedules exactly as ``trio.sleep`` does.

:meth:`SimProcess.sleep` replaces ``trio.sleep`` in the harness's named points (latency,
perturbation) for speed; every recorded trace digest depends on it waking its task in the
same scheduler batch as ``trio.sleep`` would, and on a sleep whose enclosing scope is
cancelled in that very batch unwinding as trio's does.  The program below runs both ways under
many scheduler seeds; task steps (virtual time, task) and what the tasks saw must agree.
"""

from __future__ import annotations

from typing import Any

import trio

from dsh_sim.engine.determinism import new_clock
from dsh_sim.engine.process import SimProcess
from dsh_sim.engine.trace import TaskTracer, Trace


def _run(seed: int, harness_sleep: bool) -> tuple[str, list[Any], list[Any]]:
    clock = new_clock()
    trace = Trace(keep=True)
    seen: list[Any] = []

    async def main(proc: SimProcess) -> None:
        sleep = proc.sleep if harness_sleep else trio.sleep
        victim_scope = trio.CancelScope()

        async def ticker(name: str, period: float) -> None:
            for _ in range(4):
                await sleep(period)
                seen.append((name, trio.current_time()))

        async def victim() -> None:
            with victim_scope:
                await sleep(0.3)  # ends in the batch where the canceller cancels this scope
                seen.append(("victim woke", trio.current_time()))
                await trio.sleep(0)
                seen.append(("victim went on", trio.current_time()))
            seen.append(("victim cancelled", victim_scope.cancelled_caught))

        async def canceller() -> None:
            await trio.sleep(0.3)
            victim_scope.cancel()

        async def timed_out() -> None:
            with trio.move_on_after(0.05) as scope:
                await sleep(1.0)
            seen.append(("timed out", scope.cancelled_caught, trio.current_time()))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ticker, "a", 0.1)
            nursery.start_soon(ticker, "b", 0.15)
            nursery.start_soon(victim)
            nursery.start_soon(canceller)
            nursery.start_soon(timed_out)
            nursery.start_soon(ticker, "zero", 0.0)

    proc = SimProcess(1, main, clock=clock, seed=seed, instruments=[TaskTracer(trace, 1, clock)])
    reply = proc.start()
    assert reply.error is None, reply.error
    return reply.state, trace.records, seen


def test_a_harness_sleep_schedules_as_trio_sleep():
    outcomes = set()
    for seed in range(40):
        assert _run(seed, harness_sleep=True) == _run(seed, harness_sleep=False), f"seed {seed}"
        outcomes.add(any(s[0] == "victim woke" for s in _run(seed, harness_sleep=False)[2]))
    assert outcomes == {True, False}  # both orders of the victim and its canceller were met


def test_an_advance_stops_at_its_end_though_the_next_timer_is_later():
    """``advance`` moves the clock to its end and no further, whether the timers due meanwhile
    are trio's, a harness sleep's or none (the host moves time itself; a step of an idle run
    would let trio's autojump carry the clock on to its next deadline)."""
    clock = new_clock()
    woke: list[float] = []

    async def main(proc: SimProcess) -> None:
        async def sleeper(seconds: float, harness: bool) -> None:
            await (proc.sleep(seconds) if harness else trio.sleep(seconds))
            woke.append(trio.current_time())

        async with trio.open_nursery() as nursery:
            nursery.start_soon(sleeper, 0.2, True)
            nursery.start_soon(sleeper, 1.0, False)
            nursery.start_soon(sleeper, 1.5, True)
            proc.ready = True

    proc = SimProcess(1, main, clock=clock, seed=3)
    assert proc.start().state == "idle"
    proc.advance(0.5)
    assert (clock.current_time(), woke) == (0.5, [0.2])
    proc.advance(0.25)
    assert (clock.current_time(), woke) == (0.75, [0.2])
    proc.advance(1.0)
    assert (clock.current_time(), woke) == (1.75, [0.2, 1.0, 1.5])


def test_a_waiting_driver_takes_no_turn_while_the_timers_fire():
    """The host moves time through a command's timers without waking the driver: a command
    that sleeps ten times wakes the driver once (to start it), not at every timer (it used
    to wake at each one only to sleep again: a fifth of all task steps of a fuzz run)."""
    clock = new_clock()
    trace = Trace(keep=True)

    async def main(proc: SimProcess) -> None:
        proc.ready = True
        await trio.sleep_forever()

    async def command() -> int:
        for _ in range(10):
            await trio.sleep(0.1)
        return 10

    proc = SimProcess(1, main, clock=clock, seed=5, instruments=[TaskTracer(trace, 1, clock)])
    proc.start()
    before = len(trace.records)
    reply = proc.call(command)
    assert (reply.done, reply.value, round(clock.current_time(), 6)) == (True, 10, 1.0)
    steps = [record[3] for record in trace.records[before:] if record[0] == "step"]
    assert steps.count("SimProcess._driver") == 1, steps
