"""The reference runtime's v0 log format: decode it (spec §3.3–§3.7), and write it for fixtures.

A v0 generation is ``session.jsonl[.zstd]``: a header line with ``version: 0`` and an optional
``seedLength``, then one storage record per line — an event verbatim, or a *packed row*
(``text-chunks`` / ``reasoning-chunks`` / ``tool-call-chunks``) standing for a run of
``assistant/chunk`` events.  Reading is layout-blind: packed and unpacked files decode to the
same events.  Torn tails follow the reference scanner where it is safe: an unparsable record
(a malformed packed row counts as one) or a seq gap as the *last* line is a tolerated crash
tail, but a whole record after it proves committed damage and is refused (the reference keeps
reading unless that record is a ``turn/end``, and drops committed records); a torn final zstd frame keeps the complete records of its partial plaintext.
Inside complete zstd frames there is no crash tail: such a record is refused, as the reference
refuses it (found by the differential against the published DSH, ``dsh-sim dsh diff``).

This module holds the header, the scanner and whole files; one record's reading is
:mod:`runtime.persistence.v0_records`.  It only decodes to v0 events (:class:`V0Event`, whose
``surfaceOp`` keeps the v0 spelling); :mod:`runtime.persistence.migration` turns them into current events.  The runtime
never writes v0: the reference-compatible writer the simulator and the tests use to build
historical sources is :func:`dsh_sim.scenario.v0_writer.encode_v0`.
"""

from __future__ import annotations

from typing import Any

import attrs

from runtime.persistence.log_records import (
    LogCorruption,
    LogVersionUnsupported,
    Unparsable,
    frame_lines,
    load_json,
    one_header_line,
    torn_lines,
)
from runtime.persistence.v0_records import SeqNotNext, V0Event, is_js_number, js_count, js_number, records_of
from runtime.persistence.zstd_frames import (
    FrameFormatError,
    decode_frame,
    decode_torn_frame,
    first_frame,
    new_decompressor,
    scan_frames,
)

V0_VERSION = 0

# KNOWN_SESSION_EVENT_TYPES of the reference runtime at format v0 (spec §1.4, 48 names).
V0_EVENT_TYPES: frozenset[str] = frozenset(
    [
        "agent-preset/selected",
        "agent/inbox/spliced",
        "approval/asked",
        "approval/decided",
        "approval/policy",
        "assistant/chunk",
        "assistant/message",
        "command/done",
        "command/run",
        "compaction/end",
        "compaction/prune",
        "compaction/start",
        "compaction/summary",
        "feedback/record",
        "goal/change",
        "hook/invoked",
        "hook/result",
        "llm/retry",
        "llm/retry-started",
        "permission/preset",
        "plan/mode",
        "request/context",
        "request/header",
        "sandbox/mode",
        "schedule/change",
        "session/end-seed",
        "session/title",
        "session/title-llm-request",
        "step/end",
        "step/start",
        "subagent/descriptor",
        "team/member",
        "team/message/delivered",
        "team/message/queued",
        "team/task",
        "todo/write",
        "tool-workflow/agent-end",
        "tool-workflow/agent-start",
        "tool-workflow/run-end",
        "tool-workflow/run-start",
        "tool/call",
        "tool/code-dispatch",
        "tool/code-dispatch-start",
        "tool/result",
        "turn/end",
        "turn/start",
        "user/message",
        "web/deepseek-search-llm-request",
    ]
)
_HEADER_KEYS = ("type", "version", "id", "createdAt", "cwd", "parentSession", "seedLength", "origin", "delegationDepth", "agentPreset")


class V0Unsupported(ValueError):
    """A well-formed v0 artifact in a shape this build cannot migrate faithfully."""


@attrs.frozen
class V0Header:
    id: str
    created_at: int
    cwd: str | None = None
    parent_session: str | None = None
    seed_length: int | None = None
    origin: str | None = None
    delegation_depth: int = 0
    agent_preset: str | None = None

    def to_record(self) -> dict[str, Any]:
        """The header line in the reference writer's key order."""
        record: dict[str, Any] = {"type": "session", "version": V0_VERSION, "id": self.id, "createdAt": self.created_at}
        for key, value in (
            ("cwd", self.cwd),
            ("parentSession", self.parent_session),
            ("seedLength", self.seed_length),
            ("origin", self.origin),
        ):
            if value is not None:
                record[key] = value
        record["delegationDepth"] = self.delegation_depth
        if self.agent_preset is not None:
            record["agentPreset"] = self.agent_preset
        return record


@attrs.frozen
class V0Torn:
    truncate_to: int  # where the torn tail starts in the source (which is never truncated)
    recovered: int  # complete records kept from a torn final zstd frame
    torn_bytes: int


@attrs.frozen
class V0Log:
    header: V0Header
    events: tuple[V0Event, ...]  # the valid prefix, seqs 0..n-1
    torn: V0Torn | None


# -- header ---------------------------------------------------------------------------------


def parse_v0_header(line: bytes) -> V0Header:
    """Validate the header line the way the reference reader does (spec §3.3: a foreign version
    is refused before the shape is looked at; ``isHeaderLine``, then ``validateHeader``)."""
    try:
        record = load_json(line)
    except ValueError:
        raise LogCorruption("corrupt session log: header line is not valid JSON") from None
    if type(record) is dict and is_js_number(record.get("version")) and record["version"] != V0_VERSION:
        raise LogVersionUnsupported(js_number(record["version"]))
    if type(record) is not dict or record.get("type") != "session" or not is_js_number(record.get("version")):
        raise LogCorruption("corrupt session log: first line is not a session header")
    if "sandboxMode" in record or "approvalPolicy" in record:
        raise LogCorruption("corrupt session log: session header uses retired policy baseline fields")
    if type(record.get("id")) is not str or not record["id"]:
        raise LogCorruption("corrupt session log: session header id must be a non-empty string")
    created_at = js_count(record.get("createdAt"), minus_zero=False)
    if created_at is None:
        raise LogCorruption("corrupt session log: session header createdAt must be a non-negative safe integer")
    depth = js_count(record.get("delegationDepth", 0), minus_zero=False)  # legacy headers predate the field
    if depth is None:
        raise LogCorruption("corrupt session log: session header delegationDepth must be a non-negative safe integer")
    if "origin" in record and record["origin"] != "subagent":
        raise LogCorruption('corrupt session log: session header origin must be absent or "subagent"')
    for key in ("cwd", "parentSession", "agentPreset"):
        if key in record and type(record[key]) is not str:
            raise LogCorruption(f"corrupt session log: session header {key} must be a string")
    seed_length = None
    if "seedLength" in record:
        seed_length = js_count(record["seedLength"])
        if seed_length is None:
            raise LogCorruption("corrupt session log: session header seedLength must be a non-negative safe integer")
    extra = sorted(set(record) - set(_HEADER_KEYS))
    if extra:
        raise V0Unsupported(f"the v0 session header has members {extra} this build cannot migrate")
    cwd = record.get("cwd")
    if cwd is not None and not cwd.startswith("/"):
        raise V0Unsupported(f"the v0 session header cwd {cwd!r} is not absolute; the current format requires an absolute cwd")
    return V0Header(
        id=record["id"],
        created_at=created_at,
        cwd=cwd,
        parent_session=record.get("parentSession"),
        seed_length=seed_length,
        origin=record.get("origin"),
        delegation_depth=depth,
        agent_preset=record.get("agentPreset"),
    )


class _Scanner:
    """The reference ``SessionLogScanner``: contiguous prefix, tolerated crash tail."""

    def __init__(self, *, raw: bool) -> None:
        self.events: list[V0Event] = []
        self.issue: str | None = None
        self.line = 1
        self.raw = raw  # in zstd, damage inside complete frames is refused once they are all read

    def feed(self, line: bytes) -> bool:
        """Scan one record; ``True`` when it joined the committed prefix."""
        self.line += 1
        try:
            members = records_of(line)
        except Unparsable:
            self.issue = self.issue or f"corrupt session log: unparsable committed event at line {self.line}"
            return False
        except SeqNotNext as gap:
            return self._gap(gap.got, gap.kind == "turn/end")
        except LogCorruption as err:
            if self.issue is not None:
                return False  # a broken object inside the crash tail proves nothing
            raise LogCorruption(f"corrupt session log: invalid committed event at line {self.line}: {err}") from None
        if self.issue is None and members[0].seq != len(self.events):
            return self._gap(members[0].seq, any(m.type == "turn/end" for m in members))
        if self.issue is not None:
            self._after_damage(any(m.type == "turn/end" for m in members))
            return False
        self.events.extend(members)
        return True

    def _gap(self, got: Any, turn_end: bool) -> bool:
        if self.issue is not None:
            self._after_damage(turn_end)
            return False
        self.issue = f"corrupt session log: seq gap in committed region at line {self.line} (expected {len(self.events)}, got {got})"
        if turn_end:
            raise LogCorruption(self.issue)  # a turn/end at a gapped seq: the damage is committed
        return False

    def _after_damage(self, turn_end: bool) -> None:
        # A whole record after the damage proves it is not a torn tail: a crash tears only
        # the last write, and an fsynced append never follows unrepaired damage.  The
        # reference tolerates this unless the record is a turn/end, and its repair then
        # truncates the later committed records away; dsh-sim refuses instead (finding
        # DSH-1 of the differential, docs/differential.md).
        if self.raw or turn_end:
            assert self.issue is not None
            raise LogCorruption(self.issue)


# -- whole files ----------------------------------------------------------------------------


def decode_v0(data: bytes, compression: str) -> V0Log:
    """Header and valid prefix of a v0 generation (never writes, never repairs)."""
    return _decode_zstd(data) if compression == "zstd" else _decode_raw(data)


def _decode_raw(data: bytes) -> V0Log:
    end = data.find(b"\n")
    if end < 0:
        raise LogCorruption("empty or header-less session log")
    header = parse_v0_header(data[:end])
    scanner = _Scanner(raw=True)
    committed = pos = end + 1
    while (nl := data.find(b"\n", pos)) >= 0:
        if scanner.feed(data[pos:nl]):
            committed = nl + 1
        pos = nl + 1
    torn = V0Torn(committed, 0, len(data) - committed) if committed < len(data) else None
    return V0Log(header, tuple(scanner.events), torn)


def _decode_zstd(data: bytes) -> V0Log:
    decompressor = new_decompressor()
    try:
        scan = scan_frames(data)
        if not scan.frames:
            raise LogCorruption("empty or header-less Zstandard session log")
        head = decode_frame(data[: scan.frames[0][1]], 0, decompressor)
        header = parse_v0_header(one_header_line(head))
        scanner = _Scanner(raw=False)
        for start, end in scan.frames[1:]:
            plaintext = decode_frame(data[start:end], start, decompressor)
            for line in frame_lines(plaintext) if plaintext else ():  # an empty frame holds no record
                scanner.feed(line)
        if scanner.issue is not None:
            # a checksummed frame is whole: an unparsable or out-of-sequence record inside one was
            # written that way, not torn by a crash (the reference refuses it the same way)
            raise LogCorruption("corrupt Zstandard session log: complete frame contains a torn JSONL record")
    except FrameFormatError as err:
        raise LogCorruption(str(err)) from None
    torn = None
    if scan.torn_start is not None:
        partial = decode_torn_frame(data[scan.torn_start :], decompressor)  # decoder errors: nothing recovered
        before = len(scanner.events)
        if scanner.issue is None:
            for line in torn_lines(partial):
                try:
                    if not scanner.feed(line):
                        break
                except LogCorruption:
                    break
        torn = V0Torn(scan.torn_start, len(scanner.events) - before, len(data) - scan.torn_start)
    return V0Log(header, tuple(scanner.events), torn)


def v0_header_of(data: bytes, compression: str) -> V0Header | None:
    """The header alone, from a prefix of the file (listing); ``None`` while incomplete."""
    if compression == "none":
        end = data.find(b"\n")
        return None if end < 0 else parse_v0_header(data[:end])
    try:
        layout = first_frame(data)
        if layout is None:
            return None
        head = decode_frame(data[: layout.end], 0)
    except FrameFormatError:
        raise LogCorruption("corrupt Zstandard session log: header frame failed validation") from None
    return parse_v0_header(one_header_line(head))
