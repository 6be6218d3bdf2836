"""The trace digest: one hash over everything that decides a simulated run.

Records are small tuples of ``str``/``int``/``float`` — virtual time, task steps, named
points, fault decisions and filesystem operations — so their ``repr`` is stable across
processes and ``PYTHONHASHSEED`` values.  With ``keep=True`` the records are kept too, and
:func:`first_divergence` shows where two runs parted.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

import attrs
import trio

from dsh_sim.engine.instruments import PlainInstrument

_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def _canon(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple((str(k), _canon(v)) for k, v in sorted(value.items(), key=lambda kv: str(kv[0])))
    if isinstance(value, (list, tuple)):
        return tuple(_canon(v) for v in value)
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    return _ADDRESS.sub("", repr(value))


_PLAIN = (str, int, bool, type(None))
_CHUNK = 2048  # records hashed together


def _field(value: Any) -> Any:
    # Fields are built by deterministic code (dicts in insertion order, plain scalars), so
    # their repr is already stable; only foreign objects need canonicalizing.  A plain dict is
    # copied: it is hashed later, and its owner may change it meanwhile.
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is dict:
        for item in value.values():
            if type(item) not in _PLAIN:
                return _canon(value)
        return value.copy()
    return _canon(value)


class Trace:
    """The digest is the SHA-256 of every record's ``repr`` followed by a newline, in order.

    Records are buffered and hashed in chunks (one ``repr`` pass and one hash update per
    chunk instead of per record); the bytes hashed, and so the digest, are the same.  Kept
    records (``keep=True``) are taken from the buffer as it is hashed."""

    def __init__(self, *, keep: bool = False, enabled: bool = True) -> None:
        self._hash = hashlib.sha256()
        self._pending: list[tuple[Any, ...]] = []
        self._hashed = 0
        self.keep = keep
        self.enabled = enabled  # a disabled trace (explore's recovery runs) records nothing
        self._records: list[tuple[Any, ...]] = []

    @property
    def count(self) -> int:
        return self._hashed + len(self._pending)

    @property
    def records(self) -> list[tuple[Any, ...]]:
        if self.keep:
            self._flush()
        return self._records

    def record(self, kind: str, *fields: Any) -> None:
        if not self.enabled:
            return
        for field in fields:
            if type(field) not in _PLAIN:
                entry = (kind, *map(_field, fields))
                break
        else:
            entry = (kind, *fields)  # all plain: nothing to canonicalize or copy
        self.add(entry)

    def add(self, entry: tuple[Any, ...]) -> None:
        """Record an entry that is canonical already (see :meth:`record`)."""
        if not self.enabled:
            return
        pending = self._pending
        pending.append(entry)
        if len(pending) >= _CHUNK:
            self._flush()

    def _flush(self) -> None:
        pending = self._pending
        if pending:
            self._hash.update(("\n".join(map(repr, pending)) + "\n").encode())
            self._hashed += len(pending)
            if self.keep:
                self._records.extend(pending)
            pending.clear()

    def digest(self) -> str:
        self._flush()
        return self._hash.hexdigest()


class TaskTracer(PlainInstrument):
    """Feeds every scheduled task step (virtual time, task name) into the trace."""

    def __init__(self, trace: Trace, pid: int, clock: trio.abc.Clock | None = None) -> None:
        self._trace = trace
        self._pid = pid
        self._clock = clock  # the run's clock, read directly (what trio.current_time() reads)
        self._labels: dict[str, str] = {}  # task name -> label (a run has few distinct names)

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        label = self._labels.get(task.name)
        if label is None:
            label = self._labels[task.name] = task_label(task.name)
        now = self._clock.current_time() if self._clock is not None else trio.current_time()
        trace = self._trace
        if trace.enabled:
            pending = trace._pending
            pending.append(("step", self._pid, round(now, 9), label))  # rounded as _canon rounds
            if len(pending) >= _CHUNK:
                trace._flush()


def task_label(name: str) -> str:
    """A task's name for the trace: harness tasks by ``Class.method`` only, so that moving a
    harness module does not change every digest; runtime tasks keep their full name."""
    name = _ADDRESS.sub("", name)
    if name.startswith("dsh_sim."):
        return ".".join(name.split(".")[-2:])
    return name


@attrs.frozen
class Divergence:
    index: int
    left: tuple[Any, ...] | None
    right: tuple[Any, ...] | None

    def describe(self) -> str:
        return f"first divergence at trace record {self.index}:\n  left:  {self.left}\n  right: {self.right}"


def first_divergence(left: Sequence[tuple[Any, ...]], right: Sequence[tuple[Any, ...]]) -> Divergence | None:
    for index, (a, b) in enumerate(zip(left, right)):
        if a != b:
            return Divergence(index, a, b)
    if len(left) != len(right):
        n = min(len(left), len(right))
        return Divergence(n, left[n] if n < len(left) else None, right[n] if n < len(right) else None)
    return None
