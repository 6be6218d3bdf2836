"""Finding a session log on the real filesystem from what a user names: a file, a session
directory, or a persistence root that holds exactly one session."""

from __future__ import annotations

import os
import stat

from dsh_sim.errors import InputError
from dsh_sim.inputs import read_regular
from runtime.persistence.layout import parse_generation_filename
from runtime.session.vocabulary import SESSION_FORMAT_VERSION

MAX_LOG_BYTES = 512 * 1024 * 1024  # what the session-log tools read into memory at most


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError as err:
        raise InputError(f"{path}: cannot list: {err.strerror}") from None


def read_log(path: str) -> bytes:
    """The bytes of a located log file (regular files only, bounded)."""
    return read_regular(path, MAX_LOG_BYTES, "session log")


def _checked(log: str) -> str:
    """A session log must be a regular file named as itself: a symbolic link (or a FIFO, whose
    read would block) is refused, as the runtime refuses it."""
    try:
        mode = os.lstat(log).st_mode
    except FileNotFoundError:
        raise InputError(f"{log}: no such file or directory") from None
    if stat.S_ISLNK(mode):
        raise InputError(f"{log}: refusing a session log that is a symbolic link; dsh-sim never follows links to session files")
    if not stat.S_ISREG(mode):
        raise InputError(f"{log}: refusing a session log that is not a regular file")
    return log


def locate_log(path: str) -> tuple[str, int, str]:
    """(log file, version, compression) for a session directory or a log file path."""
    log, version, compression = _locate(path)
    return _checked(log), version, compression


def _locate(path: str) -> tuple[str, int, str]:
    if os.path.isdir(path):
        found = []
        for name in _listdir(path):
            parsed = parse_generation_filename(name)
            if parsed is not None:
                found.append((parsed[0], name, parsed[1]))
        if not found:
            sessions = sessions_under(path)
            if len(sessions) == 1:
                return _locate(sessions[0])
            if sessions:
                listed = ", ".join(sessions[:5]) + (" ..." if len(sessions) > 5 else "")
                raise InputError(f"{path}: holds {len(sessions)} sessions; name one: {listed}")
            raise InputError(f"{path}: no session log (session[.vN].jsonl[.zstd]) in this directory or the root below it")
        version, name, compression = max(found)
        return os.path.join(path, name), version, compression
    try:
        os.lstat(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file or directory") from None
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror}") from None
    parsed = parse_generation_filename(os.path.basename(path))
    if parsed is None:
        compression = "zstd" if path.endswith(".zstd") else "none"
        return path, SESSION_FORMAT_VERSION, compression
    return path, parsed[0], parsed[1]


def sessions_under(root: str) -> list[str]:
    """Session directories of a persistence root (``<root>/<project>/<session>/``)."""
    out = []
    for project in _listdir(root):
        project_dir = os.path.join(root, project)
        if not os.path.isdir(project_dir):
            continue
        for session in _listdir(project_dir):
            session_dir = os.path.join(project_dir, session)
            if os.path.isdir(session_dir) and any(parse_generation_filename(n) for n in _listdir(session_dir)):
                out.append(session_dir)
    return out
