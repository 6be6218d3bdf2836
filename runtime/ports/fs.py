"""The filesystem port: exactly the operations the persistence backend needs.

Errors are the standard :class:`OSError` subclasses with their ``errno`` set
(``FileNotFoundError``, ``FileExistsError``, ``BlockingIOError`` for a held lock, ...), so
the production adapter and the simulated one are interchangeable and can be compared
operation by operation.
"""

from __future__ import annotations

import enum
from typing import Literal, Protocol

import attrs


class OpenFlags(enum.Flag):
    """Portable open flags; adapters map them to their own representation."""

    READ = enum.auto()
    WRITE = enum.auto()
    CREATE = enum.auto()
    EXCLUSIVE = enum.auto()  # with CREATE: fail with EEXIST if the name exists
    APPEND = enum.auto()  # every write goes to end of file
    TRUNCATE = enum.auto()
    NOFOLLOW = enum.auto()  # refuse (ELOOP) when the final component is a symbolic link


FileKind = Literal["file", "dir", "symlink", "other"]


def _kind_default(stat: StatResult) -> FileKind:
    return "dir" if stat.is_dir else "file"


@attrs.frozen
class StatResult:
    """The identity and size facts the backend uses for revisions and lock checks.

    ``kind`` and ``nlink`` let the backend refuse a session file that is not what its name
    promises: a symbolic link (seen only by :meth:`FileSystem.lstat`), a FIFO or device, or a
    log with a second hard link through which another writer could reach it unlocked.
    """

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
    is_dir: bool = False
    kind: FileKind = attrs.field(default=attrs.Factory(_kind_default, takes_self=True))
    nlink: int = 1

    def revision(self) -> str:
        """A change token: equal tokens mean an unchanged file (spec §3.7)."""
        return f"{self.dev}:{self.ino}:{self.size}:{self.mtime_ns}:{self.ctime_ns}"


class RollbackError(OSError):
    """:meth:`FileSystem.write_fsync` failed, and so did undoing it (``original``: why it failed)."""

    def __init__(self, original: OSError, rollback: OSError) -> None:
        super().__init__(original.errno, f"{original}; the rollback failed too: {rollback}")
        self.original = original
        self.rollback = rollback


class FileSystem(Protocol):
    """Async filesystem operations. Paths are absolute POSIX strings."""

    async def open(self, path: str, flags: OpenFlags, mode: int = 0o600) -> int: ...

    async def read(self, fd: int, size: int) -> bytes:
        """Read up to ``size`` bytes from the descriptor's position; ``b""`` at end of file."""
        ...

    async def write(self, fd: int, data: bytes) -> int: ...

    async def fsync(self, fd: int) -> None: ...

    async def write_fsync(self, fd: int, data: bytes, rollback_size: int | None = None) -> None:
        """``write(fd, data)`` then ``fsync(fd)``, as one operation.

        If either fails and ``rollback_size`` is given, ``ftruncate(fd, rollback_size)`` and
        ``fsync(fd)`` follow before the error is raised (:class:`RollbackError` when they fail
        too).  The production adapter does it all in one hop off the event loop; an adapter
        whose operations are observable one by one runs :func:`write_fsync_in_steps`.
        """
        ...

    async def fsync_dir(self, path: str) -> None:
        """Make the directory's entries (creates, links, unlinks) durable."""
        ...

    async def link(self, src: str, dst: str) -> None:
        """Hard link; ``FileExistsError`` if ``dst`` exists (never overwrites)."""
        ...

    async def unlink(self, path: str) -> None: ...

    async def truncate(self, path: str, size: int) -> None: ...

    async def ftruncate(self, fd: int, size: int) -> None: ...

    async def stat(self, path: str) -> StatResult: ...

    async def lstat(self, path: str) -> StatResult:
        """Like :meth:`stat`, but a final symbolic link is described, not followed."""
        ...

    async def fstat(self, fd: int) -> StatResult: ...

    async def listdir(self, path: str) -> list[str]:
        """Entry names, sorted (so callers never depend on directory order)."""
        ...

    async def mkdir(self, path: str, mode: int = 0o700) -> None: ...

    async def realpath(self, path: str) -> str:
        """``path`` with every symbolic link resolved (the file tools confine by it)."""
        ...

    async def flock(self, fd: int) -> None:
        """Non-blocking exclusive lock; ``BlockingIOError`` when another holder has it."""
        ...

    async def close(self, fd: int) -> None: ...


async def write_fsync_in_steps(fs: FileSystem, fd: int, data: bytes, rollback_size: int | None = None) -> None:
    """:meth:`FileSystem.write_fsync` as its separate operations, in order.

    For adapters where each operation is its own observable step — SimFS, where every one is
    a named point a crash or a fault can strike — so combining them in production changes
    neither the sequence nor where it can be interrupted.
    """
    try:
        await fs.write(fd, data)
        await fs.fsync(fd)
    except OSError as original:
        if rollback_size is None:
            raise
        try:
            await fs.ftruncate(fd, rollback_size)
            await fs.fsync(fd)
        except OSError as rollback:
            raise RollbackError(original, rollback) from None
        raise
