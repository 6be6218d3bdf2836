"""Session handles: a read handle sees the valid prefix; a write handle owns appends.

A write handle is exclusive (one per id in a process, ``flock`` across processes).  Every
mutation runs on the handle's chain, in order.  Before its first batch a handle opened over
a torn tail durably truncates the torn bytes and re-appends the records recovered from them
as their own batch; committed bytes are never rewritten.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

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
from runtime.session.events import EnvelopeError, Event, checked_copy
from runtime.session.lossless import is_safe_integer


class HandleOwner(Protocol):
    """What a handle needs of the backend that opened it (:class:`~runtime.persistence.backend.JsonlBackend`)."""

    fs: FileSystem
    probe: Probe
    compression: str

    async def _read_events(self, session_id: str, paths: SessionPaths | None) -> Sequence[Event]: ...

    async def _materialize(self, handle: WriteHandle, batch: Sequence[Event]) -> None: ...

    def _release(self, handle: WriteHandle) -> None: ...


def _check_range(offset: int, length: int | None) -> None:
    if not is_safe_integer(offset) or offset < 0:
        raise ValueError(f"read offset must be a non-negative safe integer, got {offset!r}")
    if length is not None and (not is_safe_integer(length) or length < 0):
        raise ValueError(f"read length must be a non-negative safe integer, got {length!r}")


def _admit(event: Event) -> Event:
    """A private, validated copy of an event to store.

    Non-lossless data is a ``TypeError`` (``losslessly JSON-serializable``); any other
    envelope defect is a ``ValueError``.  Storing only what :meth:`Event.from_record` reads
    back means an append can never make its own log unreadable, and the copy means the
    caller cannot change a batch while it waits for the chain.
    """
    if not isinstance(event, Event):
        raise TypeError(f"append expects Event objects, got {type(event).__name__}")
    try:
        return checked_copy(event)
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
        self._closed = False
        self._observed = 0

    @property
    def next_seq(self) -> int:
        """The seq the next appended event must carry (stored + recovered events)."""
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
        """Durably append one batch (one zstd frame); returns only after fsync."""
        self._check_open("append")
        batch = [_admit(event) for event in events]
        if not batch:
            return
        for index, event in enumerate(batch):
            if event.seq != self._next_seq + index:
                raise SessionSeqMismatchError(self.session_id, self._next_seq + index, index, event.seq)
        async with self._chain:
            self._check_open("append")
            if batch[0].seq != self._next_seq:
                raise SessionSeqMismatchError(self.session_id, self._next_seq, 0, batch[0].seq)
            if not self.materialized:
                await self._backend._materialize(self, batch)
            else:
                await self._settle_tail()
                await self._append_bytes(encode_batch(batch, self._backend.compression))
            self._next_seq += len(batch)
            await self._acknowledged(batch)

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
                await self._backend._materialize(self, [])
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
