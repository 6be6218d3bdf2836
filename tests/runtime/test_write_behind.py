"""The write-behind controller on trio's virtual clock (spec §3.5, §8.4 — all ten cases).

Every test runs under ``MockClock(autojump_threshold=0)``: time moves only when every task
is blocked, so "200 ms" is exact and the suite takes no wall time.  ``at(t)`` sleeps until
virtual time ``t`` (seconds since the start) and then lets every woken task settle.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

import pytest
import trio
import trio.testing

from runtime.persistence.backend import JsonlBackend
from runtime.persistence.store import open_store
from runtime.persistence.write_behind import WriteBehind
from runtime.session.events import Event
from runtime.session.session import Session
from tests.support.persistence import backend, meta, read_bytes, run, seqs


def event(seq: int) -> Event:
    return Event("turn/start", seq, seq, {"turn": seq + 1})


class Sink:
    """Records batches; can hold a batch at a gate and fail chosen attempts."""

    def __init__(self) -> None:
        self.batches: list[list[Event]] = []
        self.gates: dict[int, trio.Event] = {}  # attempt number (1-based) -> gate
        self.failures: dict[int, Exception] = {}  # attempt number -> error raised

    @property
    def seqs(self) -> list[list[int]]:
        return [[e.seq for e in batch] for batch in self.batches]

    async def __call__(self, batch: Sequence[Event]) -> None:
        self.batches.append(list(batch))
        attempt = len(self.batches)
        gate = self.gates.get(attempt)
        if gate is not None:
            await gate.wait()
        if attempt in self.failures:
            raise self.failures[attempt]


def virtual(body: Callable[[WriteBehind, Sink, Callable[[float], Awaitable[None]]], Awaitable[None]]) -> None:
    async def main() -> None:
        sink = Sink()
        wb = WriteBehind("s", sink)
        start = trio.current_time()

        async def at(t: float) -> None:
            await trio.sleep_until(start + t)
            await trio.testing.wait_all_tasks_blocked()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(wb.run)
            await trio.testing.wait_all_tasks_blocked()
            await body(wb, sink, at)
            nursery.cancel_scope.cancel()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def no_timer(wb: WriteBehind) -> bool:
    return wb._deadline is None


def test_one_fixed_window_from_the_first_event_and_owns_its_copy() -> None:
    async def body(wb: WriteBehind, sink: Sink, at: Callable[[float], Awaitable[None]]) -> None:
        first = event(0)
        wb.enqueue(first)
        first.data["turn"] = 99  # the caller mutates its object after admission
        await at(0.150)
        wb.enqueue(event(1))
        await at(0.199)
        assert sink.batches == []
        await at(0.200)
        assert sink.seqs == [[0, 1]]
        assert sink.batches[0][0].data == {"turn": 1}
        assert not wb.has_work

    virtual(body)


def test_twenty_events_ten_ms_apart_make_one_batch() -> None:
    async def body(wb: WriteBehind, sink: Sink, at: Callable[[float], Awaitable[None]]) -> None:
        wb.enqueue(event(0))
        for seq in range(1, 20):
            await at(seq * 0.010)
            wb.enqueue(event(seq))
        assert sink.batches == []
        await at(0.200)
        assert sink.seqs == [list(range(20))]
        await wb.flush()

    virtual(body)


def test_concurrent_flushes_share_one_barrier_that_drains_admitted_tails() -> None:
    async def body(wb: WriteBehind, sink: Sink, at: Callable[[float], Awaitable[None]]) -> None:
        sink.gates[1] = gate = trio.Event()
        done: list[str] = []

        async def flush(name: str) -> None:
            await wb.flush()
            done.append(name)

        wb.enqueue(event(0))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(flush, "first")
            nursery.start_soon(flush, "second")
            await trio.testing.wait_all_tasks_blocked()
            assert sink.seqs == [[0]]
            wb.enqueue(event(1))  # admitted while the barrier runs
            gate.set()
        assert sorted(done) == ["first", "second"]
        assert sink.seqs == [[0], [1]]
        assert not wb.has_work and no_timer(wb)
        assert trio.current_time() == 0  # immediate: no window was waited for

    virtual(body)


def test_work_after_a_quiescent_barrier_starts_a_new_window() -> None:
    async def body(wb: WriteBehind, sink: Sink, at: Callable[[float], Awaitable[None]]) -> None:
        await wb.flush()
        wb.enqueue(event(0))
        assert sink.batches == [] and not no_timer(wb)
        await at(0.199)
        assert sink.batches == []
        await at(0.200)
        assert sink.seqs == [[0]]
        assert not wb.has_work

    virtual(body)


def test_over_budget_tail_starts_right_after_the_active_write() -> None:
    async def body(wb: WriteBehind, sink: Sink, at: Callable[[float], Awaitable[None]]) -> None:
        sink.gates[1] = gate = trio.Event()
        wb.enqueue(event(0))
        await at(0.200)
        assert sink.seqs == [[0]]
        wb.enqueue(event(1))
        await at(0.400)
        assert sink.seqs == [[0]]  # its window expired, but one write at a time
        gate.set()
        await trio.testing.wait_all_tasks_blocked()
        assert sink.seqs == [[0], [1]]
        assert trio.current_time() == pytest.approx(0.400)
        await wb.flush()

    virtual(body)


def test_unexpired_tail_deadline_is_kept_after_the_active_write() -> None:
    async def body(wb: WriteBehind, sink: Sink, at: Callable[[float], Awaitable[None]]) -> None:
        sink.gates[1] = gate = trio.Event()
        wb.enqueue(event(0))
        await at(0.200)
        wb.enqueue(event(1))  # deadline 0.400
        await at(0.250)
        gate.set()
        await trio.testing.wait_all_tasks_blocked()
        assert sink.seqs == [[0]]
        await at(0.399)
        assert sink.seqs == [[0]]
        await at(0.400)  # exactly 150 ms after the first write completed
        assert sink.seqs == [[0], [1]]
        await wb.flush()

    virtual(body)


def test_background_failure_is_reported_once_and_pauses_retries(caplog: pytest.LogCaptureFixture) -> None:
    async def body(wb: WriteBehind, sink: Sink, at: Callable[[float], Awaitable[None]]) -> None:
        sink.failures[1] = OSError("storage unavailable")
        wb.enqueue(event(0))
        with caplog.at_level(logging.WARNING, logger="dsh.persistence"):
            await at(0.200)
        assert wb.failures_reported == 1
        assert [r.getMessage() for r in caplog.records] == [
            'session-persistence: background write for session "s" failed (buffered events retained): storage unavailable'
        ]
        # the record keeps the error's text, not the error (whose traceback holds the write's frames)
        assert not [a for r in caplog.records for a in r.args or () if isinstance(a, BaseException)]
        assert wb.has_work and seqs(wb.pending) == [0]
        await at(1.200)
        assert sink.seqs == [[0]]  # no automatic retry
        wb.enqueue(event(1))
        await at(1.399)
        assert sink.seqs == [[0]]
        await at(1.400)
        assert sink.seqs == [[0], [0, 1]]
        assert wb.failures_reported == 1
        await wb.flush()

    virtual(body)


def test_overlapping_background_failure_is_retried_inside_flush() -> None:
    async def body(wb: WriteBehind, sink: Sink, at: Callable[[float], Awaitable[None]]) -> None:
        sink.gates[1] = gate = trio.Event()
        sink.failures[1] = OSError("transient")
        wb.enqueue(event(0))
        await at(0.200)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wb.flush)
            nursery.start_soon(wb.flush)
            await trio.testing.wait_all_tasks_blocked()
            gate.set()
        assert sink.seqs == [[0], [0]]
        assert wb.failures_reported == 1
        assert not wb.has_work

    virtual(body)


def test_barrier_failure_rejects_flush_and_retains_the_batch() -> None:
    async def body(wb: WriteBehind, sink: Sink, at: Callable[[float], Awaitable[None]]) -> None:
        failure = OSError("durability failed")
        sink.failures[1] = failure
        wb.enqueue(event(0))
        with pytest.raises(OSError) as err:
            await wb.flush()
        assert err.value is failure
        assert wb.failures_reported == 0  # no detached report for a barrier failure
        assert wb.has_work and no_timer(wb)
        wb.enqueue(event(1))
        await at(0.200)
        assert sink.seqs == [[0], [0, 1]]
        await wb.flush()

    virtual(body)


@pytest.mark.slow
def test_a_failed_huge_batch_is_retained_intact() -> None:
    async def body(wb: WriteBehind, sink: Sink, at: Callable[[float], Awaitable[None]]) -> None:
        size = 150_000
        sink.failures[1] = OSError("durability failed")
        for seq in range(size):
            wb.enqueue(event(seq))
        with pytest.raises(OSError):
            await wb.flush()
        assert wb.has_work
        await wb.flush()
        assert [len(b) for b in sink.batches] == [size, size]
        assert seqs(sink.batches[1]) == list(range(size))
        assert not wb.has_work

    virtual(body)


def test_flush_sharers_take_over_when_the_barrier_owner_is_cancelled() -> None:
    async def body(wb: WriteBehind, sink: Sink, at: Callable[[float], Awaitable[None]]) -> None:
        sink.gates[1] = gate = trio.Event()
        wb.enqueue(event(0))
        await at(0.200)  # a background write is in flight
        wb.enqueue(event(1))
        owner_done: list[bool] = []
        async with trio.open_nursery() as nursery:
            owner_scope = trio.CancelScope()

            async def owner() -> None:
                with owner_scope:
                    await wb.flush()
                owner_done.append(owner_scope.cancelled_caught)

            nursery.start_soon(owner)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(wb.flush)  # shares the owner's barrier
            await trio.testing.wait_all_tasks_blocked()
            owner_scope.cancel()
            await trio.testing.wait_all_tasks_blocked()
            gate.set()
        assert owner_done == [True]
        assert sink.seqs == [[0], [1]]
        assert not wb.has_work

    virtual(body)


# -- the store-level barrier -----------------------------------------------------------------


class TickClock:
    def __init__(self) -> None:
        self.now = 1000

    def now_ms(self) -> int:
        self.now += 1
        return self.now


def test_store_flush_is_a_durability_barrier(tmp_path) -> None:  # type: ignore[no-untyped-def]
    root = str(tmp_path / "root")

    async def main() -> None:
        b: JsonlBackend = backend(root, "none")
        async with open_store() as store:
            session = Session("live", TickClock())
            handle = await b.create(meta("live"))
            store.bind(session, handle)
            assert store.is_live("live") and store.session_of("live") is session
            session.append("turn/start", {"turn": 1})
            session.append("step/start", {"turn": 1, "step": 1})
            await store.flush(session)
            assert seqs(await handle.read()) == [0, 1]  # durable without waiting for a window
            session.append("step/end", {"turn": 1, "step": 1})
            session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
            await trio.sleep(0.25)  # the window writes the tail by itself
            assert seqs(await handle.read()) == [0, 1, 2, 3]
            session.append("turn/start", {"turn": 2})
            await store.release(session)
            assert not store.is_live("live")
        assert seqs(await (await backend(root, "none").open("live", "read")).read()) == [0, 1, 2, 3, 4]
        text = read_bytes(f"{root}/_no-cwd/live/session.v3.jsonl").decode()
        assert text.count("\n") == 6

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0.01))


def test_store_binds_the_unstored_suffix_of_a_resumed_session(tmp_path) -> None:  # type: ignore[no-untyped-def]
    root = str(tmp_path / "root")

    async def main() -> None:
        b = backend(root, "zstd")
        seed = [Event("turn/start", 0, 1, {"turn": 1}), Event("turn/end", 1, 2, {"turn": 1, "reason": {"kind": "completed"}})]
        handle = await b.create(meta("resumed"))
        await handle.append(seed)
        async with open_store() as store:
            session = Session("resumed", TickClock(), seed)  # + session/end-seed at seq 2
            store.bind(session, handle)
            await store.flush(session)
            assert [e.type for e in await handle.read()] == ["turn/start", "turn/end", "session/end-seed"]
        with pytest.raises(Exception, match="closed handle"):
            await handle.append([Event("turn/start", 3, 3, {"turn": 2})])

    run(main)
