"""The reference model of recovery: what the runtime must recover after a crash, exactly.

From the run's history — the events the crashed process held in memory, the events it had
acknowledged as durable — and the bytes the crash left on the disk, the spec determines the
outcome of a recovery completely:

* the **stored prefix**: what a reader recovers from those bytes (:func:`spec_log.read_recoverable`:
  complete frames, plus the complete records of a torn final frame).  It must lie between
  "everything acknowledged" and "everything the process wrote": every acknowledged event is
  in it, unchanged, and every event in it is one the process really had at that seq;
* the **closers** the spec's interrupted-turn repair appends to it (:mod:`spec_repair`),
  with their seqs, texts and verdicts.

The runtime's recovery is compared with this event for event (:func:`compare`), not through
a list of properties: any difference is a finding, whatever caused it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from dsh_sim.evidence.oracles import agreement, spec_repair
from dsh_sim.evidence.oracles.event_records import first_mismatch, records_of
from dsh_sim.evidence.oracles.grammar import Grammar
from dsh_sim.evidence.oracles.grammar import problems as grammar_problems
from dsh_sim.evidence.oracles.identity_memo import IdentityMemo
from dsh_sim.evidence.oracles.spec_log import read_recoverable
from dsh_sim.evidence.oracles.spec_records import SpecViolation


@attrs.frozen
class Expected:
    stored: tuple[dict[str, Any], ...]  # what a reader must recover (records)
    closers: tuple[dict[str, Any], ...]  # what repair must append
    refused: str | None = None  # the spec refuses these bytes (damage no crash produces)
    torn_start: int | None = None

    @property
    def verdicts(self) -> dict[str, str]:
        return spec_repair.verdicts(self.closers)


_MEMO_SIZE = 64
_EXPECTED: OrderedDict[tuple[bytes | None, str], Expected] = OrderedDict()
_PROBLEMS: OrderedDict[tuple[int, bytes, str, int], tuple[Expected, Sequence[Any], list[str]]] = OrderedDict()


def clear_memos() -> None:
    """Forget the remembered expectations (see :func:`crash_history_problems`)."""
    _EXPECTED.clear()
    _PROBLEMS.clear()
    _REPAIRED.clear()
    _AGREED.clear()


def _remember(memo: OrderedDict[Any, Any], key: Any, value: Any) -> None:
    memo[key] = value
    if len(memo) > _MEMO_SIZE:
        memo.popitem(last=False)


def expected_recovery(data: bytes | None, compression: str) -> Expected:
    """The recovery a crash that left ``data`` (``None``: no log file) must produce.

    Remembered per content: it is a function of the bytes alone, and explore recovers from
    the same log bytes in several states of a point (the cuts differ elsewhere on the disk)
    and at the points that change nothing on the disk."""
    key = (data, compression)
    known = _EXPECTED.get(key)
    if known is None:
        known = _expected_recovery(data, compression)
        _remember(_EXPECTED, key, known)
    return known


def _expected_recovery(data: bytes | None, compression: str) -> Expected:
    if data is None:
        return Expected((), ())
    try:
        log = read_recoverable(data, compression)
    except SpecViolation as err:
        return Expected((), (), refused=str(err))
    return Expected(log.records, tuple(spec_repair.closers(log.records)), torn_start=log.torn_start)


def crash_history_problems(expected: Expected, acked_bytes: bytes, compression: str, in_memory: Sequence[Any]) -> list[str]:
    """:func:`history_problems` of a crash: ``acked_bytes`` is the log as last acknowledged
    (its records are the acknowledged events; unreadable: none).  Remembered with the very
    objects it was computed from (the expectation above, a crash point's in-memory log),
    which every state of one point shares: the comparison walks the whole history."""
    key = (id(expected), acked_bytes, compression, id(in_memory))
    known = _PROBLEMS.get(key)
    if known is not None and known[0] is expected and known[1] is in_memory:
        return known[2]
    acked: tuple[dict[str, Any], ...] = ()
    if acked_bytes:
        try:
            acked = read_recoverable(acked_bytes, compression).records
        except SpecViolation:
            acked = ()
    if len(acked) <= len(expected.stored) and expected.stored[: len(acked)] == acked:
        # every acknowledged record is on the disk unchanged (the reader's records run from
        # seq 0 without a gap; compared in one go, most of them the very same objects)
        problems = history_problems(expected, {}, in_memory)
    else:
        problems = history_problems(expected, {r["seq"]: _Rec(r) for r in acked}, in_memory)
    _remember(_PROBLEMS, key, (expected, in_memory, problems))
    return problems


class _Rec:
    """An acknowledged record in the shape :func:`history_problems` reads."""

    def __init__(self, record: dict[str, Any]) -> None:
        self._record = record
        self.type = record["type"]

    def to_record(self) -> dict[str, Any]:
        return self._record


def history_problems(expected: Expected, acked: Mapping[int, Any], in_memory: Sequence[Any]) -> list[str]:
    """Where the bytes on disk contradict the history: an acknowledged event missing or
    changed, or a stored event the process never had at that seq."""
    problems: list[str] = []
    stored = expected.stored
    for seq in sorted(acked):
        if seq >= len(stored):
            problems.append(f"acknowledged event seq {seq} ({acked[seq].type}) is not on the disk: the medium holds {len(stored)} events")
            break
        if stored[seq] != acked[seq].to_record():
            problems.append(f"acknowledged event seq {seq} ({acked[seq].type}) is on the disk with other content")
            break
    shared = min(len(stored), len(in_memory))
    at = first_mismatch(stored[:shared], in_memory[:shared])
    if at is not None:
        problems.append(f"the disk holds {stored[at]['type']} at seq {at}, but the process had {in_memory[at].type} there")
    return problems


def first_difference(label: str, got: Sequence[dict[str, Any]], want: Sequence[dict[str, Any]]) -> str | None:
    """A sentence naming the first record where ``got`` differs from ``want`` (None: equal)."""
    if tuple(got) == tuple(want):
        return None  # the usual verdict, compared without a Python loop (records are compared alike)
    for index, (a, b) in enumerate(zip(got, want)):
        if a != b:
            keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            return f"{label} differ at position {index} (seq {b.get('seq')}): {a.get('type')} vs expected {b.get('type')}, fields {keys}"
    if len(got) != len(want):
        return f"{label}: {len(got)} recovered, {len(want)} expected"
    return None


def compare(expected: Expected, refused: BaseException | None, stored: Sequence[Any], closers: Sequence[Any]) -> list[str]:
    """Differences between the runtime's recovery (its stored prefix and closers as events,
    or the error it refused with) and the expected one."""
    if expected.refused is not None:
        return [] if refused is not None else [f"recovery accepted a log the spec refuses ({expected.refused})"]
    if refused is not None:
        return [f"recovery refused a log the spec recovers ({len(expected.stored)} events): {type(refused).__name__}: {refused}"]
    out = []
    if first_mismatch(expected.stored, stored) is not None:  # (the pairs remembered equal are not walked again)
        diff = first_difference("stored events", records_of(stored), expected.stored)
        if diff:
            out.append(diff)
    diff = first_difference("closers", [e.to_record() for e in closers], expected.closers)
    if diff:
        out.append(diff)
    return out


_REPAIRED: IdentityMemo[tuple[tuple[Any, ...], list[str]]] = IdentityMemo(1024)


def repaired_tail(expected: Expected, history: int = 0) -> tuple[tuple[Any, ...], list[str]]:
    """The last turn of the repaired log a crash must leave (stored records from its last
    turn/start, and the closers), and what the grammar finds in it, worded as the log-grammar
    invariant words it.  Remembered per expectation: the reference model hands out one per crash-image
    content, and explore recovers from one image in many states.  The findings depend on the
    stored records and the closers alone (a fresh grammar, no run state).

    ``history``: the first events are a seeded historical log's, which no live check judged and
    the runtime under test did not write (an old runtime, without the optional invariant
    companion, may have logged a ``todo/write`` between turns).  They are read for the state
    they leave — an open turn the repair must close — and only what follows them is judged."""
    return _REPAIRED.remember((expected,), history, _repaired_tail, expected, history)


def _split(expected: Expected, history: int) -> tuple[Grammar, tuple[Any, ...], tuple[Any, ...]]:
    """(grammar at the judged part, the historical part of the last turn, the judged part)."""
    grammar, start = Grammar.after(expected.stored)
    old = expected.stored[start:history] if start < history else ()
    grammar.read(old)
    judged = (*expected.stored[max(start, history) :], *expected.closers)
    return grammar, tuple(old), judged


def _repaired_tail(expected: Expected, history: int) -> tuple[tuple[Any, ...], list[str]]:
    grammar, old, judged = _split(expected, history)
    return (*old, *judged), grammar_problems(grammar, judged, closed=True, what="the repaired log")


_AGREED: IdentityMemo[list[agreement.Disagreement]] = IdentityMemo(1024)


def tail_disagreements(expected: Expected, ledger: Sequence[Any], workspace: str, history: int = 0) -> list[agreement.Disagreement]:
    """The world agreement of :func:`repaired_tail` with ``ledger``, judged by a fresh tracker
    (a seeded history's calls predate the world: they are read, not judged).

    That verdict is a function of the tail (of the expectation alone), of the ledger's
    entries and of the workspace, so it is remembered with all three: the expectation and the
    very entries (by identity), and the workspace.  Explore recovers from one image in many
    states of a point, whose worlds share those entries (a world's snapshot copies the ledger
    list, never an entry; entries are frozen and never changed in place)."""
    entries = tuple(ledger)
    return _AGREED.remember((expected, *entries), (workspace, history), _disagreements, expected, entries, workspace, history)


def _disagreements(expected: Expected, entries: tuple[Any, ...], workspace: str, history: int) -> list[agreement.Disagreement]:
    _, old, judged = _split(expected, history)
    tracker = agreement.Tracker(workspace=workspace)
    tracker.feed(old, entries)
    return tracker.feed(judged, entries)
