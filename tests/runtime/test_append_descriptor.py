"""The write handle keeps its append descriptor across batches; write + fsync is one port call
(one thread hop); batches that wait together are committed together (group commit)."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing

from runtime.adapters.os_fs import OsFileSystem
from runtime.adapters.system import SystemClock, SystemIds
from runtime.persistence.backend import JsonlBackend
from runtime.persistence.errors import SessionAlreadyOwnedError, SessionHandleClosedError
from runtime.persistence.handles import WriteHandle
from runtime.persistence.log_format import encode_batch
from runtime.ports import Ports
from runtime.ports.fs import OpenFlags, RollbackError
from runtime.session.events import Event
from tests.support.persistence import FaultFS, backend, log_path, meta, one_turn_log, run, second_turn, seqs


@pytest.fixture
def root(tmp_path: Any) -> str:
    return str(tmp_path / "root")


async def read_all(b: JsonlBackend, session_id: str) -> list[Event]:
    handle = await b.open(session_id, "read")
    return await handle.read()


def _log_opens(fs: FaultFS, path: str) -> int:
    return sum(1 for op, arg in fs.calls if op == "open" and arg == path)


def test_one_descriptor_serves_every_batch_and_closes_with_the_handle(root: str) -> None:
    async def main() -> None:
        fs = FaultFS()
        handle = await backend(root, "zstd", fs).create(meta("fd"))
        await handle.append(one_turn_log())  # the first batch publishes the file
        path = log_path(root, "fd", "zstd")
        for batch in (second_turn(6), second_turn(8), second_turn(10)):
            await handle.append(batch)
        assert _log_opens(fs, path) == 1
        await handle.close()
        assert seqs(await read_all(backend(root), "fd")) == list(range(12))

    run(main)


def test_a_failed_batch_drops_the_descriptor_and_the_next_one_reopens(root: str) -> None:
    async def main() -> None:
        fs = FaultFS()
        handle = await backend(root, "zstd", fs).create(meta("re"))
        await handle.append(one_turn_log())
        await handle.append(second_turn(6))
        path = log_path(root, "re", "zstd")
        fs.fail_fsync = {fs.fsyncs + 1}
        with pytest.raises(OSError, match="ENOSPC"):
            await handle.append(second_turn(8))
        await handle.append(second_turn(8))
        assert _log_opens(fs, path) == 2
        await handle.close()
        assert seqs(await read_all(backend(root), "re")) == list(range(10))

    run(main)


def test_the_os_adapter_rolls_back_in_the_same_call(tmp_path: Any) -> None:
    async def main() -> None:
        fs = OsFileSystem()
        path = str(tmp_path / "f")
        fd = await fs.open(path, OpenFlags.WRITE | OpenFlags.CREATE | OpenFlags.APPEND)
        await fs.write_fsync(fd, b"committed")
        await fs.close(fd)
        reader = await fs.open(path, OpenFlags.READ)
        with pytest.raises(OSError) as refused:  # a descriptor not open for writing
            await fs.write_fsync(reader, b"more", rollback_size=9)
        assert isinstance(refused.value, RollbackError) and refused.value.original.errno == errno.EBADF
        await fs.close(reader)
        with open(path, "rb") as stored:
            assert stored.read() == b"committed"

    trio.run(main)


class HopFS(OsFileSystem):
    """The production adapter with its thread hops counted (every port call is one hop to a
    worker thread, :meth:`OsFileSystem._run`), each named by the function the hop runs.

    ``gates``: ``write_fsync`` calls to hold once started, by 1-based call number, until the
    test opens the gate — uncancellable, as a hop that started is; ``before``: calls to hold
    before they start, where a cancelled caller is refused (as the hop refuses one);
    ``fail``: calls that fail with ENOSPC, nothing written (a write + fsync rolled back).
    ``written`` keeps every ``write_fsync``'s bytes as it starts, ``synced`` as it returns."""

    def __init__(self) -> None:
        self.hops: list[str] = []
        self.gates: dict[int, trio.Event] = {}
        self.before: dict[int, trio.Event] = {}
        self.fail: set[int] = set()
        self.calls = 0
        self.written: list[bytes] = []
        self.synced: list[bytes] = []
        self._progress = trio.Event()

    def _moved(self) -> None:
        self._progress.set()
        self._progress = trio.Event()

    async def settled_after(self, writes: int) -> None:
        """Wait (in trio's time, not the clock's) until ``writes`` write + fsync calls have
        started, then until every task is blocked again: what follows from them has run."""
        while len(self.written) < writes:
            await self._progress.wait()
        await trio.testing.wait_all_tasks_blocked()

    @contextlib.asynccontextmanager
    async def opened_on_exit(self) -> AsyncIterator[None]:
        """Every gate opened when the block ends, so a failing test fails instead of waiting
        for ever on a write it holds (inside a nursery: before the nursery waits)."""
        try:
            yield
        finally:
            for gate in (*self.gates.values(), *self.before.values()):
                gate.set()

    async def entered(self, calls: int) -> None:
        """Wait until ``calls`` write + fsync calls were made (started or held before)."""
        while self.calls < calls:
            await self._progress.wait()
        await trio.testing.wait_all_tasks_blocked()

    async def _run(self, fn: Any, *args: Any) -> Any:
        self.hops.append(getattr(fn, "__name__", repr(fn)))
        return await super()._run(fn, *args)

    async def write_fsync(self, fd: int, data: bytes, rollback_size: int | None = None) -> None:
        self.calls += 1
        call = self.calls
        self._moved()
        if call in self.before:
            await self.before[call].wait()
        self.written.append(data)
        self._moved()
        if call in self.gates:
            with trio.CancelScope(shield=True):
                await self.gates[call].wait()
        if call in self.fail:
            raise OSError(errno.ENOSPC, "simulated fsync ENOSPC")
        await super().write_fsync(fd, data, rollback_size)
        self.synced.append(data)


class Acks:
    """A probe that keeps every acknowledged batch's seqs (``persist.batch.durable``)."""

    def __init__(self) -> None:
        self.acked: list[list[int]] = []

    async def at(self, point: str, **details: Any) -> None:
        if point == "persist.batch.durable":
            self.acked.append([event.seq for event in details["_events"]])


def hop_backend(root: str, fs: HopFS, compression: str = "zstd", probe: Acks | None = None) -> JsonlBackend:
    return JsonlBackend(root, Ports(fs=fs, clock=SystemClock(), ids=SystemIds(), probe=probe or Acks()), compression=compression)


async def ready_handle(root: str, fs: HopFS, session_id: str, probe: Acks | None = None) -> WriteHandle:
    """A handle whose file is published and whose append descriptor is open (seqs 0..7)."""
    handle = await hop_backend(root, fs, probe=probe).create(meta(session_id))
    await handle.append(one_turn_log())  # publishes the file
    await handle.append(second_turn(6))  # opens the append descriptor (open + fstat)
    fs.hops.clear()
    fs.calls = 0
    fs.written.clear()
    fs.synced.clear()
    return handle


def test_every_batch_after_the_first_is_one_thread_hop(root: str) -> None:
    """No per-batch lease, stat or open: the lock and the descriptor were proven once; the
    batch is one write + fsync, one hop to a worker thread."""

    async def main() -> None:
        fs = HopFS()
        handle = await ready_handle(root, fs, "one")
        for start in (8, 10, 12):
            await handle.append(second_turn(start))
            assert fs.hops == ["_write_fsync"]  # this batch's only hop
            fs.hops.clear()
        assert fs.synced == [encode_batch(second_turn(start), "zstd") for start in (8, 10, 12)]  # each batch's bytes, as encoded
        await handle.close()

    run(main)


async def _appending(handle: WriteHandle, batch: list[Event], fs: HopFS, done: list[int], errors: dict[int, BaseException]) -> None:
    """Append ``batch``; on return, check its bytes were durable already (and say so)."""
    first = batch[0].seq
    try:
        await handle.append(batch)
    except Exception as err:
        errors[first] = err
        return
    assert encode_batch(batch, "zstd") in b"".join(fs.synced), f"batch {first} returned before its bytes were durable"
    done.append(first)


def test_batches_that_wait_together_are_committed_with_one_write_and_one_fsync(root: str) -> None:
    """Group commit: while one batch is being written, three more queue; the next to take the
    chain writes all three at once (one hop), and none of them returns before that fsync."""

    async def main() -> None:
        fs, acks = HopFS(), Acks()
        handle = await ready_handle(root, fs, "group", acks)
        acks.acked.clear()
        fs.gates = {1: trio.Event(), 2: trio.Event()}
        done: list[int] = []
        errors: dict[int, BaseException] = {}
        async with trio.open_nursery() as nursery, fs.opened_on_exit():
            nursery.start_soon(_appending, handle, second_turn(8), fs, done, errors)
            await trio.testing.wait_all_tasks_blocked()
            assert fs.written == [encode_batch(second_turn(8), "zstd")]  # the first batch is being written
            for start in (10, 12, 14):  # each continues the one before it, not yet in the log
                nursery.start_soon(_appending, handle, second_turn(start), fs, done, errors)
                await trio.testing.wait_all_tasks_blocked()
            fs.gates[1].set()
            await fs.settled_after(2)
            assert done == [8]
            # the three waiting batches: one write of their bytes, in order; none returned yet
            assert fs.written[1:] == [b"".join(encode_batch(second_turn(start), "zstd") for start in (10, 12, 14))]
            assert fs.synced == [encode_batch(second_turn(8), "zstd")]
            fs.gates[2].set()
        assert done == [8, 10, 12, 14] and errors == {}
        assert fs.hops == ["_write_fsync", "_write_fsync"]  # four batches, two hops
        assert acks.acked == [[8, 9], [10, 11], [12, 13], [14, 15]]  # every batch acknowledged, in order
        assert handle.next_seq == 16
        await handle.append(second_turn(16))
        await handle.close()
        stored = await read_all(backend(root), "group")
        assert seqs(stored) == list(range(18))

    run(main)


def test_batches_waiting_for_the_first_publication_are_published_with_it(root: str) -> None:
    """A group whose log is not yet on disk: its batches are in the file the first
    publication writes (one temp file, one link), and each is acknowledged."""

    async def main() -> None:
        fs, acks = HopFS(), Acks()
        handle = await hop_backend(root, fs, probe=acks).create(meta("first"))
        done: list[int] = []
        errors: dict[int, BaseException] = {}
        async with trio.open_nursery() as nursery, handle._chain:  # the chain is busy: they all wait
            nursery.start_soon(_published, handle, one_turn_log(), done, errors)
            await trio.testing.wait_all_tasks_blocked()
            for start in (6, 8):
                nursery.start_soon(_published, handle, second_turn(start), done, errors)
                await trio.testing.wait_all_tasks_blocked()
        assert done == [0, 6, 8] and errors == {}
        assert fs.hops.count("link") == 1 and fs.written == []  # one publication, no append
        assert acks.acked == [list(range(6)), [6, 7], [8, 9]]
        await handle.close()
        assert seqs(await read_all(backend(root), "first")) == list(range(10))

    run(main)


async def _published(handle: WriteHandle, batch: list[Event], done: list[int], errors: dict[int, BaseException]) -> None:
    try:
        await handle.append(batch)
    except Exception as err:
        errors[batch[0].seq] = err
        return
    done.append(batch[0].seq)


def test_a_failed_group_fails_every_waiting_batch_and_acknowledges_none(root: str) -> None:
    """The group's write + fsync fails: each of its batches fails with that error, and so does
    a batch queued behind it (it continues one that is not in the log); none is announced
    durable, nothing of them is stored, and the handle goes on from the committed seq."""

    async def main() -> None:
        fs, acks = HopFS(), Acks()
        handle = await ready_handle(root, fs, "fail", acks)
        acks.acked.clear()
        fs.gates = {1: trio.Event(), 2: trio.Event()}
        fs.fail = {2}
        done: list[int] = []
        errors: dict[int, BaseException] = {}
        async with trio.open_nursery() as nursery, fs.opened_on_exit():
            nursery.start_soon(_appending, handle, second_turn(8), fs, done, errors)
            await trio.testing.wait_all_tasks_blocked()
            for start in (10, 12):
                nursery.start_soon(_appending, handle, second_turn(start), fs, done, errors)
                await trio.testing.wait_all_tasks_blocked()
            fs.gates[1].set()
            await fs.settled_after(2)  # the group [10, 12] is being written
            nursery.start_soon(_appending, handle, second_turn(14), fs, done, errors)  # queued behind it
            await trio.testing.wait_all_tasks_blocked()
            fs.gates[2].set()
        assert done == [8]
        assert sorted(errors) == [10, 12, 14]
        for err in errors.values():
            assert isinstance(err, OSError) and err.errno == errno.ENOSPC
        assert acks.acked == [[8, 9]]  # no waiter of the failed group was told durable
        assert len(fs.written) == 2  # 14 was never written
        assert handle.next_seq == 10
        await handle.append(second_turn(10))  # the handle goes on from what is stored
        await handle.close()
        assert seqs(await read_all(backend(root), "fail")) == list(range(12))

    run(main)


async def _cancellable(
    handle: WriteHandle, batch: list[Event], fs: HopFS, scopes: list[trio.CancelScope], ended: list[tuple[int, bool, bool]]
) -> None:
    """Append ``batch`` in a cancel scope of its own (kept in ``scopes``); on return, record its
    first seq, whether it was cancelled, and whether its bytes were durable by then."""
    with trio.CancelScope() as scope:
        scopes.append(scope)
        await handle.append(batch)
    ended.append((batch[0].seq, scope.cancelled_caught, encode_batch(batch, "zstd") in b"".join(fs.synced)))


def test_a_cancelled_waiting_append_stores_nothing_and_what_continued_it_fails(root: str) -> None:
    async def main() -> None:
        fs = HopFS()
        handle = await ready_handle(root, fs, "cancel")
        fs.gates = {1: trio.Event()}
        done: list[int] = []
        errors: dict[int, BaseException] = {}
        scopes: list[trio.CancelScope] = []
        ended: list[tuple[int, bool, bool]] = []
        async with trio.open_nursery() as nursery, fs.opened_on_exit():
            nursery.start_soon(_appending, handle, second_turn(8), fs, done, errors)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(_cancellable, handle, second_turn(10), fs, scopes, ended)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(_appending, handle, second_turn(12), fs, done, errors)  # continues 10
            await trio.testing.wait_all_tasks_blocked()
            scopes[0].cancel()  # 10 only waits: no group has it
            await trio.testing.wait_all_tasks_blocked()
            assert ended == [(10, True, False)]
            fs.gates[1].set()
        assert done == [8]
        assert list(errors) == [12] and "expected 10 at index 0, got 12" in str(errors[12])
        assert len(fs.written) == 1  # neither 10 nor 12 was written
        assert handle.next_seq == 10
        await handle.append(second_turn(10))
        await handle.close()
        assert seqs(await read_all(backend(root), "cancel")) == list(range(12))

    run(main)


def test_an_append_cancelled_while_its_group_is_written_waits_for_the_fsync(root: str) -> None:
    """A write that started is waited for: a caller cancelled while a group writes its batch
    returns (cancelled) only once that fsync returned, and its batch is stored."""

    async def main() -> None:
        fs = HopFS()
        handle = await ready_handle(root, fs, "written")
        fs.gates = {1: trio.Event(), 2: trio.Event()}
        done: list[int] = []
        errors: dict[int, BaseException] = {}
        scopes: list[trio.CancelScope] = []
        ended: list[tuple[int, bool, bool]] = []
        async with trio.open_nursery() as nursery, fs.opened_on_exit():
            nursery.start_soon(_appending, handle, second_turn(8), fs, done, errors)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(_appending, handle, second_turn(10), fs, done, errors)  # will lead the group
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(_cancellable, handle, second_turn(12), fs, scopes, ended)
            await trio.testing.wait_all_tasks_blocked()
            fs.gates[1].set()
            await fs.settled_after(2)
            assert fs.written[1] == encode_batch(second_turn(10), "zstd") + encode_batch(second_turn(12), "zstd")  # the group
            scopes[0].cancel()
            await trio.testing.wait_all_tasks_blocked()
            assert ended == []  # a write that started is waited for
            fs.gates[2].set()
        assert ended == [(12, True, True)]  # cancelled, but back only once its bytes were durable
        assert done == [8, 10] and errors == {}
        assert handle.next_seq == 14
        await handle.close()
        assert seqs(await read_all(backend(root), "written")) == list(range(14))

    run(main)


def test_a_leader_cancelled_before_its_write_leaves_its_group_unwritten(root: str) -> None:
    """The append leading a group is cancelled before the write starts: nothing of the group is
    written, and the batches that continued its batch fail in turn, none acknowledged."""

    async def main() -> None:
        fs, acks = HopFS(), Acks()
        handle = await ready_handle(root, fs, "leader", acks)
        acks.acked.clear()
        fs.gates = {1: trio.Event()}
        fs.before = {2: trio.Event()}
        done: list[int] = []
        errors: dict[int, BaseException] = {}
        scopes: list[trio.CancelScope] = []
        ended: list[tuple[int, bool, bool]] = []
        async with trio.open_nursery() as nursery, fs.opened_on_exit():
            nursery.start_soon(_appending, handle, second_turn(8), fs, done, errors)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(_cancellable, handle, second_turn(10), fs, scopes, ended)  # will lead the group
            await trio.testing.wait_all_tasks_blocked()
            for start in (12, 14):
                nursery.start_soon(_appending, handle, second_turn(start), fs, done, errors)
                await trio.testing.wait_all_tasks_blocked()
            fs.gates[1].set()
            await fs.entered(2)  # the group's write is about to start
            scopes[0].cancel()
        assert ended == [(10, True, False)]
        assert done == [8] and sorted(errors) == [12, 14]
        assert all("expected 10" in str(err) for err in errors.values())
        assert acks.acked == [[8, 9]] and len(fs.written) == 1
        assert handle.next_seq == 10
        await handle.append(second_turn(10))
        await handle.close()
        assert seqs(await read_all(backend(root), "leader")) == list(range(12))

    run(main)


def test_the_lease_still_holds_while_batches_skip_every_per_batch_check(root: str) -> None:
    """No batch re-checks the lock, yet the handle's lease keeps every other writer out — in
    this backend and in another one (another process's view, refused by ``flock``) — and a
    closed handle refuses a batch, even one that was already waiting for the chain."""

    async def main() -> None:
        fs = HopFS()
        handle = await ready_handle(root, fs, "lease")
        for start in (8, 10):
            await handle.append(second_turn(start))
        assert fs.hops == ["_write_fsync", "_write_fsync"]
        with pytest.raises(SessionAlreadyOwnedError):
            await handle._backend.open("lease", "write")  # type: ignore[attr-defined]
        other = backend(root)
        with pytest.raises(SessionAlreadyOwnedError):
            await other.open("lease", "write")
        errors: dict[int, BaseException] = {}
        async with trio.open_nursery() as nursery, handle._chain:  # the chain is busy: the close waits, then the batch
            nursery.start_soon(handle.close)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(_appending, handle, second_turn(12), fs, [], errors)  # the handle is still open here
            await trio.testing.wait_all_tasks_blocked()
        assert isinstance(errors.get(12), SessionHandleClosedError)
        with pytest.raises(SessionHandleClosedError):
            await handle.append(second_turn(12))
        writer = await other.open("lease", "write")  # released by close: the other takes it
        assert writer.next_seq == 12
        await writer.append(second_turn(12))
        await writer.close()
        assert seqs(await read_all(other, "lease")) == list(range(14))

    run(main)


def test_a_batch_is_encoded_before_it_waits_so_a_later_change_reaches_nothing(root: str) -> None:
    """No deep copy of a caller's events: the bytes, made before the chain, are the copy."""

    async def main() -> None:
        handle = await backend(root, "none").create(meta("enc"))
        await handle.append(one_turn_log())
        data: dict[str, Any] = {"turn": 2}
        batch = [Event("turn/start", 6, 9, data)]
        async with trio.open_nursery() as nursery, handle._chain:  # the chain is busy: the append waits
            nursery.start_soon(handle.append, batch)
            await trio.testing.wait_all_tasks_blocked()
            data["turn"] = 99
            data["extra"] = float("nan")  # not even storable any more
        assert (await read_all(backend(root, "none"), "enc"))[6].data == {"turn": 2}
        await handle.close()

    run(main)


def test_the_adapters_hop_keeps_to_threads_guarantees() -> None:
    """run_in_thread: results and errors come back; a caller cancelled before the call never
    starts it; a call that started is waited for; with no limiter token free it waits for one."""
    import threading

    from runtime.adapters.os_fs import run_in_thread

    async def main() -> None:
        assert await run_in_thread(lambda a, b: a + b, 2, 3) == 5
        assert await run_in_thread(threading.get_ident) != threading.get_ident()
        with pytest.raises(OSError) as err:
            await run_in_thread(os.fstat, -1)
        assert err.value.errno == errno.EBADF

        ran: list[str] = []
        with trio.CancelScope() as scope:
            scope.cancel()
            await run_in_thread(ran.append, "never")
        assert scope.cancelled_caught and ran == []

        release = threading.Event()

        def slow() -> str:
            release.wait(5)
            ran.append("finished")
            return "done"

        got: list[str] = []
        with trio.CancelScope() as scope:

            async def cancel_soon() -> None:
                await trio.testing.wait_all_tasks_blocked()
                scope.cancel()
                release.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(cancel_soon)
                got.append(await run_in_thread(slow))  # not abandoned: it returns what the call returned
        assert ran == ["finished"] and got == ["done"]

        limiter = trio.to_thread.current_default_thread_limiter()
        limiter.total_tokens = 1
        try:
            async with trio.open_nursery() as nursery, limiter:  # the only token is taken: the hop waits for it
                nursery.start_soon(run_in_thread, ran.append, "after the token")
                await trio.testing.wait_all_tasks_blocked()
                assert ran == ["finished"]
            assert ran == ["finished", "after the token"]
        finally:
            limiter.total_tokens = 40

    trio.run(main)
