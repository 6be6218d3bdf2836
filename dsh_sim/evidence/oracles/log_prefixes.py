"""The complete frames of zstd logs the spec reader already read, to walk a new log from.

Frame structure and records are functions of a frame's own bytes and of the records before
it, so the frames of equal leading bytes are equal: a log that grew by a batch (every
acknowledgement), or a crash image cut after frames an earlier image had, is walked by
:mod:`spec_log` from the end of the longest remembered prefix it shares, not from byte 0
(explore reads thousands of logs of one session; a walk from the start made it quadratic).
A writer's read is a reader's plus stricter rules, so a writer's prefix serves both.
Raw logs (compression "none") are remembered the same way, apart, by their committed lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

import attrs

SLOTS = 8  # remembered logs per kind of read
PROBES = 2  # the newest logs searched for a shorter shared prefix when none is a prefix


@attrs.frozen
class Prefix:
    """A log's leading ``data`` up to the end of a complete frame, and what it holds."""

    data: bytes
    header: dict[str, Any]
    records: tuple[dict[str, Any], ...]
    frames: tuple[tuple[int, int], ...]  # the header frame first
    counts: tuple[int, ...]  # records of each body frame

    def cut(self, frames: int) -> Prefix:
        """The first ``frames`` frames (at least the header frame)."""
        counts = self.counts[: frames - 1]
        return Prefix(self.data[: self.frames[frames - 1][1]], self.header, self.records[: sum(counts)], self.frames[:frames], counts)


_KNOWN: dict[bool, list[Prefix]] = {False: [], True: []}  # per writer flag, newest last
# raw logs (compression "none"): the committed lines, header line first (frames and counts
# empty); kept apart, so a raw read never starts from a zstd log's frames or the reverse
_RAW: dict[bool, list[Prefix]] = {False: [], True: []}


def clear() -> None:
    for known in (*_KNOWN.values(), *_RAW.values()):
        known.clear()


def longest(data: bytes, writer: bool, *, raw: bool = False) -> Prefix | None:
    """The longest remembered prefix ``data`` starts with (a writer's read only from a
    writer's); failing that, the longest run of whole frames it shares with a recent log."""
    kinds = _RAW if raw else _KNOWN
    candidates = kinds[True] if writer else kinds[False] + kinds[True]
    best = longest_of(candidates, data)
    if best is not None:
        return best
    for known in candidates[-PROBES:]:
        shared = _shared_frames(data, known)
        if shared and (best is None or shared > len(best.frames)):
            best = known.cut(shared)
    return best


class HasData(Protocol):
    @property
    def data(self) -> bytes: ...


P = TypeVar("P", bound=HasData)


def longest_of(candidates: Sequence[P], data: bytes) -> P | None:
    """The longest of ``candidates`` (remembered prefixes, the newest last) that ``data`` starts
    with.  Newest first: a growing log's newest prefix is its longest, so the older (shorter)
    ones are passed over on their length without comparing their bytes; ``>=`` keeps the
    earliest of equally long ones (equal lengths that both start ``data`` are the same bytes)."""
    best: P | None = None
    for known in reversed(candidates):
        if (best is None or len(known.data) >= len(best.data)) and starts_with(data, known.data):
            best = known
    return best


def keep(slots: list[P], prefix: P, size: int) -> None:
    """Remember ``prefix`` as the newest of ``slots`` (unless its bytes are there already),
    forgetting the oldest beyond ``size``."""
    if any(known.data == prefix.data for known in slots):
        return
    slots.append(prefix)
    if len(slots) > size:
        del slots[0]


TAIL = 32  # the last bytes of a remembered prefix, compared before all of it


def starts_with(data: bytes, prefix: bytes) -> bool:
    """``data.startswith(prefix)``, looking at the last :data:`TAIL` bytes of ``prefix`` first:
    the remembered logs of one session share all but their last frames, so a log that is not
    an extension of one parts from it near its end, and comparing every byte up to there, for
    every remembered log at every read, made the reads of a long session's recoveries grow
    with its length."""
    end = len(prefix)
    start = max(0, end - TAIL)
    return end <= len(data) and data[start:end] == prefix[start:] and data.startswith(prefix)


def _shared_frames(data: bytes, known: Prefix) -> int:
    """How many of ``known``'s leading frames ``data`` has byte for byte (binary search:
    sharing the first k frames implies sharing the first k - 1)."""
    low, high = 0, len(known.frames)  # data shares `low` frames; not more than `high`
    while low < high:
        middle = (low + high + 1) // 2
        end = known.frames[middle - 1][1]
        start = max(0, end - TAIL)
        if data[start:end] == known.data[start:end] and data.startswith(known.data[:end]):
            low = middle
        else:
            high = middle - 1
    return low


def remember(
    data: bytes,
    writer: bool,
    complete_end: int,
    header: dict[str, Any],
    records: tuple[dict[str, Any], ...],
    frames: tuple[tuple[int, int], ...],
    counts: tuple[int, ...],
    *,
    raw: bool = False,
) -> None:
    """A successful read of ``data``: its complete frames (``records`` without a torn tail's;
    ``raw``: its committed lines, ``complete_end`` where they end)."""
    prefix = data[:complete_end]
    keep((_RAW if raw else _KNOWN)[writer], Prefix(prefix, header, records, frames, counts), SLOTS)
