"""A command that hangs its process is a finding, found from the schedule (spin, deadlock) or
by the host's watchdog (a stall inside one batch), and the harness kills the process.

Engine-level programs hang in each way; then a careless edit of the runtime — a foreground
flush failure logged and swallowed, so the graceful stop retries the same failing write
forever — is named ``no_hang`` by replay and found by fuzz (before: a fuzz run that met it
never returned)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
import trio

from dsh_sim import api
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.engine.determinism import new_clock
from dsh_sim.engine.hang import CHECK_EVERY, STOP_GRACE, Hung
from dsh_sim.engine.process import SimProcess, SimulatedCrash
from dsh_sim.engine.watchdog import WATCHDOG
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import parse


@pytest.fixture
def quiet_persistence_log(caplog: pytest.LogCaptureFixture) -> None:
    """The stalled runtime below logs its swallowed failure on every turn of its loop, which
    pytest's log capture would keep: not this test's subject, so the persistence logger keeps
    to errors while it runs."""
    caplog.set_level(logging.ERROR, logger="dsh.persistence")


@pytest.fixture
def quick_watchdog(quiet_persistence_log: None) -> Iterator[None]:
    """A watchdog of 0.3 CPU seconds of the stepping thread, looking every 0.1 real seconds (the
    shipped limit is ten; the heaviest legitimate command of the corpus and the fuzzers takes
    0.05): a loaded machine makes it fire later, never sooner, because the command's CPU time
    does not grow with the load."""
    seconds, poll = WATCHDOG.seconds, WATCHDOG.poll
    WATCHDOG.seconds, WATCHDOG.poll = 0.3, 0.1
    try:
        yield
    finally:
        WATCHDOG.seconds, WATCHDOG.poll = seconds, poll


def _process(main: Any) -> SimProcess:
    proc = SimProcess(1, main, clock=new_clock(), seed=7)
    assert proc.start().state == "idle"
    return proc


def _killed(proc: SimProcess, hang: Hung) -> None:
    reply = proc.kill(hang)
    assert reply.state == "exited" and proc.exited
    assert isinstance(reply.error, SimulatedCrash), reply.error


async def _serve(proc: SimProcess) -> None:
    proc.ready = True
    await trio.sleep_forever()


def test_a_command_that_spins_is_found_at_its_batch_and_killed():
    unwound: list[str] = []

    async def spin() -> None:
        try:
            while True:  # a failure retried at once, forever: every attempt yields, time stands still
                with trio.CancelScope(shield=True):
                    await trio.sleep(0)
        finally:
            unwound.append("spin")

    proc = _process(_serve)
    reply = proc.call(spin)
    assert reply.state == "hung" and isinstance(reply.error, Hung)
    assert (reply.error.kind, reply.error.batches) == ("spin", CHECK_EVERY)  # the first window at one instant
    _killed(proc, reply.error)
    assert unwound == ["spin"]  # the kill reached it through its shield


def test_a_spin_is_the_same_batch_in_every_run():
    async def spin_after_work() -> None:
        for _ in range(3):
            await trio.sleep(0.5)
        while True:
            await trio.sleep(0)

    first = _process(_serve).call(spin_after_work).error
    second = _process(_serve).call(spin_after_work).error
    assert isinstance(first, Hung) and isinstance(second, Hung)
    assert (first.kind, first.batches, first.at) == (second.kind, second.batches, second.at) == ("spin", 2 * CHECK_EVERY, 1.5)


@pytest.mark.slow
def test_work_that_takes_virtual_time_is_not_a_spin():
    async def busy() -> int:
        steps = 0
        for _ in range(3 * CHECK_EVERY):  # many batches, but time moves between them
            await trio.sleep(0.001)
            steps += 1
        return steps

    reply = _process(_serve).call(busy)
    assert (reply.state, reply.done, reply.value) == ("idle", True, 3 * CHECK_EVERY)


def _stopping(cleanup: Callable[[], Awaitable[None]]) -> SimProcess:
    """A booted process whose graceful stop runs ``cleanup``, shielded, on its way out."""

    async def main(proc: SimProcess) -> None:
        proc.ready = True
        try:
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await cleanup()

    return _process(main)


def test_a_stop_that_waits_for_nothing_is_a_deadlock():
    async def wait_for_nothing() -> None:
        await trio.Event().wait()  # nothing will ever set it

    proc = _stopping(wait_for_nothing)
    reply = proc.stop()
    assert reply.state == "hung" and isinstance(reply.error, Hung) and reply.error.kind == "deadlock"
    _killed(proc, reply.error)


def test_a_stop_that_only_waits_for_a_timer_is_no_deadlock():
    async def drain() -> None:
        await trio.sleep(300)  # a long drain, but one that ends within the grace

    reply = _stopping(drain).stop()
    assert reply.state == "exited" and reply.error is None


def test_a_stop_that_retries_forever_with_pauses_overruns_its_grace():
    async def retry_forever() -> None:
        while True:  # a failing write retried after a pause: time moves, no spin
            await trio.sleep(1.0)

    proc = _stopping(retry_forever)
    reply = proc.stop()
    assert reply.state == "hung" and isinstance(reply.error, Hung)
    assert (reply.error.kind, reply.error.at) == ("overrun", STOP_GRACE + 1.0)
    _killed(proc, reply.error)


def _retrying_stop(config: dict[str, Any], faults: list[dict[str, Any]]) -> Any:
    """A failing write at every attempt; the careless runtime's stop retries it forever."""
    return parse(
        {
            "format": "dsh-sim-scenario",
            "version": 1,
            "name": "stop-retries-with-pauses",
            "machine": "durability",
            "seed": 5,
            "config": config,
            "steps": [
                {"op": "boot"},
                *({"op": "arm", "args": {"rule": rule}} for rule in faults),
                {"op": "prompt", "args": {"responses": [{"text": "hi"}]}},
            ],
        }
    )


ALWAYS_FAILS = {"point": "fs.write", "action": "error", "times": 1_000_000}


def test_replay_names_a_stop_that_retries_with_pauses_deterministically():
    scenario = _retrying_stop({"io_latency": 10.0}, [ALWAYS_FAILS])
    with applied([SWALLOW_FOREGROUND_FAILURES]):
        first, _ = run_scenario(scenario)
        second, _ = run_scenario(scenario)
    assert first.invariant == "no_hang" and "still stopping after" in first.violations[0].message
    assert (first.digest, first.outcomes) == (second.digest, second.outcomes)


def test_a_stop_the_fault_plan_slowed_down_is_killed_without_a_finding():
    """The same loop, but paced by injected delays: killed at the grace all the same, and not
    blamed on the runtime (a stop with long injected delays may overrun it legitimately)."""
    delays = {"point": "fs.write", "action": "delay", "delay": 10.0, "times": 1_000_000}
    scenario = _retrying_stop({}, [delays, ALWAYS_FAILS])
    with applied([SWALLOW_FOREGROUND_FAILURES]):
        result, sim = run_scenario(scenario)
    assert "no_hang" not in {v.invariant for v in result.violations}
    life = sim.lifetimes[-1]
    assert life.hung is not None and life.hung.kind == "overrun" and life.crash is not None  # killed


@pytest.mark.slow
def test_a_loop_that_never_yields_is_stopped_by_the_watchdog(quick_watchdog):
    def forever() -> None:
        while True:
            try:
                raise ValueError("the same failure again")  # before any checkpoint: no batch ever ends
            except Exception:
                pass

    async def stall() -> None:
        forever()

    cleaned: list[str] = []

    async def main(proc: SimProcess) -> None:
        try:
            await _serve(proc)
        finally:
            cleaned.append("cleanup")

    proc = _process(main)
    reply = proc.call(stall)
    assert reply.state == "hung" and isinstance(reply.error, Hung) and reply.error.kind == "stall"
    assert cleaned == []  # the host stopped at the watchdog: no cleanup runs before the kill
    _killed(proc, reply.error)
    assert cleaned == ["cleanup"]


@pytest.mark.slow
def test_the_watchdog_outlasts_code_that_swallows_it(quick_watchdog):
    swallowed: list[str] = []

    async def stubborn() -> None:
        while True:
            try:
                while True:
                    pass
            except BaseException:  # careless code: even the watchdog's exception, twice
                if len(swallowed) == 2:
                    raise
                swallowed.append("Stalled")

    proc = _process(_serve)
    reply = proc.call(stubborn)
    assert (reply.state, swallowed) == ("hung", ["Stalled", "Stalled"])
    _killed(proc, reply.error)


def test_the_watchdog_leaves_a_command_that_returns_in_time(quick_watchdog):
    async def quick() -> str:
        await trio.sleep(0)
        return "done"

    proc = _process(_serve)
    for _ in range(3):
        assert proc.call(quick).value == "done"
    assert proc.stop().state == "exited"


# -- the runtime: a graceful stop that retries a failing write forever -------------------------

SWALLOW_FOREGROUND_FAILURES = Edit(
    "runtime.persistence.write_behind",
    "WriteBehind._write",
    "if background and isinstance(err, Exception):",
    "if isinstance(err, Exception):",
)

STOP_RETRIES_FOREVER = {  # shrunk by dsh-sim fuzz (seed 1) from an example that met the edit
    "format": "dsh-sim-scenario",
    "version": 1,
    "name": "stop-retries-a-failing-write",
    "machine": "durability",
    "seed": 0,
    "steps": [
        {"op": "boot"},
        {"op": "crash_now", "args": {"kind": "power", "state": "random"}},
        {
            "op": "arm",
            "args": {
                "rule": {
                    "point": "persist.batch.durable",
                    "action": "crash",
                    "hit": 3,
                    "lifetime": 2,
                    "crash": {"kind": "power", "state": "keep"},
                }
            },
        },
        {"op": "boot"},
        {"op": "advance"},
        {"op": "advance", "args": {"seconds": 0.05}},
        {
            "op": "prompt",
            "args": {
                "text": "pay please",
                "responses": [
                    {
                        "text": "working",
                        "tool_calls": [
                            {"id": "c9", "name": "pay_legacy", "arguments": {"amount": 46, "to": "alice"}},
                            {"id": "c10", "name": "write_note", "arguments": {"path": "/sim/workspace/notes.txt", "text": "b"}},
                        ],
                    }
                ],
                "approvals": ["raise", "allowed-once"],
            },
        },
    ],
}


@pytest.mark.slow
def test_replay_names_a_runtime_whose_stop_never_returns(quick_watchdog):
    scenario = parse(STOP_RETRIES_FOREVER)
    assert not run_scenario(scenario)[0].violations
    with applied([SWALLOW_FOREGROUND_FAILURES]):
        result, _ = run_scenario(scenario)
    assert result.invariant == "no_hang", [v.describe() for v in result.violations]
    assert result.outcomes[-1] == "hung:stall"


@pytest.mark.slow
def test_fuzz_finds_a_runtime_whose_stop_never_returns(quick_watchdog, tmp_path):
    """A fixed number of examples, not a time budget; the watchdog counts the stepping thread's
    CPU time, so a loaded machine does not make a legitimate command (0.05 CPU-s at most) stall."""
    with applied([SWALLOW_FOREGROUND_FAILURES]):
        run = api.fuzz("durability", examples=150, seed=1, found_dir=str(tmp_path))  # seed 1 meets it at example 66
    assert run.found is not None and run.found.invariant == "no_hang", run.found
