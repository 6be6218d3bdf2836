"""The filesystem port over ``os``; every blocking call runs off the event loop.

Only functions that pyfakefs also fakes are used (no ``pread``/``pwrite``), so the adapter
can be tested hermetically as well as against real temporary directories.

Each call is one hop to a worker thread (:func:`run_in_thread`): ``trio.to_thread.run_sync``'s
guarantees — a cancelled caller is refused before the call starts and waits for a call that
started, trio's default thread limiter bounds the threads, the same thread cache — without
its per-call extras this adapter never uses (a second scheduler pass to take the limiter's
token, a copied ``contextvars`` context, a thread name, a channel for ``trio.from_thread``).
A durable append is one such hop per batch, so this is most of what an append costs above
its ``write`` + ``fsync``.
"""

from __future__ import annotations

import fcntl
import functools
import os
import stat as stat_module
from collections.abc import Callable
from typing import Any, TypeVar, cast

import outcome
import trio

from runtime.ports.fs import FileKind, OpenFlags, RollbackError, StatResult

T = TypeVar("T")


def os_open_flags(flags: OpenFlags) -> int:
    """Map portable flags to ``os.O_*`` (close-on-exec always)."""
    if OpenFlags.READ in flags and OpenFlags.WRITE in flags:
        bits = os.O_RDWR
    elif OpenFlags.WRITE in flags:
        bits = os.O_WRONLY
    else:
        bits = os.O_RDONLY
    if OpenFlags.CREATE in flags:
        bits |= os.O_CREAT
    if OpenFlags.EXCLUSIVE in flags:
        bits |= os.O_EXCL
    if OpenFlags.APPEND in flags:
        bits |= os.O_APPEND
    if OpenFlags.TRUNCATE in flags:
        bits |= os.O_TRUNC
    if OpenFlags.NOFOLLOW in flags:
        bits |= os.O_NOFOLLOW
    return bits | getattr(os, "O_CLOEXEC", 0)


def _kind(mode: int) -> FileKind:
    if stat_module.S_ISREG(mode):
        return "file"
    if stat_module.S_ISDIR(mode):
        return "dir"
    if stat_module.S_ISLNK(mode):
        return "symlink"
    return "other"


def _stat_result(st: os.stat_result) -> StatResult:
    return StatResult(
        dev=st.st_dev,
        ino=st.st_ino,
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        ctime_ns=st.st_ctime_ns,
        is_dir=stat_module.S_ISDIR(st.st_mode),
        kind=_kind(st.st_mode),
        nlink=st.st_nlink,
    )


def _write_all(fd: int, data: bytes) -> int:
    view = memoryview(data)
    total = os.write(fd, view)  # always one call, so an empty write still checks the descriptor
    while total < len(data):
        total += os.write(fd, view[total:])
    return total


def _write_fsync(fd: int, data: bytes, rollback_size: int | None) -> None:
    """:meth:`FileSystem.write_fsync` in one go (one worker-thread hop instead of up to four)."""
    try:
        _write_all(fd, data)
        os.fsync(fd)
    except OSError as original:
        if rollback_size is None:
            raise
        try:
            os.ftruncate(fd, rollback_size)
            os.fsync(fd)
        except OSError as rollback:
            raise RollbackError(original, rollback) from None
        raise


def _never_abort(_: Any) -> trio.lowlevel.Abort:
    return trio.lowlevel.Abort.FAILED  # a call that started is waited for, as to_thread's default


@trio.lowlevel.enable_ki_protection  # no KeyboardInterrupt between starting the call and waiting for it
async def run_in_thread(fn: Callable[..., T], *args: Any) -> T:
    """``await trio.to_thread.run_sync(fn, *args)``, with one scheduler pass instead of two.

    The caller's cancellation is checked before the call starts (then the call runs to its
    end, uncancellable); the thread comes from trio's cache and holds a token of trio's
    default thread limiter while it runs.  When the limiter has no token free, this is
    ``trio.to_thread.run_sync`` itself, which waits for one.
    """
    await trio.lowlevel.checkpoint_if_cancelled()
    limiter = trio.to_thread.current_default_thread_limiter()
    borrower = object()
    try:
        limiter.acquire_on_behalf_of_nowait(borrower)
    except trio.WouldBlock:
        return await trio.to_thread.run_sync(fn, *args)
    try:
        task = trio.lowlevel.current_task()
        token = trio.lowlevel.current_trio_token()

        def deliver(result: outcome.Outcome[T]) -> None:  # runs in the worker thread
            try:
                token.run_sync_soon(trio.lowlevel.reschedule, task, result)
            except trio.RunFinishedError:  # pragma: no cover - the run cannot end while its task waits
                pass

        trio.lowlevel.start_thread_soon(functools.partial(fn, *args), deliver)
        return cast(T, await trio.lowlevel.wait_task_rescheduled(_never_abort))
    finally:
        limiter.release_on_behalf_of(borrower)


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _flock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


class OsFileSystem:
    """Real filesystem operations, each run in a worker thread (one hop per call)."""

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await run_in_thread(fn, *args)

    async def open(self, path: str, flags: OpenFlags, mode: int = 0o600) -> int:
        return await self._run(os.open, path, os_open_flags(flags), mode)

    async def read(self, fd: int, size: int) -> bytes:
        return await self._run(os.read, fd, size)

    async def write(self, fd: int, data: bytes) -> int:
        return await self._run(_write_all, fd, bytes(data))

    async def fsync(self, fd: int) -> None:
        await self._run(os.fsync, fd)

    async def write_fsync(self, fd: int, data: bytes, rollback_size: int | None = None) -> None:
        await self._run(_write_fsync, fd, bytes(data), rollback_size)

    async def fsync_dir(self, path: str) -> None:
        await self._run(_fsync_dir, path)

    async def link(self, src: str, dst: str) -> None:
        await self._run(os.link, src, dst)

    async def unlink(self, path: str) -> None:
        await self._run(os.unlink, path)

    async def truncate(self, path: str, size: int) -> None:
        await self._run(os.truncate, path, size)

    async def ftruncate(self, fd: int, size: int) -> None:
        await self._run(os.ftruncate, fd, size)

    async def stat(self, path: str) -> StatResult:
        return _stat_result(await self._run(os.stat, path))

    async def lstat(self, path: str) -> StatResult:
        return _stat_result(await self._run(os.lstat, path))

    async def fstat(self, fd: int) -> StatResult:
        return _stat_result(await self._run(os.fstat, fd))

    async def listdir(self, path: str) -> list[str]:
        return sorted(await self._run(os.listdir, path))

    async def mkdir(self, path: str, mode: int = 0o700) -> None:
        await self._run(os.mkdir, path, mode)

    async def realpath(self, path: str) -> str:
        return await self._run(os.path.realpath, path)

    async def flock(self, fd: int) -> None:
        await self._run(_flock, fd)

    async def close(self, fd: int) -> None:
        await self._run(os.close, fd)
