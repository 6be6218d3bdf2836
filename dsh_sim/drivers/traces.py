"""Recorded traces beside their digests: when a replay's digest moves, where the run parted.

A trace digest notices any change to what decides a run — a real regression or an equivalent
refactoring alike — so a moved digest is a change detector, not a finding: a person must see
*what* changed before re-recording it, and a change every oracle passed is a gap in the models
(nothing judged it), not a pass.  ``dsh-sim replay --update-digest`` therefore keeps the whole
trace, zstd-compressed, beside the scenario (``NAME.trace.zst`` next to ``NAME.json``): exactly
the bytes the digest hashes, one ``repr`` per record, so a stored trace checks itself against
the digest recorded in the scenario.  A replay whose digest moved reruns with its trace kept and
shows the first records where the two differ.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import attrs
import zstandard

from dsh_sim.outputs import write_replacing

SUFFIX = ".trace.zst"
CONTEXT = 3  # records shown before the first difference
MAX_TRACE_BYTES = 64 * 1024 * 1024  # a recorded trace decompresses to at most this


def trace_path(scenario_path: str) -> str:
    base = scenario_path[: -len(".json")] if scenario_path.endswith(".json") else scenario_path
    return base + SUFFIX


def encode(records: Sequence[tuple[Any, ...]]) -> bytes:
    """The bytes the digest hashes (:class:`~dsh_sim.engine.trace.Trace`), compressed."""
    text = "".join(repr(record) + "\n" for record in records)
    return zstandard.ZstdCompressor(level=10).compress(text.encode())


def save(scenario_path: str, records: Sequence[tuple[Any, ...]]) -> str:
    path = trace_path(scenario_path)
    write_replacing(path, encode(records))
    return path


def load(scenario_path: str, digest: str | None) -> list[str] | None:
    """The recorded trace's lines, when one is stored and matches ``digest`` (else ``None``:
    none recorded, unreadable, or recorded for another digest — a stale trace shows nothing)."""
    path = trace_path(scenario_path)
    try:
        with open(path, "rb") as handle:
            blob = handle.read()
        text = zstandard.ZstdDecompressor().decompressobj().decompress(blob)[:MAX_TRACE_BYTES]
    except (OSError, zstandard.ZstdError):
        return None
    if digest is None or hashlib.sha256(text).hexdigest() != digest:
        return None
    return text.decode("utf-8", "replace").splitlines()


@attrs.frozen
class Move:
    """Where a run's trace parted from the recorded one."""

    index: int  # the first record that differs
    recorded: str | None  # that record as recorded (None: the recorded trace ended)
    now: str | None  # and as the run has it now (None: the new trace ended)
    before: tuple[str, ...]  # the records just before it (the same in both)
    recorded_total: int
    now_total: int

    def describe(self) -> str:
        lines = [f"the trace moved at record {self.index} of {self.recorded_total} (now {self.now_total}):"]
        lines += [f"            {line}" for line in self.before]
        lines.append(f"  recorded: {self.recorded if self.recorded is not None else '(the recorded trace ends here)'}")
        lines.append(f"  now:      {self.now if self.now is not None else '(the new trace ends here)'}")
        return "\n".join(lines)


def first_move(recorded: Sequence[str], records: Sequence[tuple[Any, ...]]) -> Move | None:
    now = [repr(record) for record in records]
    for index, (a, b) in enumerate(zip(recorded, now)):
        if a != b:
            return Move(index, a, b, tuple(now[max(0, index - CONTEXT) : index]), len(recorded), len(now))
    if len(recorded) != len(now):
        n = min(len(recorded), len(now))
        return Move(
            n,
            recorded[n] if n < len(recorded) else None,
            now[n] if n < len(now) else None,
            tuple(now[max(0, n - CONTEXT) : n]),
            len(recorded),
            len(now),
        )
    return None
