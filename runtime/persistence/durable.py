"""Durable filesystem sequences over the port: publish, append with rollback, truncate.

Each function is the exact order of operations the crash model cares about (spec §3.6):
nothing is acknowledged before its fsync returns, new names become durable only through a
directory fsync, and a failed append leaves the file at its prior length.
"""

from __future__ import annotations

import errno
import posixpath
from collections.abc import Callable

import trio

from runtime.persistence.errors import AppendRollbackError
from runtime.persistence.safe_paths import open_nofollow, require_directory, require_regular
from runtime.ports.fs import FileSystem, OpenFlags, RollbackError, StatResult

READ_CHUNK = 1 << 20


async def close_shielded(fs: FileSystem, fd: int) -> None:
    """Close even inside a cancelled scope: an unshielded close would leak the descriptor."""
    with trio.CancelScope(shield=True):
        await fs.close(fd)


async def close_after_error(fs: FileSystem, fd: int) -> None:
    """Close while an error unwinds: shielded, and never masking the error in flight.

    A failing close here (or one refused because the process is already dead) must not
    replace the exception that explains what happened.
    """
    with trio.CancelScope(shield=True):
        try:
            await fs.close(fd)
        except Exception:
            pass


async def read_all(fs: FileSystem, path: str) -> bytes:
    fd = await open_nofollow(fs, path, OpenFlags.READ)
    parts: list[bytes] = []
    try:
        while True:
            chunk = await fs.read(fd, READ_CHUNK)
            if not chunk:
                break
            parts.append(chunk)
    except BaseException:
        await close_after_error(fs, fd)
        raise
    await close_shielded(fs, fd)
    return b"".join(parts)


async def read_stable(fs: FileSystem, path: str) -> tuple[bytes, StatResult]:
    """stat → read → stat until both stats agree (one retry, then trust the first size).

    ``lstat``, and only a regular file: a link or a FIFO in place of a log is refused.
    """
    first = require_regular(await fs.lstat(path), path)
    data = await read_all(fs, path)
    after = await fs.lstat(path)
    if first.revision() == after.revision():
        return data, after
    first = require_regular(after, path)
    data = await read_all(fs, path)
    after = await fs.lstat(path)
    if first.revision() == after.revision():
        return data, after
    return data[: first.size], first


async def exists(fs: FileSystem, path: str) -> bool:
    try:
        await fs.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return True


async def ensure_dir_durable(fs: FileSystem, path: str, base: str) -> None:
    """Create every directory from ``base`` down to ``path`` and fsync each one's parent —
    whether it was just created or already existed.

    An existing directory proves nothing about durability: a crashed process (or an earlier
    attempt whose directory fsync failed) can leave a name that lives only in the page cache,
    and power loss would take the new log with it.  That holds above ``base`` too: ancestors
    are created if missing and every one's entry is fsynced into its parent, existing or not —
    a run killed between creating an ancestor and fsyncing its parent leaves a name the next
    run would find and build on (spec §3.6 fsyncs only the root's parent, which leaves that gap
    one level up).  Ancestors above ``base`` may be links (``/home`` → ``/usr/home``); a parent
    on a filesystem that cannot sync a directory (read-only: ``EROFS``; ``EINVAL``) holds no
    entry a crashed run of ours left unsynced, so that refusal alone is passed over.
    """
    ancestors = []
    node = posixpath.dirname(base)
    while posixpath.dirname(node) != node:  # up to, not including, "/"
        ancestors.append(node)
        node = posixpath.dirname(node)
    for ancestor in reversed(ancestors):
        created = False
        if not await exists(fs, ancestor):
            await fs.mkdir(ancestor, 0o700)
            created = True
        try:
            await fs.fsync_dir(posixpath.dirname(ancestor))
        except OSError as err:
            if created or err.errno not in (errno.EROFS, errno.EINVAL):
                raise
    chain = [base]
    while chain[-1] != path:
        rest = posixpath.relpath(path, chain[-1]).split("/")[0]
        chain.append(posixpath.join(chain[-1], rest))
    for directory in chain:
        try:
            await fs.mkdir(directory, 0o700)
        except FileExistsError:
            if directory != base:  # below the root: a real directory, never a link to one
                await require_directory(fs, directory)
        await fs.fsync_dir(posixpath.dirname(directory))


async def make_durable(fs: FileSystem, root: str, path: str) -> tuple[bytes, StatResult]:
    """Make an existing file durable *and reachable*: its content, its name, its directories.

    After a crash, what a new process finds may live only in the page cache — unsynced
    bytes, or a name whose directory was never fsynced (a publication killed between link and
    directory fsync).  A writer that builds on it must first make it survive power loss.

    An fsync alone is not enough: after a failed fsync, Linux marks the dirty pages clean
    while they still hold the bytes that never reached the disk ("fsyncgate"), and fsync of a
    clean page writes nothing.  A process killed before it rolled such an append back leaves
    exactly that, and the next writer would read those bytes, build on them and acknowledge
    batches whose prefix a power cut still takes away.  So the file's bytes are written again
    — identical, but dirty — before the fsync.

    Returns what :func:`rewrite_synced` returns: the bytes now durable and the file's stat.
    """
    directory = posixpath.dirname(path)
    await ensure_dir_durable(fs, directory, root)
    await fs.fsync_dir(directory)
    return await rewrite_synced(fs, path)


async def write_new_synced(fs: FileSystem, path: str, data: bytes) -> None:
    """Create ``path`` exclusively (0600), write ``data``, fsync it; the name is not yet durable.

    A failed write or fsync removes the file again (it is ours); a failed exclusive open
    removes nothing (the name belongs to someone else).
    """
    fd = await open_nofollow(fs, path, OpenFlags.WRITE | OpenFlags.CREATE | OpenFlags.EXCLUSIVE, 0o600)
    try:
        await fs.write(fd, data)
        await fs.fsync(fd)
    except BaseException:
        await close_after_error(fs, fd)
        with trio.CancelScope(shield=True):
            await unlink_quietly(fs, path)
        raise
    await close_shielded(fs, fd)


async def publish_new_file(fs: FileSystem, final: str, temp: str, data: bytes) -> None:
    """Write ``data`` to ``temp``, fsync, hard-link to ``final`` (never overwriting), fsync the dir.

    Any failure undoes what this call made (the temp file and, if the directory fsync
    failed, the new link), so the caller can simply retry the publication; otherwise an
    undurable link would refuse every retry as "a log already exists".
    """
    await write_new_synced(fs, temp, data)
    linked = False
    try:
        await fs.link(temp, final)
        linked = True
        await fs.fsync_dir(posixpath.dirname(final))
    except BaseException:
        with trio.CancelScope(shield=True):
            if linked:
                await unlink_quietly(fs, final)
            await unlink_quietly(fs, temp)
        raise
    await unlink_quietly(fs, temp)


async def unlink_quietly(fs: FileSystem, path: str) -> None:
    """Best-effort removal (also used while an error unwinds: it must not mask it)."""
    try:
        await fs.unlink(path)
    except Exception:
        pass


async def truncate_durable(fs: FileSystem, path: str, size: int) -> None:
    fd = await open_nofollow(fs, path, OpenFlags.READ | OpenFlags.WRITE)
    try:
        await fs.ftruncate(fd, size)
        await fs.fsync(fd)
    except BaseException:
        await close_after_error(fs, fd)
        raise
    await close_shielded(fs, fd)


async def open_for_append(fs: FileSystem, path: str, expected_size: int) -> int:
    """Open ``path`` to append at ``expected_size``, the caller's committed length.

    Bytes beyond it (left by an earlier append whose rollback failed) are removed durably
    first, so a retry can never leave the same records twice in the file; a file shorter than
    that is an error.  The write handle keeps the descriptor for its following batches.
    """
    fd = await open_nofollow(fs, path, OpenFlags.WRITE | OpenFlags.APPEND)
    try:
        size = require_regular(await fs.fstat(fd), path).size
        if size < expected_size:
            # not rolled back: truncating "back" to a larger size would pad the log with zeros
            raise OSError(errno.EIO, f'stored log "{path}" shrank below a previously observed prefix ({size} < {expected_size})')
        if size > expected_size:
            await fs.ftruncate(fd, expected_size)
            await fs.fsync(fd)
    except BaseException:
        await close_after_error(fs, fd)
        raise
    return fd


async def append_durable(fs: FileSystem, fd: int, path: str, data: bytes, expected_size: int) -> int:
    """Append ``data`` at EOF of ``fd`` (from :func:`open_for_append`) and fsync it; on failure
    the file is truncated back to ``expected_size`` (the committed length) and the error
    re-raised.  Returns the new committed length.  Write and fsync are one port operation: one
    hop off the event loop in production, still two named points in the simulator."""
    try:
        await fs.write_fsync(fd, data, rollback_size=expected_size)
    except RollbackError as err:
        raise AppendRollbackError(path, err.original, err.rollback) from None
    return expected_size + len(data)


async def read_prefix(fs: FileSystem, path: str, complete: Callable[[bytes], bool], chunk: int = 8192) -> bytes:
    """Read from the start until ``complete(prefix)`` holds or EOF (header-only reads)."""
    fd = await open_nofollow(fs, path, OpenFlags.READ)
    data = b""
    try:
        while True:
            part = await fs.read(fd, chunk)
            if not part:
                break
            data += part
            if complete(data):
                break
            chunk = min(chunk * 2, READ_CHUNK)
    except BaseException:
        await close_after_error(fs, fd)
        raise
    await close_shielded(fs, fd)
    return data


async def rewrite_synced(fs: FileSystem, path: str) -> tuple[bytes, StatResult]:
    """Write a file's bytes over themselves and fsync: whatever reads now see becomes durable
    even where the page cache holds pages a failed fsync marked clean (see :func:`make_durable`).

    Returns those bytes and the stat of the file they are written to, taken through the
    descriptor they are written through (its links: a writer that opens a log decodes exactly
    what it made durable, and does not read the file again for it)."""
    require_regular(await fs.lstat(path), path)  # opening a FIFO planted there would block
    data = await read_all(fs, path)
    fd = await open_nofollow(fs, path, OpenFlags.WRITE)
    try:
        st = await fs.fstat(fd)
        if data:
            await fs.write(fd, data)
        await fs.fsync(fd)
    except BaseException:
        await close_after_error(fs, fd)
        raise
    await close_shielded(fs, fd)
    return data, st
