"""Both readers' answers, reduced to the same comparable shape (:class:`Outcome`).

What is compared is the v0 level, because that is what DSH rc.8 reads and writes: the
stored events of the valid prefix (canonical JSON, key order ignored), the closers a
recovery appends (``interruptedTurnClosers`` on DSH's side, :func:`runtime.session.repair.
interrupted_turn_closers` on ours), the verdicts they carry, and a refusal reduced to a
*class* (the texts differ in wrappers and paths, the classes must not).

dsh-sim's side is what its runtime does with a historical log: decode it with
:mod:`runtime.persistence.v0_format`, then migrate it (:func:`runtime.persistence.
migration.migrate_v0`), whose refusals count as refusals here.  It never writes the v0 file,
so "after load" exists on DSH's side only; it is checked against the bytes dsh-sim predicts
(:mod:`dsh_sim.dsh.diff`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, cast

import attrs

from runtime.persistence.layout import encode_segment, project_key
from runtime.persistence.log_format import LogCorruption, LogVersionUnsupported
from runtime.persistence.migration import MigrationRefused, migrate_v0
from runtime.persistence.v0_format import V0Log, V0Unsupported, decode_v0, v0_header_of
from runtime.persistence.v0_records import V0Event
from runtime.session.events import Event
from runtime.session.repair import interrupted_turn_closers, verdicts

# (class, pattern) in order; the first match names the refusal
_CLASSES: tuple[tuple[str, str], ...] = (
    ("not-found", r'session "[^"]*" not found'),
    ("version", r"uses log format v-?\d+|header identifies v-?\d+|log format v-?\d+"),
    ("unknown-type", r'event type "[^"]*" .*(unknown to this harness|not part of the v0 vocabulary)'),
    ("legacy", r"unsupported legacy|retired reason|is a retired format"),
    ("torn-record-in-frame", r"complete frame contains a torn JSONL record"),
    ("corrupt-frame", r"frame at byte \d+ failed validation|invalid frame magic|reserved frame-header bit|reserved block type"),
    ("committed-damage", r"unparsable committed event|seq gap in committed region"),
    (
        "header",
        r"empty or header-less|header line is not valid JSON|not a session header|not exactly one header line|header frame failed|retired policy|session header",
    ),
    ("identity", r"does not match header id|and cwd identify|identity mismatch|cannot name a storage path"),
    ("layout", r"flat-file layout|configured for compression|duplicate JSONL session id"),
)
_WRAPPER = re.compile(r'^stored session "[^"]*" failed validation: (?:Error: )?')


def refusal_class(text: str) -> str:
    inner = _WRAPPER.sub("", text)
    for name, pattern in _CLASSES:
        if re.search(pattern, inner):
            return name
    return "validation"


def canonical(record: Any) -> str:
    """Key-order-free JSON of one event, numbers as JavaScript holds them (JavaScript and
    Python agree on everything else)."""
    return json.dumps(_js_numbers(record), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _js_numbers(value: Any) -> Any:
    """A JavaScript number has no integer/float distinction: ``0.0`` and ``0`` are one value
    (``JSON.stringify(0.0)`` is ``"0"``), so an integral float compares as the integer."""
    if type(value) is float and value.is_integer() and abs(value) < 1e21:  # (JavaScript writes these without an exponent)
        return int(value)
    if isinstance(value, dict):
        return {key: _js_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_js_numbers(item) for item in value]
    return value


@attrs.frozen
class Refusal:
    klass: str
    text: str
    step: str  # which operation refused: decode/migrate (ours), readFrom/inspect/load (DSH)


@attrs.frozen
class Outcome:
    """One reader's answer for one log."""

    refusal: Refusal | None
    listed: bool  # the header is listed (list() / v0_header_of)
    events: tuple[str, ...] = ()  # the stored valid prefix, canonical JSON
    closers: tuple[str, ...] = ()  # what a recovery appends, canonical JSON
    verdicts: dict[str, str] = attrs.field(factory=dict)
    notes: tuple[str, ...] = ()  # internal inconsistencies of this reader (load vs inspect, ...)
    header: str | None = None  # the header it lists, canonical JSON (None: not listed)


def closer_verdicts(closers: Sequence[dict[str, Any]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for record in closers:
        error = record.get("data", {}).get("error") if record.get("type") == "tool/result" else None
        if isinstance(error, dict) and error.get("code") in ("TOOL_NOT_STARTED", "TOOL_OUTCOME_UNKNOWN"):
            out[record["data"]["message"]["source"]["callId"]] = error["code"]
    return out


# -- dsh-sim ---------------------------------------------------------------------------------


def v0_closers(events: Sequence[V0Event]) -> list[Event]:
    """Repair reads only ``type, seq, time, data``: a v0 event serves as well as a current one."""
    return interrupted_turn_closers(cast(Sequence[Event], events))


def listed_header(data: bytes, compression: str, location: tuple[str, str] | None = None) -> str | None:
    """The header dsh-sim lists for a v0 log, canonical and without ``type`` as DSH's ``list``
    shows it (``None``: not listed).  With ``location``, only where the header's id and cwd
    name that place, as the runtime's backend lists."""
    try:
        head = v0_header_of(data, compression)
    except (LogCorruption, LogVersionUnsupported, V0Unsupported):
        return None
    if head is None or (location is not None and (project_key(head.cwd), encode_segment(head.id)) != location):
        return None
    return canonical({k: v for k, v in head.to_record().items() if k != "type"})


def ours(data: bytes, compression: str, location: tuple[str, str] | None = None) -> tuple[Outcome, V0Log | None]:
    """dsh-sim's reading of one v0 log (the decoded log too, when there is one).

    ``location`` is (project directory name, session directory name) where the log was found:
    the runtime's backend refuses a header whose id and cwd name another place.
    """
    shown = listed_header(data, compression, location)
    listed = shown is not None
    try:
        log = decode_v0(data, compression)
    except LogVersionUnsupported as err:
        return Outcome(Refusal("version", f"log format v{err.version}", "decode"), listed, header=shown), None
    except (LogCorruption, V0Unsupported) as err:
        return Outcome(Refusal(refusal_class(str(err)), str(err), "decode"), listed, header=shown), None
    if location is not None:
        expected = (project_key(log.header.cwd), encode_segment(log.header.id))
        if expected != location:
            text = f'header id "{log.header.id}" and cwd identify {"/".join(expected)}, not {"/".join(location)}'
            return Outcome(Refusal("identity", text, "decode"), listed, header=shown), log
    try:
        migrate_v0(log)
    except MigrationRefused as err:
        return Outcome(Refusal(refusal_class(str(err)), str(err), "migrate"), listed, header=shown), log
    closers = v0_closers(log.events)
    return (
        Outcome(
            None,
            listed,
            tuple(canonical(e.to_record()) for e in log.events),
            tuple(canonical(e.to_record()) for e in closers),
            verdicts(closers),
            header=shown,
        ),
        log,
    )


# -- DSH -------------------------------------------------------------------------------------


def dsh(probe: dict[str, Any]) -> Outcome:
    """DSH's reading from one bridge ``probe`` (list, readFrom, inspect, load, load again)."""
    mine = [h for h in probe["list"]["value"] if h.get("id") == probe.get("id")] if probe["list"]["ok"] else []
    listed = bool(mine)
    header = canonical(mine[0]) if mine else None
    for step in ("readFrom", "inspect", "load"):
        result = probe.get(step)
        if result is not None and not result["ok"]:
            text = str(result["error"].get("message", ""))
            return Outcome(Refusal(refusal_class(text), text, step), listed, header=header)
    stored = probe["readFrom"]["value"]
    inspected = probe["inspect"]["value"]
    loaded = probe["load"]["value"]
    notes = []
    if [canonical(e) for e in inspected] != [canonical(e) for e in loaded]:
        notes.append("load returned other events than inspect")
    reload = probe["reload"]
    if not reload["ok"] or [canonical(e) for e in reload["value"]] != [canonical(e) for e in loaded]:
        notes.append("a second load did not return what the first returned")
    if [canonical(e) for e in loaded[: len(stored)]] != [canonical(e) for e in stored]:
        notes.append("load changed stored events")
    closers = loaded[len(stored) :]
    return Outcome(
        None,
        listed,
        tuple(canonical(e) for e in stored),
        tuple(canonical(e) for e in closers),
        closer_verdicts(closers),
        tuple(notes),
        header,
    )
