"""A simulated process's trio run opens no descriptor, and schedules exactly as a run on epoll.

:mod:`dsh_sim.engine.quiet_io` replaces the epoll I/O manager and the entry queue's wake-up
socket pair by a flag.  These tests run one program — tasks, timers, cancellation and trio's
own ``run_sync_soon`` callbacks (queued from tasks and from the host between commands), a
graceful stop — on a quiet run and on trio's own ``setup_runner``, and require the same task
steps in the same batches; a quiet wake-up that is lost, or that wakes its task a batch late,
changes the trace (waking it at once, inside the batch that queued the callback, is the same
schedule: the task runs in the next batch either way).
"""

from __future__ import annotations

import gc
import os
import socket
from typing import Any

import pytest
import trio

from dsh_sim.engine import process as process_module
from dsh_sim.engine.determinism import new_clock, run_module
from dsh_sim.engine.process import SimProcess
from dsh_sim.engine.trace import TaskTracer, Trace


def _epoll_runner(clock: Any, instruments: Any) -> Any:
    """What a run was built with before quiet_io: trio's own runner (epoll, socket pairs)."""
    runner = run_module().setup_runner(clock, instruments, False, True)
    runner.ki_manager.close()
    return runner


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def _program(seen: list[Any]) -> Any:
    async def main(proc: SimProcess) -> None:
        token = trio.lowlevel.current_trio_token()

        async def caller(name: str, times: int) -> None:
            for index in range(times):
                token.run_sync_soon(seen.append, (name, index, trio.current_time()))
                await trio.sleep(0.01 * (index % 3))

        async def stopped_late() -> None:
            try:
                await trio.sleep_forever()
            finally:
                with trio.CancelScope(shield=True):
                    token.run_sync_soon(seen.append, ("late", trio.current_time()))
                    await trio.sleep(0)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(caller, "a", 5)
            nursery.start_soon(caller, "b", 4)
            nursery.start_soon(stopped_late)

    return main


def _run(seed: int) -> tuple[list[Any], list[Any], list[str]]:
    clock = new_clock()
    trace = Trace(keep=True)
    seen: list[Any] = []
    proc = SimProcess(1, _program(seen), clock=clock, seed=seed, instruments=[TaskTracer(trace, 1, clock)])
    states = [proc.start().state]

    async def from_the_host() -> None:
        trio.lowlevel.current_trio_token().run_sync_soon(seen.append, ("host", trio.current_time()))
        await trio.sleep(0.05)

    states.append(proc.call(from_the_host).state)
    states.append(proc.advance(1.0).state)
    states.append(proc.stop().state)
    return trace.records, seen, states


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_quiet_run_schedules_exactly_as_a_run_on_epoll(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    quiet = _run(seed)
    with monkeypatch.context() as patch:
        patch.setattr(process_module, "setup_quiet_runner", _epoll_runner)
        on_epoll = _run(seed)
    assert quiet == on_epoll
    records, seen, states = quiet
    assert states == ["idle", "idle", "idle", "exited"]
    assert seen[-1][0] == "late"  # (the callback queued while unwinding ran, last)
    assert len([s for s in seen if s[0] in ("a", "b")]) == 9 and any(s[0] == "host" for s in seen)


def test_a_quiet_run_opens_no_descriptor(monkeypatch: pytest.MonkeyPatch) -> None:
    # (no collection while counting: an earlier test's unreferenced socket closed by the
    # collector in between would change the count)
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        _count_descriptors(monkeypatch)
    finally:
        if enabled:
            gc.enable()


def _count_descriptors(monkeypatch: pytest.MonkeyPatch) -> None:
    before = _open_descriptors()
    opened: list[int] = []

    async def main(proc: SimProcess) -> None:
        opened.append(_open_descriptors())
        proc.ready = True
        await trio.sleep_forever()

    proc = SimProcess(1, main, clock=new_clock(), seed=1)
    assert proc.start().state == "idle"
    assert opened == [before] and _open_descriptors() == before
    assert proc.stop().state == "exited"
    # the same program on trio's own runner holds five (an epoll instance, two socket pairs)
    monkeypatch.setattr(process_module, "setup_quiet_runner", _epoll_runner)
    proc = SimProcess(1, main, clock=new_clock(), seed=1)
    assert proc.start().state == "idle"
    assert opened[-1] == before + 5
    assert proc.stop().state == "exited"


def test_waiting_for_a_real_descriptor_is_refused_in_a_simulated_process() -> None:
    errors: list[str] = []

    async def main(proc: SimProcess) -> None:
        left, right = socket.socketpair()
        try:
            await trio.lowlevel.wait_readable(left)
        except RuntimeError as err:
            errors.append(str(err))
        finally:
            left.close()
            right.close()

    proc = SimProcess(1, main, clock=new_clock(), seed=1)
    proc.start()
    assert len(errors) == 1 and "waited for a real descriptor" in errors[0]
