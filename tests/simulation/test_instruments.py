"""A simulated process's instrument table (:mod:`dsh_sim.engine.instruments`) is trio's, as a dict.

The table replaces trio's ``UserDict`` one for speed only: what it holds, and what adding,
removing and calling instruments do during a run, must be exactly what trio's table does.
"""

from __future__ import annotations

from typing import Any

import trio

from dsh_sim.engine.determinism import new_clock, run_module
from dsh_sim.engine.instruments import HookTable, fast_instruments
from dsh_sim.engine.process import SimProcess
from dsh_sim.engine.trace import TaskTracer, Trace


class Steps(trio.abc.Instrument):
    def __init__(self, fail: bool = False) -> None:
        self.names: list[str] = []
        self.fail = fail

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.names.append(task.name)
        if self.fail:
            raise RuntimeError("instrument failure")


def test_the_table_holds_what_trios_table_holds():
    tracer = TaskTracer(Trace(), 1, new_clock())
    trios = run_module().Instruments([tracer, Steps()])

    class Runner:
        instruments: Any = trios

    runner = Runner()
    fast_instruments(runner)
    assert isinstance(runner.instruments, HookTable)
    assert dict(runner.instruments) == trios.data and set(runner.instruments) == {"_all", "before_task_step"}
    assert "before_task_step" in runner.instruments and "after_task_step" not in runner.instruments


def test_instruments_added_and_removed_during_a_run_act_as_in_trio():
    added, failing = Steps(), Steps(fail=True)
    seen: list[Any] = []

    async def main(proc: SimProcess) -> None:
        trio.lowlevel.add_instrument(added)
        trio.lowlevel.add_instrument(failing)
        await trio.sleep(0)
        await trio.sleep(0)
        trio.lowlevel.remove_instrument(added)
        seen.append(len(added.names))
        await trio.sleep(0)

    reply = SimProcess(1, main, clock=new_clock(), seed=3).start()
    assert reply.error is None, reply.error
    assert seen and seen[0] == len(added.names) >= 2  # called while added, never after
    assert len(failing.names) == 1  # a failing instrument is dropped after its first failure, as trio does
