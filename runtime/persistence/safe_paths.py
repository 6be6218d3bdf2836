"""Opening session files without being redirected: no symbolic links, regular files only.

Every session file (log, temp file, ``session.lock``) is opened with ``O_NOFOLLOW`` and
checked to be a regular file, and every directory the backend creates below the root must
be a real directory.  Without that, a log replaced by a link was truncated and appended
to at the link's target (outside the session directory, and past the lock of the session
that owns the target), and a linked ``session.lock`` was followed and created its target.
A link is refused with :class:`~runtime.persistence.errors.UnsafeSessionPathError`, never
resolved, whatever it points at.
"""

from __future__ import annotations

import errno

from runtime.persistence.errors import UnsafeSessionPathError
from runtime.ports.fs import FileSystem, OpenFlags, StatResult


async def open_nofollow(fs: FileSystem, path: str, flags: OpenFlags, mode: int = 0o600) -> int:
    """``fs.open`` with ``NOFOLLOW``; a symbolic link at ``path`` is a typed refusal."""
    try:
        return await fs.open(path, flags | OpenFlags.NOFOLLOW, mode)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise UnsafeSessionPathError.symlink(path) from None
        raise


def require_regular(st: StatResult, path: str) -> StatResult:
    """``st`` if it describes a regular file, else a typed refusal naming what it is."""
    if st.kind != "file":
        raise UnsafeSessionPathError.not_regular(path, st.kind)
    return st


async def require_directory(fs: FileSystem, path: str) -> None:
    """``path`` must be a directory itself, not a symbolic link to one (``lstat``)."""
    st = await fs.lstat(path)
    if st.kind != "dir":
        raise UnsafeSessionPathError.not_directory(path, st.kind)
