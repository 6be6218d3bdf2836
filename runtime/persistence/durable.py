"""Durable filesystem sequences over the port: publish, append with rollback, truncate.

Each function is the exact order of operations the crash model cares about (spec §3.6):
nothing is acknowledged before its fsync returns, new names become durable only through a
directory fsync, and a failed append leaves the file at its prior length.
"""

from __future__ import annotations

import errno
import posixpath

from runtime import mutants
from runtime.persistence.errors import AppendRollbackError
from runtime.ports.fs import FileSystem, OpenFlags, StatResult

READ_CHUNK = 1 << 20


async def read_all(fs: FileSystem, path: str) -> bytes:
    fd = await fs.open(path, OpenFlags.READ)
    try:
        parts: list[bytes] = []
        while True:
            chunk = await fs.read(fd, READ_CHUNK)
            if not chunk:
                return b"".join(parts)
            parts.append(chunk)
    finally:
        await fs.close(fd)


async def read_stable(fs: FileSystem, path: str) -> tuple[bytes, StatResult]:
    """stat → read → stat until both stats agree (one retry, then trust the first size)."""
    first = await fs.stat(path)
    data = await read_all(fs, path)
    after = await fs.stat(path)
    if first.revision() == after.revision():
        return data, after
    first = after
    data = await read_all(fs, path)
    after = await fs.stat(path)
    if first.revision() == after.revision():
        return data, after
    return data[: first.size], first


async def exists(fs: FileSystem, path: str) -> bool:
    try:
        await fs.stat(path)
    except FileNotFoundError:
        return False
    return True


async def ensure_dir_durable(fs: FileSystem, path: str) -> None:
    """Create ``path`` (and missing ancestors) and fsync each parent, even if it existed.

    The parent is fsynced unconditionally: a directory left by a crashed process can exist in
    the page cache without a durable entry, and skipping the fsync would let power loss take
    the new log with it.
    """
    parent = posixpath.dirname(path)
    if parent != path and not await exists(fs, parent):
        await ensure_dir_durable(fs, parent)
    try:
        await fs.mkdir(path, 0o700)
    except FileExistsError:
        pass
    await fs.fsync_dir(parent)


async def publish_new_file(fs: FileSystem, final: str, temp: str, data: bytes) -> None:
    """Write ``data`` to ``temp``, fsync, hard-link to ``final`` (never overwriting), fsync the dir."""
    fd = await fs.open(temp, OpenFlags.WRITE | OpenFlags.CREATE | OpenFlags.EXCLUSIVE, 0o600)
    try:
        await fs.write(fd, data)
        await fs.fsync(fd)
    finally:
        await fs.close(fd)
    try:
        await fs.link(temp, final)
    except BaseException:
        await _unlink_quietly(fs, temp)
        raise
    if not mutants.on("persist.skip_dir_fsync_after_link"):
        await fs.fsync_dir(posixpath.dirname(final))
    await _unlink_quietly(fs, temp)


async def _unlink_quietly(fs: FileSystem, path: str) -> None:
    try:
        await fs.unlink(path)
    except OSError:
        pass


async def truncate_durable(fs: FileSystem, path: str, size: int) -> None:
    fd = await fs.open(path, OpenFlags.READ | OpenFlags.WRITE)
    try:
        await fs.ftruncate(fd, size)
        await fs.fsync(fd)
    finally:
        await fs.close(fd)


class AppendResult:
    __slots__ = ("prior_size", "new_size", "fsync_deferred")

    def __init__(self, prior_size: int, new_size: int, fsync_deferred: bool) -> None:
        self.prior_size = prior_size
        self.new_size = new_size
        self.fsync_deferred = fsync_deferred


async def append_durable(fs: FileSystem, path: str, data: bytes, expected_size: int) -> AppendResult:
    """Append at EOF and fsync; on failure truncate back to the prior length and re-raise.

    ``expected_size`` is the caller's committed length; bytes beyond it (left by an earlier
    append whose rollback failed) are removed durably first, so a retry can never leave the
    same records twice in the file.
    """
    fd = await fs.open(path, OpenFlags.WRITE | OpenFlags.APPEND)
    prior = expected_size
    try:
        size = (await fs.fstat(fd)).size
        if size < expected_size:
            raise OSError(errno.EIO, f'stored log "{path}" shrank below a previously observed prefix ({size} < {expected_size})')
        if size > expected_size:
            await fs.ftruncate(fd, expected_size)
            await fs.fsync(fd)
        await fs.write(fd, data)
        if mutants.on("persist.ack_before_fsync"):
            return AppendResult(prior, prior + len(data), True)
        if not mutants.on("persist.skip_fsync_on_append"):
            try:
                await fs.fsync(fd)
            except OSError:
                if not mutants.on("persist.swallow_fsync_error"):
                    raise
        return AppendResult(prior, prior + len(data), False)
    except OSError as original:
        await fs.close(fd)
        fd = -1
        if mutants.on("persist.skip_rollback_truncate"):
            raise
        try:
            await truncate_durable(fs, path, prior)
        except OSError as rollback:
            raise AppendRollbackError(path, original, rollback) from None
        raise
    finally:
        if fd >= 0:
            await fs.close(fd)


async def fsync_path(fs: FileSystem, path: str) -> None:
    fd = await fs.open(path, OpenFlags.READ)
    try:
        await fs.fsync(fd)
    finally:
        await fs.close(fd)
