"""Known differences between the published DSH and dsh-sim: who is right, and why.

Each :class:`Finding` recognises the differences it explains.  A difference no finding
explains fails ``dsh-sim dsh diff``; where dsh-sim was wrong it was fixed instead of being
listed here.  ``reports/dsh-findings.md`` is written from this table plus the occurrences
(with their reproductions) of a run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs


@attrs.frozen
class Finding:
    id: str
    title: str
    right: str  # "dsh-sim", "DSH", or "both" (a deliberate design difference)
    why: str
    matches: Callable[[Any, dict[str, Any]], bool] = attrs.field(eq=False, repr=False)


def _refused_only_by_us(d: Any, c: dict[str, Any], klass: str) -> bool:
    mine = c["ours"].refusal
    return d.kind == "refusal" and c["theirs"].refusal is None and mine is not None and mine.klass == klass


def _drops_committed(d: Any, c: dict[str, Any]) -> bool:
    return c["compression"] == "none" and _refused_only_by_us(d, c, "committed-damage")


def _lists_unopenable(d: Any, c: dict[str, Any]) -> bool:
    mine = c["ours"].refusal
    return d.kind == "list" and c["theirs"].listed and not c["ours"].listed and mine is not None and mine.klass in ("version", "header")


def _depthless_header(d: Any, c: dict[str, Any]) -> bool:
    record = c.get("header_record")
    if not isinstance(record, dict) or "delegationDepth" in record or c["ours"].refusal is not None:
        return False
    theirs = c["theirs"].refusal
    return (d.kind == "list" and not c["theirs"].listed) or (d.kind == "refusal" and theirs is not None and theirs.klass == "header")


def _ignorable_unknown(d: Any, c: dict[str, Any]) -> bool:
    mine = c["ours"].refusal
    return _refused_only_by_us(d, c, "unknown-type") and mine is not None and mine.step == "migrate" and "ignorable" in mine.text


FINDINGS: tuple[Finding, ...] = (
    Finding(
        "DSH-1",
        "DSH silently drops committed records after a damaged JSONL line, and its repair truncates them away",
        "dsh-sim",
        "A crash tears only the last write, so a whole record after an unparsable or out-of-sequence line proves the damage "
        "is not a torn tail. DSH tolerates it unless one of the later records is a turn/end: load keeps the prefix, appends "
        "closers for an open turn and truncates the later committed records (an acknowledged tool/call can vanish and its "
        "verdict with it). dsh-sim refuses the log (committed damage) and leaves it untouched.",
        _drops_committed,
    ),
    Finding(
        "DSH-2",
        "DSH lists sessions it then refuses to open (foreign format version, relative cwd)",
        "dsh-sim",
        "DSH's list checks only the header's shape, not its version or cwd, so a session picker shows logs that every "
        "read refuses; dsh-sim lists a session only when its header is one it reads. Both refuse to read them.",
        _lists_unopenable,
    ),
    Finding(
        "DSH-3",
        "DSH refuses a v0 header without delegationDepth",
        "dsh-sim",
        "Headers written before the field existed omit it; its absence means depth 0 (what the writer defaults to). "
        "DSH 0.1.0-rc.8 calls such a header 'not a session header' and neither lists nor opens the log; dsh-sim reads it "
        "with delegationDepth 0.",
        _depthless_header,
    ),
    Finding(
        "DSH-4",
        "An ignorable event of unknown type: DSH keeps it, dsh-sim refuses to migrate it",
        "both",
        "DSH reads v0 and never renumbers, so it can carry an unknown ignorable event verbatim. dsh-sim migrates v0 to v3 "
        "(chunks fold into messages, seqs change) and cannot remap seq references inside a payload it does not know, so "
        "carrying it would silently corrupt it; refusing leaves the source unchanged.",
        _ignorable_unknown,
    ),
)


def explain(difference: Any, context: dict[str, Any]) -> str | None:
    for finding in FINDINGS:
        if finding.matches(difference, context):
            return finding.id
    return None


def by_id(finding_id: str) -> Finding:
    return next(f for f in FINDINGS if f.id == finding_id)
