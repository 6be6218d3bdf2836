"""Session handles: a read handle sees the valid prefix; a write handle owns appends.

A write handle is exclusive (one per id in a process, ``flock`` across processes).  Every
mutation runs on the handle's chain, in order.  Before its first batch a handle opened over
a torn tail durably truncates the torn bytes and re-appends the records recovered from them
as their own batch; committed bytes are never rewritten.

Appends that wait for the chain together are committed together (group commit): the append
that takes the chain writes its batch and every batch waiting behind it, in order, with one
write + fsync (one thread hop in production); each of them returns only after that fsync, or,
when it fails, every one fails and none is acknowledged.  A batch alone is written exactly as
before: the same bytes, the same port operations, the same named points.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import trio

from runtime.persistence import context
from runtime.persistence.durable import (
    append_durable,
    close_after_error,
    close_shielded,
    open_for_append,
    truncate_durable,
)
from runtime.persistence.errors import (
    SessionHandleClosedError,
    SessionPersistenceCorruptionError,
    SessionReadOnlyError,
    SessionSeqMismatchError,
)
from runtime.persistence.header import SessionHeader
from runtime.persistence.layout import SessionPaths
from runtime.persistence.lease import release_lock
from runtime.persistence.log_format import TornTail, encode_batch
from runtime.ports.fs import FileSystem
from runtime.ports.probe import Probe
from runtime.session.events import EnvelopeError, Event, checked_as_is
from runtime.session.lossless import is_safe_integer


class HandleOwner(Protocol):
    """What a handle needs of the backend that opened it (:class:`~runtime.persistence.backend.JsonlBackend`)."""

    fs: FileSystem
    probe: Probe
    compression: str

    async def _read_events(self, session_id: str, paths: SessionPaths | None) -> Sequence[Event]: ...

    async def _materialize(self, handle: WriteHandle, batch: bytes) -> None: ...

    def _release(self, handle: WriteHandle) -> None: ...


def _check_range(offset: int, length: int | None) -> None:
    if not is_safe_integer(offset) or offset < 0:
        raise ValueError(f"read offset must be a non-negative safe integer, got {offset!r}")
    if length is not None and (not is_safe_integer(length) or length < 0):
        raise ValueError(f"read length must be a non-negative safe integer, got {length!r}")


def _admit(event: Event) -> Event:
    """A validated event to store, encoded by the caller before anything else runs.

    Non-lossless data is a ``TypeError`` (``losslessly JSON-serializable``); any other
    envelope defect is a ``ValueError``.  Storing only what :meth:`Event.from_record` reads
    back means an append can never make its own log unreadable.  No deep copy: the append
    encodes the batch right after admitting it, before it waits for the chain, and those
    bytes are the private copy — the caller cannot change a batch while it waits.
    """
    if not isinstance(event, Event):
        raise TypeError(f"append expects Event objects, got {type(event).__name__}")
    try:
        return checked_as_is(event)
    except EnvelopeError as err:
        raise ValueError(f"cannot append an invalid event: {err}") from None


def _never_backwards(session_id: str, events: Sequence[Event], observed: int) -> int:
    """A handle never serves a shorter log than it served before (spec §10.2)."""
    if len(events) < observed:
        raise SessionPersistenceCorruptionError(session_id, "stored log shrank below a previously observed prefix")
    return len(events)


async def _read_window(handle: ReadHandle | WriteHandle, offset: int, length: int | None) -> list[Event]:
    """The stored events ``[offset, offset+length)`` as either handle serves them (never backwards)."""
    events = await handle._backend._read_events(handle.session_id, handle.paths)
    handle._observed = _never_backwards(handle.session_id, events, handle._observed)
    end = len(events) if length is None else offset + length
    return list(events[offset:end])


class ReadHandle:
    access = "read"

    def __init__(self, backend: HandleOwner, session_id: str, paths: SessionPaths | None, header: SessionHeader | None = None) -> None:
        self._backend = backend
        self.session_id = session_id
        self.paths = paths
        self.header = header
        self._observed = 0
        self._closed = False

    async def read(self, offset: int = 0, length: int | None = None) -> list[Event]:
        """The stored events ``[offset, offset+length)`` of the valid prefix (never a torn tail)."""
        _check_range(offset, length)
        if self._closed:
            raise SessionHandleClosedError("read")
        return await _read_window(self, offset, length)

    async def append(self, events: Sequence[Event]) -> None:
        raise SessionReadOnlyError("append", self.session_id)

    async def flush(self) -> None:
        raise SessionReadOnlyError("flush", self.session_id)

    async def close(self) -> None:
        self._closed = True

    async def __aenter__(self) -> ReadHandle:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class _Waiting:
    """One appended batch from its admission to its outcome.

    ``taken``: a group commit holds it (its bytes are being written, or it was failed with
    the group it continues); ``outcome``: ``None`` while unsettled, ``True`` once durable,
    else the error it fails with; ``wake``: set when a caller cancelled while its batch was
    being written waits for the outcome."""

    __slots__ = ("batch", "data", "end", "outcome", "taken", "wake")

    def __init__(self, batch: list[Event], data: bytes) -> None:
        self.batch = batch
        self.data = data
        self.end = batch[-1].seq + 1
        self.taken = False
        self.outcome: Literal[True] | BaseException | None = None
        self.wake: trio.Event | None = None

    @property
    def first(self) -> int:
        return self.batch[0].seq

    def settle(self, outcome: Literal[True] | BaseException | None, *, taken: bool = True) -> None:
        self.taken, self.outcome = taken, outcome
        if self.wake is not None:
            self.wake.set()


class WriteHandle:
    access = "write"

    def __init__(
        self,
        backend: HandleOwner,
        header: SessionHeader,
        paths: SessionPaths,
        *,
        materialized: bool,
        next_seq: int,
        committed_bytes: int,
        torn: TornTail | None,
        lock_fd: int | None,
        opened: Sequence[Event] = (),
    ) -> None:
        self._backend = backend
        self._fs = backend.fs
        self.header = header
        self.session_id = header.id
        self.paths = paths
        self.materialized = materialized
        self._next_seq = next_seq
        self._committed_bytes = committed_bytes
        self._torn = torn
        self._lock_fd = lock_fd
        self._append_fd: int | None = None  # kept open across batches (see _append_bytes)
        self._chain = trio.Lock()
        self._waiting: list[_Waiting] = []  # appended batches no group commit has taken yet, in order
        self._committing: Sequence[_Waiting] = ()  # the group being written
        self._closed = False
        self._observed = 0
        self._opened: Sequence[Event] | None = opened

    def read_opened(self) -> list[Event]:
        """The stored events as this handle decoded them when it opened (the valid prefix,
        recovered torn records included): what :meth:`read` returns before anything is
        appended, without reading the log again — the open read it once, to make those very
        bytes durable.  Only before the first append, once (a resume's repair reads it)."""
        self._check_open("read")
        opened = self._opened
        if opened is None:
            raise RuntimeError("read_opened: only once, before the first append")
        self._opened = None
        self._observed = _never_backwards(self.session_id, opened, self._observed)
        return list(opened)

    @property
    def next_seq(self) -> int:
        """The seq after the stored (and recovered) events: what the next append carries when
        none is waiting (one appended while others wait continues the last of them)."""
        return self._next_seq

    def _tail_seq(self) -> int:
        """Where the next appended batch must start: after every batch waiting or being
        written (each continues the one before it), else after the stored log."""
        if self._waiting:
            return self._waiting[-1].end
        if self._committing:
            return self._committing[-1].end
        return self._next_seq

    @property
    def torn_tail(self) -> TornTail | None:
        """A torn tail still waiting to be truncated by the first mutation."""
        return self._torn

    def _check_open(self, op: str) -> None:
        if self._closed:
            raise SessionHandleClosedError(op)

    async def read(self, offset: int = 0, length: int | None = None) -> list[Event]:
        _check_range(offset, length)
        self._check_open("read")
        if not self.materialized:
            return []
        return await _read_window(self, offset, length)

    async def append(self, events: Sequence[Event]) -> None:
        """Durably append one batch (one zstd frame); returns only after its fsync.

        A batch appended while others wait for the chain continues the last of them and is
        committed with them (group commit, see the module's docstring)."""
        self._check_open("append")
        batch = [_admit(event) for event in events]
        if not batch:
            return
        self._opened = None  # (what it decoded at open is no longer the stored log)
        next_seq = self._tail_seq()
        for index, event in enumerate(batch):
            if event.seq != next_seq + index:
                raise SessionSeqMismatchError(self.session_id, next_seq + index, index, event.seq)
        # Encoded once, here, before the batch waits for the chain (no checkpoint since it was
        # admitted): these bytes are the batch's private copy.  Then one write + fsync on the
        # kept descriptor; the lock and the descriptor were proven once (open, first batch),
        # so nothing is re-checked per batch.
        waiting = _Waiting(batch, encode_batch(batch, self._backend.compression))
        self._waiting.append(waiting)  # in the chain's order: no checkpoint before it queues there
        try:
            async with self._chain:
                if not waiting.taken:  # no group took it: it leads one
                    await self._commit_group(waiting)
        except BaseException:
            if waiting.taken and waiting.outcome is None:
                # cancelled while a group writes its batch: a write that started is waited for
                waiting.wake = trio.Event()
                with trio.CancelScope(shield=True):
                    await waiting.wake.wait()
            if not waiting.taken and waiting in self._waiting:  # never written: nothing of it reaches the log
                self._waiting.remove(waiting)
            raise
        if waiting.outcome is not True:
            assert waiting.outcome is not None
            raise waiting.outcome

    async def _commit_group(self, leader: _Waiting) -> None:
        """On the chain: write ``leader``'s batch and every waiting batch that continues it in
        one durable append (or the first publication), settle each, acknowledge each in order."""
        self._check_open("append")
        if leader.first != self._next_seq:
            raise SessionSeqMismatchError(self.session_id, self._next_seq, 0, leader.first)
        # The chain is FIFO and every append queues here before it waits there, so the leader
        # is first in line — but for a cancelled append that has not yet left the line.
        waiting = self._waiting
        start = waiting.index(leader)
        end = start + 1
        while end < len(waiting) and waiting[end].first == waiting[end - 1].end:
            end += 1
        group = waiting[start:end]
        del waiting[start:end]
        for member in group:
            member.taken = True
        self._committing = group
        data = leader.data if len(group) == 1 else b"".join([member.data for member in group])
        try:
            if not self.materialized:
                await self._backend._materialize(self, data)
            else:
                await self._settle_tail()
                await self._append_bytes(data)
        except Exception as err:
            # Not durable: every batch of the group fails, and every batch waiting behind it
            # too (each continues one that is not in the log).  None is acknowledged.
            doomed = [*group, *waiting[start:]]
            del waiting[start:]
            for member in doomed:
                member.settle(err)
            raise
        except BaseException:
            # Cancelled before the group was written: the leader leaves the line, its batch not
            # in the log, and every batch behind it (each continues it) fails as unwritable.
            leader.settle(None, taken=False)
            doomed = [*group[1:], *waiting[start:]]
            del waiting[start:]
            for member in doomed:
                member.settle(SessionSeqMismatchError(self.session_id, self._next_seq, 0, member.first))
            raise
        finally:
            self._committing = ()
        self._next_seq = group[-1].end
        for member in group:
            member.settle(True)
        for member in group:
            await self._acknowledged(member.batch)

    async def _acknowledged(self, batch: Sequence[Event]) -> None:
        """Announce that ``batch`` is durable: the runtime's acknowledgement, observable."""
        await self._backend.probe.at(
            "persist.batch.durable",
            session_id=self.session_id,
            first_seq=batch[0].seq if batch else self._next_seq,
            count=len(batch),
            _events=tuple(batch),
        )

    async def flush(self) -> None:
        """Durability barrier of the handle: publishes an empty created session (header only)."""
        self._check_open("flush")
        async with self._chain:
            self._check_open("flush")
            if not self.materialized:
                await self._backend._materialize(self, b"")
                await self._acknowledged([])

    async def _settle_tail(self) -> None:
        """Truncate a torn tail durably and re-append its recovered records (spec §10.5)."""
        torn = self._torn
        if torn is None:
            return
        with context.durability_op(context.TORN_TAIL_REWRITE):
            await truncate_durable(self._fs, self.paths.log, torn.truncate_to)
            self._committed_bytes = torn.truncate_to
            if torn.recovered:
                await self._append_bytes(encode_batch(torn.recovered, self._backend.compression))
        self._torn = None
        if torn.recovered:
            await self._acknowledged(torn.recovered)

    async def _append_bytes(self, data: bytes) -> None:
        """One durable batch through the handle's append descriptor, opened by the first
        batch and kept; a failed batch closes it (the next one opens afresh and re-checks
        the file's length)."""
        if self._append_fd is None:
            self._append_fd = await open_for_append(self._fs, self.paths.log, self._committed_bytes)
        try:
            self._committed_bytes = await append_durable(self._fs, self._append_fd, self.paths.log, data, self._committed_bytes)
        except BaseException:
            await self._drop_append_fd()
            raise

    async def _drop_append_fd(self) -> None:
        fd, self._append_fd = self._append_fd, None
        if fd is not None:
            await close_after_error(self._fs, fd)

    def _materialized(self, size: int) -> None:
        self.materialized = True
        self._committed_bytes = size

    def _set_lock(self, fd: int) -> None:
        self._lock_fd = fd

    @property
    def lock_fd(self) -> int | None:
        return self._lock_fd

    async def close(self) -> None:
        """Release ownership (idempotent).

        Shielded: a close is what a cancelled caller runs while it unwinds (``resume_agent``
        after a cancelled repair), and a cancellation at its first checkpoint — waiting for the
        chain — would keep the session claimed and its lock descriptor open for good.
        """
        if self._closed:
            return
        with trio.CancelScope(shield=True):
            async with self._chain:
                if self._closed:
                    return
                self._closed = True
                self._backend._release(self)  # ownership is freed even if the release below fails
                try:
                    if self._append_fd is not None:
                        fd, self._append_fd = self._append_fd, None
                        await close_shielded(self._fs, fd)
                finally:
                    if self._lock_fd is not None:
                        fd, self._lock_fd = self._lock_fd, None
                        await release_lock(self._fs, fd)

    async def __aenter__(self) -> WriteHandle:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
