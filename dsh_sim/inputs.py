"""Reading what a user names, safely: regular files only, bounded in size and nesting.

Every input file (a scenario, a results document, a model script, a session log) is read
through here, so each refusal is one :class:`~dsh_sim.errors.InputError` line naming the
file: missing, a directory, a FIFO or device (refused before opening for read, so nothing
blocks), unreadable, larger than the limit (refused before reading), not JSON, or JSON
nested deeper than :data:`MAX_DEPTH` (refused before any recursive code sees it).  Output
paths are checked the same way before a run starts (:func:`check_output_file`,
:func:`check_output_dir`), so a long run never ends unable to write its results.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from typing import Any

from dsh_sim.errors import InputError

MAX_JSON_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 100


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _open_regular(path: str, limit: int | None, what: str) -> int:
    """A read-only descriptor of the regular file ``path`` (at most ``limit`` bytes), or one
    refusal line; the kind is checked before the open, so a FIFO never blocks it."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file or directory") from None
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"{path}: is {_kind(info.st_mode)}, not a {what}")
    if limit is not None and info.st_size > limit:
        raise InputError(f"{path}: {info.st_size} bytes is more than the {limit}-byte limit for a {what}")
    try:
        # O_NONBLOCK: if the name was swapped for a FIFO since the stat, open does not wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(f"{path}: is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str, limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit``), or one refusal line."""
    chunks = []
    size = 0
    for chunk in read_chunks(path, what, limit=limit):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_chunks(path: str, what: str = "file", *, limit: int | None = None, chunk: int = 1 << 20) -> Iterator[bytes]:
    """The regular file ``path`` in pieces of at most ``chunk`` bytes, for a reader that never
    holds the whole file (``dsh-sim inspect`` of a large log); refusals as :func:`read_regular`."""
    fd = _open_regular(path, limit, what)
    size = 0
    try:
        while True:
            try:
                piece = os.read(fd, chunk if limit is None else min(chunk, limit + 1 - size))
            except OSError as err:
                raise InputError(f"{path}: cannot read: {err.strerror}") from None
            if not piece:
                return
            size += len(piece)
            if limit is not None and size > limit:
                raise InputError(f"{path}: more than the {limit}-byte limit for a {what}")
            yield piece
    finally:
        os.close(fd)


def depth_exceeds(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests deeper than ``limit`` (iterative: safe on any depth)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(data: bytes, source: str, what: str = "JSON file") -> Any:
    """Strict JSON (no NaN/Infinity) nested at most :data:`MAX_DEPTH` deep."""
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError as err:
        raise InputError(f"{source}: not UTF-8 text (byte {err.start})") from None
    except RecursionError:
        raise InputError(f"{source}: JSON nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as err:
        raise InputError(f"{source}: not valid JSON: {err}") from None
    if depth_exceeds(value):
        raise InputError(f"{source}: JSON nested more than {MAX_DEPTH} levels deep")
    return value


def read_json(path: str, what: str = "JSON file", limit: int = MAX_JSON_BYTES) -> Any:
    return parse_json(read_regular(path, limit, what), path, what)
