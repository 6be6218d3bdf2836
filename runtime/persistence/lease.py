"""The cross-process writer lock: a non-blocking ``flock`` on ``session.lock`` (spec §10.3).

After locking, the locked inode must still be the file at the path: a lock file deleted and
recreated by someone else proves nothing, so that case is retried (three attempts).  The
kernel releases the lock when the holder dies; release never deletes the file.
"""

from __future__ import annotations

from runtime.persistence.durable import close_after_error, close_shielded
from runtime.persistence.errors import SessionAlreadyOwnedError
from runtime.persistence.safe_paths import open_nofollow, require_regular
from runtime.ports.fs import FileSystem, OpenFlags

ATTEMPTS = 3


async def acquire_lock(fs: FileSystem, lock_path: str, session_id: str) -> int:
    """Return the descriptor holding the lock; ``SessionAlreadyOwnedError`` if another holds it."""
    for _ in range(ATTEMPTS):
        try:  # a FIFO planted at the lock's name would block the open below forever
            require_regular(await fs.lstat(lock_path), lock_path)
        except FileNotFoundError:
            pass
        # NOFOLLOW: a linked lock file would be followed and create (and lock) its target
        fd = await open_nofollow(fs, lock_path, OpenFlags.WRITE | OpenFlags.CREATE, 0o600)
        try:
            try:
                await fs.flock(fd)
            except BlockingIOError:
                raise SessionAlreadyOwnedError(session_id) from None
            held = require_regular(await fs.fstat(fd), lock_path)
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
