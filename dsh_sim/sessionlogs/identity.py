"""Refusals the session-log tools share with the runtime's own open (spec §3.7, §3.9).

``inspect``, ``migrate`` and ``repair`` read a user's log the way the runtime would open it, so
they refuse what the runtime refuses, in its words: a header whose id and cwd name another
session directory than the one the file sits in (a log copied or planted under another
session's name, or an id such as ``../../pwn``), and a log format this build cannot read.
"""

from __future__ import annotations

import os

from dsh_sim.errors import InputError
from runtime.persistence.errors import SessionFormatUnsupportedError
from runtime.persistence.header import SessionHeader
from runtime.persistence.layout import SessionPaths


def _session_dir(log: str) -> str:
    return os.path.dirname(os.path.abspath(log))


def check_identity(log: str, header: SessionHeader, compression: str) -> None:
    """The header's id and cwd must identify the directory ``log`` was found in, as the runtime
    checks before it reads or repairs anything (``corrupt session log ... identify ...``)."""
    session_dir = _session_dir(log)
    root = os.path.dirname(os.path.dirname(session_dir))
    expected = SessionPaths.of(root.rstrip("/"), header.cwd, header.id, compression).session_dir  # (a root of "/" adds no slash)
    if expected != session_dir:
        raise InputError(f'{log}: refused: corrupt session log "{log}": header id "{header.id}" and cwd identify "{expected}"')


def unsupported_version(log: str, version: int | float) -> InputError:
    """The spec's refusal of a log format this build does not read (newer: upgrade the harness;
    older: no upgrade path), naming the session as its directory does."""
    session = os.path.basename(_session_dir(log))
    return InputError(f"{log}: refused: {SessionFormatUnsupportedError.version(session, version)}")
