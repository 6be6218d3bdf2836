"""Known differences between the published DSH and dsh-sim: who is right, and why.

Each :class:`Finding` recognises the differences it explains.  A difference no finding
explains fails ``dsh-sim dsh diff``; where dsh-sim was wrong it was fixed instead of being
listed here.  ``reports/dsh-findings.md`` is written from this table plus the occurrences
(with their reproductions) of a run.
"""

from __future__ import annotations

import json
import math
import re
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
    """Only where DSH really dropped records: it read fewer events than the file holds."""
    return c["compression"] == "none" and _refused_only_by_us(d, c, "committed-damage") and len(c["theirs"].events) < c["records"]


def _names_another_place(d: Any, c: dict[str, Any]) -> bool:
    record = c.get("header_record")
    if d.kind != "refusal-class" or not isinstance(record, dict):
        return False
    theirs, mine = c["theirs"].refusal, c["ours"].refusal
    bad_id = not (isinstance(record.get("id"), str) and record["id"])
    bad_cwd = "cwd" in record and not (isinstance(record["cwd"], str) and record["cwd"].startswith("/"))
    named = ("session header id" in mine.text and bad_id) or (" cwd " in mine.text and bad_cwd)
    return theirs.klass == "identity" and mine.klass == "header" and named


_V0_HEADER_KEYS = {"type", "version", "id", "createdAt", "cwd", "parentSession", "seedLength", "origin", "delegationDepth", "agentPreset"}


def _events_by_seq(c: dict[str, Any]) -> dict[int, Any]:
    out = {}
    for text in c["theirs"].events:
        event = json.loads(text)
        out[event.get("seq")] = event
    return out


def _turn_step(event: Any) -> tuple[Any, Any]:
    data = event.get("data") if isinstance(event, dict) else None
    return (data.get("turn"), data.get("step")) if isinstance(data, dict) else (None, None)


def _cites_other_step(c: dict[str, Any], message: int, chunk: int) -> bool:
    events = _events_by_seq(c)
    m, k = events.get(message), events.get(chunk)
    return m is not None and k is not None and k.get("type") == "assistant/chunk" and _turn_step(k) != _turn_step(m)


def _cites_unclaimable(c: dict[str, Any], message: int, cited: int) -> bool:
    events = _events_by_seq(c)
    k = events.get(cited)
    if k is None or k.get("type") != "assistant/chunk" or cited >= message:
        return message in events
    earlier = (e for seq, e in events.items() if seq < message and e.get("type") == "assistant/message")
    return any(cited in (e.get("sourceEventSeqs") or ()) for e in earlier)


def _cites_folded_chunk(c: dict[str, Any], seq: int, cited: int) -> bool:
    """The event at ``seq`` refers to an earlier assistant/chunk, which v3 folds into its message."""
    events = _events_by_seq(c)
    k = events.get(cited)
    return seq in events and k is not None and k.get("type") == "assistant/chunk" and cited < seq


def _surface_before_first_step(c: dict[str, Any], seq: int) -> bool:
    """The event at ``seq`` is a surface event before any step/start, and the log carries a system
    prompt (which v3 makes surface node 0, inside the first step)."""
    events = _events_by_seq(c)
    event = events.get(seq)
    if event is None or "surfaceOp" not in event:
        return False
    before = [e for s, e in events.items() if s < seq]
    prompts = any(
        isinstance(e.get("data"), dict) and isinstance(e["data"].get("header"), dict) and e["data"]["header"].get("system")
        for e in events.values()
    )
    return prompts and not any(e.get("type") == "step/start" for e in before)


def _outside_lossless(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_outside_lossless(v) for v in value.values())
    if isinstance(value, list):
        return any(_outside_lossless(v) for v in value)
    if type(value) is int:
        return abs(value) > 2**53 - 1
    return type(value) is float and (not math.isfinite(value) or (value == 0 and math.copysign(1.0, value) < 0))


def _checked_reason(c: dict[str, Any], text: str) -> bool:
    """The refusal's reason is true of the log itself (read from DSH's events and the header),
    so a migration that refuses a log it could migrate is never explained by DSH-7."""
    record = c.get("header_record")
    if re.search(r"the v0 session header has members \[[^]]*\] this build cannot migrate", text):
        return isinstance(record, dict) and bool(set(record) - _V0_HEADER_KEYS)
    if m := re.search(r"assistant/message at seq (\d+) cites chunk seq (\d+) of another turn or step", text):
        return _cites_other_step(c, int(m[1]), int(m[2]))
    if m := re.search(r"assistant/message at seq (\d+) cites seq (\d+), which is not an unclaimed earlier assistant/chunk", text):
        return _cites_unclaimable(c, int(m[1]), int(m[2]))
    if m := re.search(r"\S+ at seq (\d+) refers to seq (\d+), which is not an earlier event that survives migration", text):
        return _cites_folded_chunk(c, int(m[1]), int(m[2]))
    if m := re.search(r"\S+ at seq (\d+) precedes the first step/start, so the system prompt cannot become surface node 0", text):
        return _surface_before_first_step(c, int(m[1]))
    if m := re.search(r"the header's seedLength (\d+) exceeds the (\d+) stored events", text):
        return int(m[1]) > len(c["theirs"].events)
    if re.search(r"cannot be written as v3: .* not losslessly JSON-serializable", text):
        log = c.get("log")
        return log is not None and any(_outside_lossless(e.data) for e in log.events)
    return False


def _not_migratable(d: Any, c: dict[str, Any]) -> bool:
    mine = c["ours"].refusal
    return d.kind == "refusal" and c["theirs"].refusal is None and mine is not None and _checked_reason(c, mine.text)


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
    Finding(
        "DSH-6",
        "A header whose id or cwd cannot name the log's place: DSH refuses it for the place, dsh-sim for the field",
        "both",
        "DSH locates a log from its header (id and cwd name the project and session directories) before it validates "
        "the header's fields, so an empty id or a cwd that is not an absolute path is refused as naming another place. "
        "dsh-sim validates the header first and names the field. Both refuse the log and leave it unchanged.",
        _names_another_place,
    ),
    Finding(
        "DSH-7",
        "A v0 log DSH reads that no v3 generation can hold faithfully: dsh-sim refuses to migrate it",
        "both",
        "DSH rc.8 reads v0 and never rewrites it, so it keeps what v3 cannot express: header members outside the v0 set, "
        "an assistant/message citing chunks of another turn or step or events that are not its chunks, another event "
        "citing a chunk (v3 folds a message's chunks into it), a seedLength past the end of the log (v3 marks the inherited end-seed), numbers "
        "outside v3's lossless range. Carrying any of them into v3 would silently change the session, so dsh-sim refuses "
        "the migration and leaves the source unchanged.",
        _not_migratable,
    ),
)


def explain(difference: Any, context: dict[str, Any]) -> str | None:
    for finding in FINDINGS:
        if finding.matches(difference, context):
            return finding.id
    return None


def by_id(finding_id: str) -> Finding:
    return next(f for f in FINDINGS if f.id == finding_id)
