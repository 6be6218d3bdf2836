"""Finding a session on disk: its project directory and its authoritative generation.

A session id maps to ``<root>/<project>/<encodedId>/``; the id must name exactly one such
directory across all project directories, and inside it the highest canonical generation
wins (spec §10.4).  Artifacts this backend must not touch — the flat legacy layout, a log of
the other compression — are refused rather than ignored.
"""

from __future__ import annotations

import posixpath

import attrs

from runtime.persistence.durable import exists
from runtime.persistence.errors import LayoutError, UnsafeSessionPathError
from runtime.persistence.layout import (
    LOCK_FILENAME,
    SessionPaths,
    encode_segment,
    parse_generation_filename,
)
from runtime.ports.fs import FileSystem


@attrs.frozen
class Located:
    """A session found on disk: its directory and its authoritative generation."""

    session_dir: str
    log: str
    version: int
    compression: str


def paths_of(root: str, located: Located) -> SessionPaths:
    project_dir = posixpath.dirname(located.session_dir)
    return SessionPaths(root, project_dir, located.session_dir, located.log, f"{located.session_dir}/{LOCK_FILENAME}")


def flat_layout_error(path: str) -> LayoutError:
    return LayoutError(
        f'session artifact "{path}" uses the unsupported flat-file layout; use a separate root or move it into its session directory'
    )


async def locate(fs: FileSystem, root: str, compression: str, session_id: str) -> Located | None:
    """The directory and authoritative generation of ``session_id`` under ``root``, if any."""
    encoded = encode_segment(session_id)
    if not await exists(fs, root):
        return None
    found: list[Located] = []
    for project in await fs.listdir(root):
        project_dir = f"{root}/{project}"
        if not await is_real_dir(fs, project_dir):
            continue  # a stray file in the root is not a project directory
        for suffix in (".jsonl", ".jsonl.zstd"):
            if await exists(fs, f"{project_dir}/{encoded}{suffix}"):
                raise flat_layout_error(f"{project_dir}/{encoded}{suffix}")
        candidate = f"{project_dir}/{encoded}"
        try:
            if not await is_real_dir(fs, candidate):
                continue
        except (FileNotFoundError, NotADirectoryError):
            continue
        located = await generation_in(fs, candidate, compression)
        if located is not None:
            found.append(located)
    if len(found) > 1:
        raise LayoutError(f'duplicate JSONL session id "{session_id}" appears in multiple project directories')
    return found[0] if found else None


async def is_real_dir(fs: FileSystem, path: str) -> bool:
    """Whether ``path`` is a directory (``lstat``); a symbolic link in its place is refused.

    A linked project or session directory would take every read and write of the session,
    lock file included, outside the root.
    """
    st = await fs.lstat(path)
    if st.kind == "symlink":
        raise UnsafeSessionPathError.not_directory(path, st.kind)
    return st.is_dir


async def generation_in(fs: FileSystem, session_dir: str, compression: str) -> Located | None:
    """The highest canonical generation in a session directory (spec §10.4); ``compression``
    is the backend's, and a generation of the other compression is refused."""
    best: tuple[int, str] | None = None
    for name in await fs.listdir(session_dir):
        parsed = parse_generation_filename(name)
        if parsed is None:
            continue
        version, found = parsed
        if found != compression:
            raise LayoutError(
                f'session artifact "{session_dir}/{name}" uses {name[name.index(".jsonl") :]}, but this backend is '
                f'configured for compression "{compression}"; use a separate root or select the matching '
                "compression mode"
            )
        if best is None or version > best[0]:
            best = (version, name)
    if best is None:
        return None
    return Located(session_dir, f"{session_dir}/{best[1]}", best[0], compression)


async def remove_stale_temps(fs: FileSystem, located: Located) -> None:
    """Temp files of a publication that crashed before cleanup (we hold the lock)."""
    for name in await fs.listdir(located.session_dir):
        if name.endswith(".tmp") and name.startswith("session."):
            try:
                await fs.unlink(f"{located.session_dir}/{name}")
            except FileNotFoundError:
                pass
