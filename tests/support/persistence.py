"""Shared fixtures for the persistence tests: reference logs, backends and a fault-injecting FS.

The logs follow the reference runtime's contract fixtures (spec §8 ``meta``/``oneTurnLog``),
in their v3 shape (assistant messages embed their stream, surface events carry surfaceOp).
"""

from __future__ import annotations

import errno
import functools
import json
import os
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

import trio

from runtime.adapters.os_fs import OsFileSystem
from runtime.adapters.system import SystemClock, SystemIds
from runtime.persistence.backend import JsonlBackend
from runtime.persistence.header import SessionHeader
from runtime.persistence.layout import SessionPaths
from runtime.persistence.zstd_frames import compress_frame, scan_frames
from runtime.ports import Ports
from runtime.ports.fs import OpenFlags, StatResult, write_fsync_in_steps
from runtime.session.events import Event

T = TypeVar("T")
COMPRESSIONS = ("zstd", "none")


def run(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """Run one async test body under trio (no pytest plugin needed)."""
    return trio.run(functools.partial(fn, *args))


def meta(session_id: str, cwd: str | None = None) -> SessionHeader:
    return SessionHeader(id=session_id, created_at=1000, cwd=cwd)


def one_turn_log() -> list[Event]:
    """Seqs 0..5: one complete turn (spec §8 ``oneTurnLog``, v3 shape)."""
    user = {"id": "one-turn-user", "role": "user", "content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}
    assistant = {
        "id": "one-turn-assistant",
        "role": "assistant",
        "content": [{"type": "text", "text": "hello"}],
        "source": {"kind": "model", "provider": "mock", "model": "mock"},
    }
    stream = [
        {"type": "chunk", "time": 3, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}},
        {"type": "text-chunks", "time0": 3, "index": 0, "dt": [], "texts": ["hello"]},
        {"type": "chunk", "time": 4, "chunk": {"type": "finish", "reason": {"kind": "stop"}}},
    ]
    return [
        Event("turn/start", 0, 1, {"turn": 1}),
        Event("user/message", 1, 2, user, surface_op="append"),
        Event("step/start", 2, 3, {"turn": 1, "step": 1}),
        Event("assistant/message", 3, 4, {"turn": 1, "step": 1, "message": assistant, "stream": stream}, surface_op="append"),
        Event("step/end", 4, 5, {"turn": 1, "step": 1}),
        Event("turn/end", 5, 6, {"turn": 1, "reason": {"kind": "completed"}}),
    ]


def second_turn(start: int = 6) -> list[Event]:
    return [
        Event("turn/start", start, 9, {"turn": 2}),
        Event("turn/end", start + 1, 10, {"turn": 2, "reason": {"kind": "completed"}}),
    ]


def open_turn(start: int = 6) -> list[Event]:
    """An interrupted second turn: turn/start and step/start only."""
    return [Event("turn/start", start, 7, {"turn": 2}), Event("step/start", start + 1, 8, {"turn": 2, "step": 1})]


def seqs(events: Iterable[Event]) -> list[int]:
    return [event.seq for event in events]


def line(event: Event) -> bytes:
    return (json.dumps(event.to_record(), separators=(",", ":")) + "\n").encode()


def lines(events: Iterable[Event]) -> bytes:
    return b"".join(line(event) for event in events)


def ports(fs: Any = None) -> Ports:
    return Ports(fs=fs or OsFileSystem(), clock=SystemClock(), ids=SystemIds())


def backend(root: Any, compression: str = "zstd", fs: Any = None) -> JsonlBackend:
    return JsonlBackend(str(root), ports(fs), compression=compression)


def log_path(root: Any, session_id: str, compression: str, cwd: str | None = None) -> str:
    return SessionPaths.of(str(root), cwd, session_id, compression).log


def lock_path(root: Any, session_id: str, cwd: str | None = None) -> str:
    return SessionPaths.of(str(root), cwd, session_id, "zstd").lock


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def append_bytes(path: str, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def frame_count(data: bytes) -> int:
    return len(scan_frames(data).frames)


def torn_frame(plaintext: bytes, keep: int) -> bytes:
    """The first ``keep`` bytes of one checksummed frame of ``plaintext``."""
    return compress_frame(plaintext)[:keep]


def big_chunk_line(seq: int, size: int = 300_000) -> bytes:
    """A ~300 KB incompressible-ish record line (the reference's torn-frame filler)."""
    import random

    rng = random.Random(seq)
    text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(size))
    return line(Event("assistant/attempt", seq, 9, {"turn": 2, "step": 1, "stream": [{"type": "chunk", "time": 9, "text": text}]}))


def with_header(data: bytes, compression: str, header: dict[str, Any]) -> bytes:
    """``data`` with its header record replaced by ``header`` (events untouched)."""
    encoded = (json.dumps(header, separators=(",", ":")) + "\n").encode()
    if compression == "none":
        return encoded + data[data.index(b"\n") + 1 :]
    _, end = scan_frames(data).frames[0]
    return compress_frame(encoded) + data[end:]


def header_record(data: bytes, compression: str) -> dict[str, Any]:
    if compression == "none":
        return json.loads(data[: data.index(b"\n")])
    from runtime.persistence.zstd_frames import decode_frame

    start, end = scan_frames(data).frames[0]
    return json.loads(decode_frame(data[start:end], start))


class FaultFS:
    """Delegates to the production adapter; injects failures and side effects on demand.

    ``fail_fsync`` lists 1-based fsync call numbers that raise ENOSPC; ``fail_truncate``
    makes rollback truncation fail; ``hooks`` maps an operation name to a callable run
    (with the same arguments) before the real operation — it may raise to inject a fault.
    """

    def __init__(self) -> None:
        self.inner = OsFileSystem()
        self.fsyncs = 0
        self.fail_fsync: set[int] = set()
        self.fail_ftruncate = 0
        self.hooks: dict[str, Callable[..., None]] = {}
        self.calls: list[tuple[str, Any]] = []

    def _hook(self, op: str, *args: Any) -> None:
        self.calls.append((op, args[0] if args else None))
        hook = self.hooks.get(op)
        if hook is not None:
            hook(*args)

    async def open(self, path: str, flags: OpenFlags, mode: int = 0o600) -> int:
        self._hook("open", path, flags)
        return await self.inner.open(path, flags, mode)

    async def read(self, fd: int, size: int) -> bytes:
        return await self.inner.read(fd, size)

    async def write(self, fd: int, data: bytes) -> int:
        self._hook("write", fd, data)
        return await self.inner.write(fd, data)

    async def fsync(self, fd: int) -> None:
        self.fsyncs += 1
        self._hook("fsync", fd)
        if self.fsyncs in self.fail_fsync:
            raise OSError(errno.ENOSPC, "simulated fsync ENOSPC")
        await self.inner.fsync(fd)

    async def write_fsync(self, fd: int, data: bytes, rollback_size: int | None = None) -> None:
        await write_fsync_in_steps(self, fd, data, rollback_size)  # every step hooked as before

    async def fsync_dir(self, path: str) -> None:
        self._hook("fsync_dir", path)
        await self.inner.fsync_dir(path)

    async def link(self, src: str, dst: str) -> None:
        self._hook("link", src, dst)
        await self.inner.link(src, dst)

    async def unlink(self, path: str) -> None:
        self._hook("unlink", path)
        await self.inner.unlink(path)

    async def truncate(self, path: str, size: int) -> None:
        await self.inner.truncate(path, size)

    async def ftruncate(self, fd: int, size: int) -> None:
        self._hook("ftruncate", fd, size)
        if self.fail_ftruncate:
            self.fail_ftruncate -= 1
            raise OSError(errno.EIO, "simulated rollback EIO")
        await self.inner.ftruncate(fd, size)

    async def stat(self, path: str) -> StatResult:
        self._hook("stat", path)
        return await self.inner.stat(path)

    async def lstat(self, path: str) -> StatResult:
        self._hook("lstat", path)
        return await self.inner.lstat(path)

    async def fstat(self, fd: int) -> StatResult:
        return await self.inner.fstat(fd)

    async def listdir(self, path: str) -> list[str]:
        return await self.inner.listdir(path)

    async def mkdir(self, path: str, mode: int = 0o700) -> None:
        self._hook("mkdir", path)
        await self.inner.mkdir(path, mode)

    async def flock(self, fd: int) -> None:
        self._hook("flock", fd)
        await self.inner.flock(fd)

    async def close(self, fd: int) -> None:
        await self.inner.close(fd)
        self._hook("close", fd)  # after the real close: a close(2) that freed the fd, then failed


def churn(path: str) -> None:
    """Unlink and recreate ``path``: the inode a lock holder has is no longer the file there."""
    os.unlink(path)
    with open(path, "w"):
        pass
