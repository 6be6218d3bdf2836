"""The cross-process writer lock: a non-blocking ``flock`` on ``session.lock`` (spec §10.3).

After locking, the locked inode must still be the file at the path: a lock file deleted and
recreated by someone else proves nothing, so that case is retried (three attempts).  The
kernel releases the lock when the holder dies; release never deletes the file.
"""

from __future__ import annotations

from runtime.persistence.durable import close_after_error, close_shielded
from runtime.persistence.errors import SessionAlreadyOwnedError
from runtime.ports.fs import FileSystem, OpenFlags

ATTEMPTS = 3


async def acquire_lock(fs: FileSystem, lock_path: str, session_id: str) -> int:
    """Return the descriptor holding the lock; ``SessionAlreadyOwnedError`` if another holds it."""
    for _ in range(ATTEMPTS):
        fd = await fs.open(lock_path, OpenFlags.WRITE | OpenFlags.CREATE, 0o600)
        try:
            try:
                await fs.flock(fd)
            except BlockingIOError:
                raise SessionAlreadyOwnedError(session_id) from None
            held = await fs.fstat(fd)
            try:
                at_path = await fs.stat(lock_path)
            except FileNotFoundError:
                at_path = None
        except BaseException:
            # never leak a descriptor (not even when cancelled): it would keep the lock
            await close_after_error(fs, fd)
            raise
        if at_path is not None and (at_path.dev, at_path.ino) == (held.dev, held.ino):
            return fd
        await close_shielded(fs, fd)
    raise SessionAlreadyOwnedError(session_id, "the lock file kept changing while it was being locked")


async def release_lock(fs: FileSystem, fd: int) -> None:
    """Close the lock descriptor (shielded: a leaked descriptor would keep the lock held)."""
    await close_shielded(fs, fd)
