"""The project's literal pool for Hypothesis, kept on disk between processes.

Hypothesis collects a module's literals by parsing it and walking its syntax tree: for the
~300 modules of the project about a second of CPU in every process that fuzzes.  The pool
depends on nothing but the bytes of those files, the Hypothesis version (its visitor decides
what counts as a literal) and the Python version (its parser): the cache file is named after
a digest of all of them, so an edited file, another Hypothesis or another Python is a new
key — the key is complete.

The pool must be the *same* pool, iteration order included: Hypothesis picks a constant by
position in the tuple it makes from each set (``providers``), so a set holding the same
values in another slot order draws other examples.  So the cache keeps each file's literals
in the order the visitor first added them, and :func:`pool` rebuilds each file's sets by the
same additions and unions the files in the same order as a fresh parse: the same operations
on the same values make the same sets.  Strings and bytes hash differently in every process;
rebuilding by the same additions in the reading process gives exactly what parsing there
would have given.

A missing, unreadable or malformed cache file is recomputed (and rewritten atomically); a
cache that cannot be written is skipped; only the newest few cache files are kept.  ``DSH_SIM_CACHE_DIR`` chooses the directory
(default ``$XDG_CACHE_HOME/dsh-sim`` or ``~/.cache/dsh-sim``).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import re
import sys
import tempfile
from typing import Any

KINDS = ("integers", "floats", "bytes", "strings")
FORMAT = 2  # 2: a string holding a surrogate is stored as its surrogatepass bytes
KEEP = 8  # cache files kept (the newest): each edit of a source file makes a new key


class _Ordered(set[Any]):
    """A set that also remembers the order its distinct members were first added."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list[Any] = []

    def add(self, value: Any) -> None:
        if value not in self:
            self.order.append(value)
        super().add(value)


def file_literals(source: bytes) -> dict[str, list[Any]]:
    """One file's literals per kind, in the order Hypothesis' visitor first adds them (what
    ``_constants_from_source(source, limit=True)`` returns, with the order kept)."""
    from hypothesis.internal.constants_ast import Constants, ConstantVisitor, TooManyConstants

    visitor = ConstantVisitor(limit=True)
    sets = {kind: _Ordered() for kind in KINDS}
    visitor.constants = Constants(**sets)
    try:
        visitor.visit(ast.parse(source))
    except TooManyConstants:
        return {kind: [] for kind in KINDS}
    return {kind: sets[kind].order for kind in KINDS}


def build(files: list[dict[str, list[Any]]]) -> Any:
    """The pool of a fresh parse: each file's sets by the visitor's additions, unioned in order."""
    from hypothesis.internal.constants_ast import Constants

    pool = Constants()
    for literals in files:
        per_file: dict[str, set[Any]] = {}
        for kind in KINDS:
            members: set[Any] = set()
            for value in literals[kind]:
                members.add(value)
            per_file[kind] = members
        pool |= Constants(**per_file)
    return pool


def key(sources: list[tuple[str, bytes]]) -> str:
    """A digest of everything the pool depends on (see the module doc)."""
    import hypothesis

    digest = hashlib.sha256(f"{FORMAT}\0{hypothesis.__version__}\0{sys.version_info[:2]}\0".encode())
    for path, data in sources:
        digest.update(f"{path}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def cache_dir() -> str:
    configured = os.environ.get("DSH_SIM_CACHE_DIR")
    if configured:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "dsh-sim")


_SURROGATE = re.compile("[\ud800-\udfff]")


def _encode(kind: str, value: Any) -> Any:
    if kind == "floats":
        return float(value).hex()
    if kind == "bytes":
        return bytes(value).hex()
    if kind == "strings" and not value.isascii() and _SURROGATE.search(value) is not None:
        # JSON would read an escaped surrogate pair held as two code points back as one
        return ["surrogatepass", value.encode("utf-8", "surrogatepass").hex()]
    return value


def _decode(kind: str, value: Any) -> Any:
    if kind == "floats" and isinstance(value, str):
        return float.fromhex(value)
    if kind == "bytes" and isinstance(value, str):
        return bytes.fromhex(value)
    if kind == "integers" and type(value) is int:
        return value
    if kind == "strings" and isinstance(value, str):
        return value
    if kind == "strings" and isinstance(value, list) and len(value) == 2 and value[0] == "surrogatepass":
        return bytes.fromhex(value[1]).decode("utf-8", "surrogatepass")
    raise ValueError(f"not a {kind} literal: {value!r}")


def load(path: str, count: int) -> list[dict[str, list[Any]]] | None:
    """The per-file literals stored at ``path`` (None if missing or not exactly that shape)."""
    try:
        with open(path, encoding="utf-8") as handle:
            stored = json.load(handle)
        files = stored["files"]
        if len(files) != count:
            return None
        return [{kind: [_decode(kind, v) for v in literals[kind]] for kind in KINDS} for literals in files]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(path: str, files: list[dict[str, list[Any]]]) -> None:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"files": [{kind: [_encode(kind, v) for v in lit[kind]] for kind in KINDS} for lit in files]}, handle)
        os.replace(tmp, path)
        prune(os.path.dirname(path))
    except OSError:
        pass


def prune(directory: str) -> None:
    """Remove all but the :data:`KEEP` newest cache files of ``directory``."""
    names = [n for n in os.listdir(directory) if n.startswith("constants-") and n.endswith(".json")]
    paths = sorted((os.path.join(directory, n) for n in names), key=os.path.getmtime, reverse=True)
    for stale in paths[KEEP:]:
        with contextlib.suppress(OSError):
            os.remove(stale)


def pool(sources: list[tuple[str, bytes]]) -> Any:
    """The Hypothesis ``Constants`` pool of ``sources`` (path, bytes), from the cache if it
    holds this exact key, else parsed (and stored)."""
    path = os.path.join(cache_dir(), f"constants-{key(sources)}.json")
    files = load(path, len(sources))
    if files is None:
        files = [file_literals(data) for _, data in sources]
        store(path, files)
    return build(files)
