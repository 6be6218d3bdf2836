"""Historical generations: migrate a v0 log to current events (pure, no I/O).

**Event migration** (:func:`migrate_v0`, pure and deterministic, spec §10.1).  Source events
keep their relative order and times; the target is renumbered densely from 0:

* ``assistant/chunk`` events disappear.  The chunks an ``assistant/message`` cites in its
  ``sourceEventSeqs`` become its ``stream`` records ``{type:'chunk', time, chunk}`` (one per
  chunk, token boundaries kept) and the message loses ``sourceEventSeqs``.  Chunks no message
  claims (a stream cut by a crash, a retried attempt) become one log-only ``assistant/attempt
  {turn, step, stream}`` at the position of the attempt's last chunk.
* A non-empty system prompt in ``request/header.data.header.system`` becomes surface node 0:
  a ``system/message`` appended right after the first ``step/start`` (holding the prompt of
  that step's first request), and a ``system/message`` replacing that head immediately before
  any later request whose prompt differs.  ``system`` is removed from every request header.
  Logs that never name a prompt get no system event.  A prompt change outside an open step,
  or a surface event before the first step, cannot be placed faithfully and is refused.
* ``seedLength: n`` becomes ``isSeeded: true`` plus the inherited cut marker: the source
  ``session/end-seed`` at seq ``n`` gains ``inherited: true``, or one is inserted there.
* Every same-log reference is remapped through the old→new seq map: surface
  ``sourceEventSeqs``, v0 replace ``{op, start, end}`` → v3 ``{op, startSeq, endSeq}``,
  ``command/done.sourceEventSeq``, compaction ``shadowedRange``/``shadowedSeqs``, title
  ``messageSeqs``.  A reference to a folded chunk or to a later event is refused.
* ``tool/code-dispatch*`` → ``tool/ptc-dispatch*``, preset ``code`` → ``ptc``, plugin
  ``tools-code-mode`` → ``tools-ptc``; ``turn/start.trigger`` is dropped.

Anything else that cannot be carried over faithfully raises :class:`MigrationRefused`.

Publication of the migrated generation lives in :mod:`runtime.persistence.publication`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import attrs

from runtime.persistence.header import HeaderError, SessionHeader
from runtime.persistence.log_format import GenerationMismatch
from runtime.persistence.v0_format import V0_EVENT_TYPES, V0Header, V0Log
from runtime.persistence.v0_records import V0Event
from runtime.persistence.verify import replay_surface
from runtime.session.events import EnvelopeError, Event

SYSTEM_PLUGIN = "@deepseek-ai/dsh-system-prompt"
_SURFACE = ("user/message", "assistant/message", "tool/result")  # v0 surface types
_RENAMED = {"tool/code-dispatch": "tool/ptc-dispatch", "tool/code-dispatch-start": "tool/ptc-dispatch-start"}
_LEGACY = ("request/header-delta", "mode/set")
_SETTLES_ATTEMPT = frozenset({"assistant/message", "llm/retry", "llm/retry-started", "step/end", "turn/end"})


class MigrationRefused(ValueError):
    """The source is well-formed but cannot be migrated faithfully."""


@attrs.frozen
class MigratedLog:
    header: SessionHeader  # the v3 header
    events: tuple[Event, ...]  # current events, seqs 0..n-1
    source_events: int  # events in the source's valid prefix


# -- event migration ------------------------------------------------------------------------


def current_header(h: V0Header) -> SessionHeader:
    """The v3 header of a v0 source: ``seedLength > 0`` becomes ``isSeeded``, preset code → ptc."""
    header = SessionHeader(
        id=h.id,
        created_at=h.created_at,
        cwd=h.cwd,
        parent_session=h.parent_session,
        is_seeded=bool(h.seed_length),
        origin=h.origin,
        delegation_depth=h.delegation_depth,
        agent_preset="ptc" if h.agent_preset == "code" else h.agent_preset,
    )
    try:
        header.validate()
    except HeaderError as err:
        raise MigrationRefused(f"the migrated header is invalid: {err}") from None
    return header


def _system_of(event: V0Event) -> str:
    data = event.data
    header = data.get("header") if type(data) is dict else None
    if type(header) is not dict:
        raise MigrationRefused(f"request/header at seq {event.seq} has no header object")
    if data.get("reason") == "fallback":
        raise MigrationRefused(f'request/header at seq {event.seq} uses the retired reason "fallback"')
    system = header.get("system", "")
    if type(system) is not str:
        raise MigrationRefused(f"request/header at seq {event.seq} has a non-string system prompt")
    return system


def _system_id(session_id: str, anchor: V0Event) -> str:
    key = json.dumps(["session-format-v0-to-v3", session_id, anchor.seq, anchor.type], separators=(",", ":"))
    return "v0-to-v3-system-" + hashlib.sha256(key.encode()).hexdigest()


class _Migration:
    """One pass over the source; ``out`` grows densely while ``seq_map`` records survivors."""

    def __init__(self, log: V0Log) -> None:
        self.log = log
        self.events = log.events
        self.by_seq = {e.seq: e for e in log.events}
        self.out: list[Event] = []
        self.seq_map: dict[int, int] = {}
        self.claimed: dict[int, int] = {}  # chunk seq -> message seq
        self.attempt_end: dict[int, list[V0Event]] = {}  # last chunk seq -> the attempt's chunks
        self.message_ids: set[str] = set()

    def refuse(self, event: V0Event, why: str) -> MigrationRefused:
        return MigrationRefused(f"{event.type} at seq {event.seq} {why}")

    def scan(self) -> None:
        """Vocabulary, chunk claims, unclaimed attempts and message ids, before any output."""
        attempt: list[V0Event] = []
        for event in self.events:
            if event.type in _LEGACY:  # the reference names retired shapes before the vocabulary
                raise MigrationRefused(f"contains unsupported legacy {event.type} event at seq {event.seq}")
            if event.type == "request/header" and type(event.data) is dict and event.data.get("reason") == "fallback":
                raise MigrationRefused(f'contains unsupported legacy request/header reason "fallback" at seq {event.seq}')
            if event.type not in V0_EVENT_TYPES:
                why = (
                    "is marked ignorable but is not part of the v0 vocabulary, so its payload cannot be renumbered"
                    if event.ignorable
                    else "is unknown to this harness and not marked ignorable (written by a newer harness?)"
                )
                raise MigrationRefused(f'event type "{event.type}" (seq {event.seq}) {why}')
            data = event.data
            if event.type in ("assistant/chunk", "assistant/message") and (type(data) is not dict or not {"turn", "step"} <= set(data)):
                raise self.refuse(event, "has no {turn, step} payload")
            if event.type == "assistant/message":
                for seq in event.source_event_seqs or ():
                    chunk = self.by_seq.get(seq)
                    if chunk is None or chunk.type != "assistant/chunk" or seq >= event.seq or seq in self.claimed:
                        raise self.refuse(event, f"cites seq {seq}, which is not an unclaimed earlier assistant/chunk")
                    if (chunk.data["turn"], chunk.data["step"]) != (data["turn"], data["step"]):
                        raise self.refuse(event, f"cites chunk seq {seq} of another turn or step")
                    self.claimed[seq] = event.seq
            message = data.get("message", data) if type(data) is dict else None
            if event.type in _SURFACE and type(message) is dict and "id" in message:
                self.message_ids.add(str(message["id"]))
        for event in self.events:  # claims are known now: group the unclaimed chunks
            data = event.data
            if event.type == "assistant/chunk" and event.seq not in self.claimed:
                if attempt and (attempt[0].data["turn"], attempt[0].data["step"]) != (data["turn"], data["step"]):
                    self.attempt_end[attempt[-1].seq], attempt = attempt, []
                attempt.append(event)
            elif event.type in _SETTLES_ATTEMPT and attempt:
                self.attempt_end[attempt[-1].seq], attempt = attempt, []
        if attempt:
            self.attempt_end[attempt[-1].seq] = attempt

    def map(self, event: V0Event, seq: Any) -> int:
        if type(seq) is not int or seq not in self.seq_map:
            raise self.refuse(event, f"refers to seq {seq!r}, which is not an earlier event that survives migration")
        return self.seq_map[seq]

    def emit(
        self,
        kind: str,
        time: int,
        data: Any,
        *,
        ignorable: bool = False,
        op: Any = None,
        sources: Any = None,
        source: V0Event | None = None,
    ) -> int:
        event = Event(kind, len(self.out), time, data, ignorable, op, tuple(sources) if sources is not None else None)
        try:
            event = Event.from_record(event.to_record())  # the same checks a v3 read applies
        except EnvelopeError as err:
            where = f"source seq {source.seq}" if source is not None else f"inserted at seq {event.seq}"
            raise MigrationRefused(f"{kind} ({where}) cannot be written as v3: {err}") from None
        if source is not None:
            self.seq_map[source.seq] = event.seq
        self.out.append(event)
        return event.seq

    def stream(self, chunks: list[V0Event]) -> list[dict[str, Any]]:
        return [{"type": "chunk", "time": c.time, "chunk": c.data.get("chunk")} for c in chunks]

    def system(self, anchor: V0Event, step: V0Event, prompt: str, head: int | None) -> int:
        """A system head (``head is None``) or a replacement of the current head."""
        message_id = _system_id(self.log.header.id, anchor)
        if message_id in self.message_ids:
            raise self.refuse(anchor, f"would get the system message id {message_id}, which the log already uses")
        content = [{"type": "text", "text": prompt}] if prompt else []
        message = {"id": message_id, "role": "system", "content": content, "source": {"kind": "plugin", "plugin": SYSTEM_PLUGIN}}
        data = {"turn": step.data.get("turn"), "step": step.data.get("step"), "message": message}
        if head is None:
            return self.emit("system/message", anchor.time, data, op="append")
        return self.emit("system/message", anchor.time, data, op={"op": "replace", "startSeq": head, "endSeq": head}, sources=[head])

    def transform(self, event: V0Event) -> None:
        kind, data = _RENAMED.get(event.type, event.type), event.data
        if kind == "request/header-delta":
            raise self.refuse(event, "is a retired format")
        op: Any = None
        sources: Any = None
        if kind in _SURFACE:
            op, sources = self.surface(event)
        elif event.surface_op is not None or event.source_event_seqs is not None:
            raise self.refuse(event, "is log-only but carries surface metadata")
        if type(data) is dict:
            data = self.payload(event, kind, dict(data))
        if kind == "assistant/message":
            if "stream" in data:
                raise self.refuse(event, "already has a stream member")
            data["stream"] = self.stream([self.by_seq[s] for s in event.source_event_seqs or ()])
            sources = None  # the chunks it cited are embedded now
        self.emit(kind, event.time, data, ignorable=event.ignorable, op=op, sources=sources, source=event)

    def surface(self, event: V0Event) -> tuple[Any, Any]:
        op = event.surface_op
        if op is None:
            raise self.refuse(event, "has no surfaceOp; v3 requires placement on every surface event")
        if op != "append":
            if type(op) is not dict or set(op) != {"op", "start", "end"} or op["op"] != "replace":
                raise self.refuse(event, f"has a surfaceOp {op!r} that is not the v0 spelling")
            op = {"op": "replace", "startSeq": self.map(event, op["start"]), "endSeq": self.map(event, op["end"])}
        sources: Sequence[int] | None = event.source_event_seqs
        if event.type != "assistant/message" and sources is not None:
            sources = [self.map(event, s) for s in sources]
        return op, sources

    def payload(self, event: V0Event, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        """Remap declared same-log references and rename retired vocabulary (shallow copies)."""
        if kind == "turn/start":
            data.pop("trigger", None)
        elif kind == "request/header":
            data["header"] = {k: v for k, v in data["header"].items() if k != "system"}
        elif kind == "agent-preset/selected" and data.get("agentPreset") == "code":
            data["agentPreset"] = "ptc"
        elif kind == "user/message":
            data["source"] = _ptc_source(data.get("source"))
        elif kind == "agent/inbox/spliced" and type(data.get("inserted")) is list:
            data["inserted"] = [dict(m, source=_ptc_source(m.get("source"))) if type(m) is dict else m for m in data["inserted"]]
        elif kind == "command/done" and "sourceEventSeq" in data:
            data["sourceEventSeq"] = self.map(event, data["sourceEventSeq"])
        elif kind in ("compaction/summary", "compaction/prune"):
            shadowed = data.get("shadowedRange")
            if type(shadowed) is dict:
                data["shadowedRange"] = dict(
                    shadowed, start=self.map(event, shadowed.get("start")), end=self.map(event, shadowed.get("end"))
                )
            if type(data.get("shadowedSeqs")) is list:
                data["shadowedSeqs"] = [self.map(event, s) for s in data["shadowedSeqs"]]
        elif kind in ("session/title", "session/title-llm-request") and type(data.get("messageSeqs")) is list:
            data["messageSeqs"] = [self.map(event, s) for s in data["messageSeqs"]]
        return data

    def inherited_cut(self) -> tuple[int, bool]:
        """(source seq of the cut, whether the source already has its end-seed there)."""
        cut = self.log.header.seed_length or 0
        if cut > len(self.events):
            raise MigrationRefused(f"the header's seedLength {cut} exceeds the {len(self.events)} stored events")
        splits = any((c < cut) != (m < cut) for c, m in self.claimed.items())
        splits = splits or any((a[0].seq < cut) != (a[-1].seq < cut) for a in self.attempt_end.values())
        if cut and splits:
            raise MigrationRefused(f"the inherited cut at seq {cut} splits an assistant attempt")
        tagged = 0 < cut < len(self.events) and self.events[cut].type == "session/end-seed" and type(self.events[cut].data) is dict
        return cut, tagged

    def head_plan(self) -> tuple[V0Event | None, str]:
        """The first step/start (where the system head goes) and the prompt the head holds."""
        prompts = [_system_of(e) for e in self.events if e.type == "request/header"]  # validates every header
        first = next((e for e in self.events if e.type == "step/start"), None)
        if first is None or not any(prompts):
            return None, ""
        for event in self.events[first.seq + 1 :]:
            if event.type in ("step/start", "step/end", "turn/end"):
                break
            if event.type == "request/header":
                return first, _system_of(event)
        return first, ""

    def run(self) -> tuple[Event, ...]:
        self.scan()
        cut, tagged = self.inherited_cut()
        first_step, head_prompt = self.head_plan()
        head: int | None = None
        current = ""
        open_step: V0Event | None = None
        for event in self.events:
            if cut and event.seq == cut and not tagged:
                self.emit("session/end-seed", self.events[cut - 1].time, {"inherited": True})
            if event.type == "assistant/chunk":
                attempt = self.attempt_end.get(event.seq)
                if attempt is not None:
                    data = {"turn": event.data["turn"], "step": event.data["step"], "stream": self.stream(attempt)}
                    self.emit("assistant/attempt", event.time, data)
                continue
            if first_step is not None and head is None and event.type in _SURFACE:
                raise self.refuse(event, "precedes the first step/start, so the system prompt cannot become surface node 0")
            if event.type == "request/header" and _system_of(event) != current:
                if open_step is None:
                    raise self.refuse(event, "changes the system prompt outside an open step")
                current = _system_of(event)
                head = self.system(event, open_step, current, head)
            if tagged and event.seq == cut:
                self.emit("session/end-seed", event.time, dict(event.data, inherited=True), ignorable=event.ignorable, source=event)
            else:
                self.transform(event)
            if event.type == "step/start":
                open_step = event
            elif event.type in ("step/end", "turn/end"):
                open_step = None
            if event is first_step:
                current = head_prompt
                head = self.system(event, event, current, None)
        if cut and cut == len(self.events):
            self.emit("session/end-seed", self.events[-1].time, {"inherited": True})
        return tuple(self.out)


def _ptc_source(source: Any) -> Any:
    if type(source) is dict and source.get("kind") == "plugin" and source.get("plugin") == "tools-code-mode":
        return dict(source, plugin="tools-ptc")
    return source


def migrate_v0(log: V0Log) -> MigratedLog:
    """The current-format log a v0 source stands for (raises :class:`MigrationRefused`)."""
    if any(e.seq != i for i, e in enumerate(log.events)):
        raise MigrationRefused("the source events are not dense from seq 0")
    events = _Migration(log).run()
    try:
        replay_surface(events)  # the verifier replays too; refusing here keeps reads and writes alike
    except GenerationMismatch as err:
        raise MigrationRefused(str(err)) from None
    return MigratedLog(current_header(log.header), events, len(log.events))
