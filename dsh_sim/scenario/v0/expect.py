"""What migrating a historical log must publish, from its plan and the spec alone (§3.7, §10.1).

The runtime's expectation used to be computed by the runtime (its v0 decoder, its migration,
its encoder), so a bug there moved the oracle with it.  Here nothing of the runtime's decoder
or migration runs:

1. **What a reader keeps** (§3.7) is counted on the bytes the plan was written as: every
   event of the complete batches, and of the final batch the records that are complete —
   raw: lines whose newline survived the cut; zstd: newline-terminated lines of the torn
   frame's partial plaintext (decoded by the ``zstandard`` library in flush mode).  A flipped
   byte inside a complete zstd frame, or an unparsable raw line with a ``turn/end`` after it,
   is a refusal.
2. **The migrated events** (§10.1) follow from what each kept item *means*: the chunks of a
   streamed attempt fold into its ``assistant/message`` as ``stream`` records
   ``{type:'chunk', time, chunk}``; an attempt whose message was never logged (a retried or
   cut stream) becomes a log-only ``assistant/attempt {turn, step, stream}`` where its last
   chunk was; the system prompt becomes surface node 0 — a ``system/message`` right after the
   first ``step/start`` holding the prompt of that step's first request — and a replacing
   ``system/message`` goes before every later request whose prompt differs; ``system`` leaves
   the request headers; seqs are renumbered densely and every reference (``sourceEventSeqs``,
   a title's ``messageSeqs``, a compaction's ``shadowedRange``, a replacement's span, whose
   ``surfaceOp`` takes the v3 spelling ``{op, startSeq, endSeq}``) follows; ``seedLength`` becomes
   ``isSeeded`` and the inherited ``session/end-seed`` is marked ``inherited: true``; the retired
   vocabulary is renamed (``tool/code-dispatch*`` → ``tool/ptc-dispatch*``, preset ``code`` →
   ``ptc``) and the legacy ``turn/start.trigger`` is dropped (§3.7 upgrades it on read).

Details the spec leaves open follow the runtime's choices, named where they are made: the
system message's id, payload and time, and the time of an attempt.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from typing import Any

import attrs
import zstandard

from dsh_sim.scenario.v0.model import V0Session
from dsh_sim.scenario.v0.plan import CREATED_AT, PARENT, Item, Plan, build
from dsh_sim.scenario.v0.render import Source, damaged_line, frame_fails, members, render

SYSTEM_PLUGIN = "@deepseek-ai/dsh-system-prompt"
# §10.1: the code mode became "ptc" — the dispatch events are renamed and the preset ``code`` is
# ``ptc``; its plugin's name in a message source follows (the runtime's spelling: ``tools-ptc``)
RENAMED = {"tool/code-dispatch": "tool/ptc-dispatch", "tool/code-dispatch-start": "tool/ptc-dispatch-start"}
CODE_MODE = {"kind": "plugin", "plugin": "tools-code-mode"}
PTC = {"kind": "plugin", "plugin": "tools-ptc"}
_STEP_BOUNDS = ("step/start", "step/end", "turn/end")


@attrs.frozen
class Expected:
    """The v3 generation migration must publish (``header is None``: it must refuse the source)."""

    header: dict[str, Any] | None
    records: tuple[dict[str, Any], ...]
    source_events: int  # v0 events a reader keeps from the source

    @property
    def refused(self) -> bool:
        return self.header is None


def kept(source: Source) -> int | None:
    """How many planned events a reader keeps from the bytes on disk (``None``: refuse them)."""
    plan = source.plan
    if source.cut is None and source.damage is None:
        return len(plan.items)
    final = source.records[-1]
    before = plan.batches[-1][0]
    if source.damage is not None:
        if source.compression == "zstd":
            frame = source.data[source.tail_start :]
            # a complete frame that fails decoding or its checksum is damage, never a crash tail
            return None if frame_fails(frame) else len(plan.items)
        line = damaged_line(final)
        if any(r["type"] == "turn/end" for r in final[line + 1 :]):
            return None  # a committed record after the damage: refuse (§3.7)
        return before + sum(members(r) for r in final[:line])
    tail = source.data[source.tail_start :]
    if source.compression == "zstd":
        try:
            tail = zstandard.ZstdDecompressor().decompressobj().decompress(tail)
        except zstandard.ZstdError:
            tail = b""
    complete = tail.count(b"\n")  # the cut is the only change: complete lines are the records written
    return before + sum(members(r) for r in final[:complete])


def ranges(seqs: Sequence[int]) -> list[Any]:
    """§10.1 storage of ``sourceEventSeqs``: runs of three or more consecutive seqs as ``[start, end]``."""
    out: list[Any] = []
    i = 0
    while i < len(seqs):
        j = i
        while j + 1 < len(seqs) and seqs[j + 1] == seqs[j] + 1:
            j += 1
        out.extend([[seqs[i], seqs[j]]] if j - i >= 2 else seqs[i : j + 1])
        i = j + 1
    return out


def system_id(session_id: str, anchor: int, kind: str) -> str:
    """The runtime's id for a migrated system message (not in the spec): a digest of the
    session and the v0 event it is anchored at."""
    key = json.dumps(["session-format-v0-to-v3", session_id, anchor, kind], separators=(",", ":"))
    return "v0-to-v3-system-" + hashlib.sha256(key.encode()).hexdigest()


class _Migration:
    def __init__(self, plan: Plan, items: Sequence[Item]) -> None:
        self.plan = plan
        self.items = items
        self.out: list[dict[str, Any]] = []
        self.new: dict[int, int] = {}  # v0 seq → v3 seq of the events that survive

    def emit(self, kind: str, time: int, data: Any, *, source: int | None = None, op: Any = None, sources: Any = None) -> int:
        record: dict[str, Any] = {"type": kind, "seq": len(self.out), "time": time, "data": data}
        if op is not None:
            record["surfaceOp"] = op
        if sources is not None:
            record["sourceEventSeqs"] = ranges(sources)
        if source is not None:
            self.new[source] = record["seq"]
        self.out.append(record)
        return int(record["seq"])

    def stream(self, chunks: Sequence[int]) -> list[dict[str, Any]]:
        return [{"type": "chunk", "time": self.items[c].time, "chunk": self.items[c].data["chunk"]} for c in chunks]

    def system(self, anchor: int, step: Item, prompt: str, head: int | None) -> int:
        """A system message anchored at v0 event ``anchor``: its id, payload (turn and step of
        the open step, a plugin source) and time (the anchor's) are the runtime's choices."""
        message = {
            "id": system_id(self.plan.session.session_id, anchor, self.items[anchor].type),
            "role": "system",
            "content": [{"type": "text", "text": prompt}] if prompt else [],
            "source": {"kind": "plugin", "plugin": SYSTEM_PLUGIN},
        }
        data = {"turn": step.data["turn"], "step": step.data["step"], "message": message}
        if head is None:
            return self.emit("system/message", self.items[anchor].time, data, op="append")
        return self.emit(
            "system/message", self.items[anchor].time, data, op={"op": "replace", "startSeq": head, "endSeq": head}, sources=[head]
        )

    def run(self) -> tuple[dict[str, Any], ...]:
        items = self.items
        closed = {item.attempt for item in items if item.type == "assistant/message"}
        attempts: dict[int, list[int]] = {}  # the chunks of every attempt no message closes
        for seq, item in enumerate(items):
            if item.type == "assistant/chunk" and item.attempt not in closed:
                attempts.setdefault(item.attempt or 0, []).append(seq)
        last_chunk = {chunks[-1]: chunks for chunks in attempts.values()}
        first_step = next((seq for seq, item in enumerate(items) if item.type == "step/start"), None)
        named = any(item.prompt for item in items if item.type == "request/header")
        head: int | None = None
        current = ""
        step: Item | None = None
        for seq, item in enumerate(items):
            if item.type == "assistant/chunk":
                if seq in last_chunk:
                    data = {"turn": item.data["turn"], "step": item.data["step"], "stream": self.stream(last_chunk[seq])}
                    self.emit("assistant/attempt", item.time, data)  # time: the last chunk's (the runtime's choice)
                continue
            if named and item.type == "request/header" and (item.prompt or "") != current and step is not None:
                current = item.prompt or ""
                head = self.system(seq, step, current, head)
            self.migrate(seq, item)
            if item.type == "step/start":
                step = item
            elif item.type in ("step/end", "turn/end"):
                step = None
            if named and seq == first_step:
                current = self.head_prompt(seq)
                head = self.system(seq, item, current, None)
        return tuple(self.out)

    def head_prompt(self, first_step: int) -> str:
        """The prompt of the first step's first request ("" when that step logged none)."""
        for item in self.items[first_step + 1 :]:
            if item.type in _STEP_BOUNDS:
                break
            if item.type == "request/header":
                return item.prompt or ""
        return ""

    def migrate(self, seq: int, item: Item) -> None:
        data = item.data
        kind = RENAMED.get(item.type, item.type)
        op: Any = "append" if item.surface else None
        sources = None
        if item.type == "turn/start" and "trigger" in data:
            data = {k: v for k, v in data.items() if k != "trigger"}
        elif item.type == "agent-preset/selected" and data.get("agentPreset") == "code":
            data = dict(data, agentPreset="ptc")
        elif item.type == "user/message" and data.get("source") == CODE_MODE:
            data = dict(data, source=PTC)
        elif item.type == "agent/inbox/spliced":
            data = dict(data, inserted=[dict(m, source=PTC) if m.get("source") == CODE_MODE else m for m in data["inserted"]])
        elif item.type == "command/done":
            data = dict(data, sourceEventSeq=self.new[item.cites[0]])
        elif item.type == "compaction/prune":
            data = dict(data, shadowedSeqs=[self.new[c] for c in item.cites])
        elif item.type == "session/title-llm-request":
            data = dict(data, messageSeqs=[self.new[c] for c in item.cites])
        elif item.type == "request/header":
            data = dict(data, header={k: v for k, v in data["header"].items() if k != "system"})
        elif item.type == "assistant/message":
            data = dict(data, stream=self.stream(item.cites))
        elif item.type == "tool/result":
            sources = [self.new[c] for c in item.cites]
        elif item.type == "session/title":
            data = dict(data, messageSeqs=[self.new[c] for c in item.cites])
        elif item.type == "compaction/summary":
            start, end = (self.new[c] for c in item.cites)
            data = dict(data, shadowedRange=dict(data["shadowedRange"], start=start, end=end))
        if item.replaces is not None:  # v0 {op, start, end} → v3 {op, startSeq, endSeq}, renumbered
            op = {"op": "replace", "startSeq": self.new[item.replaces[0]], "endSeq": self.new[item.replaces[1]]}
            sources = [self.new[c] for c in item.cites]
        elif item.type == "session/end-seed" and seq == self.plan.seed_length:
            data = dict(data, inherited=True)
        self.emit(kind, item.time, data, source=seq, op=op, sources=sources)


def header(plan: Plan) -> dict[str, Any]:
    """The v3 header (spec §10.1, key order of §12): ``isSeeded`` replaces ``seedLength``."""
    record: dict[str, Any] = {"type": "session", "version": 3, "id": plan.session.session_id, "createdAt": CREATED_AT}
    record["cwd"] = plan.session.cwd
    if plan.seed_length is not None:
        record["parentSession"] = PARENT
    record["isSeeded"] = plan.seed_length is not None
    if plan.session.subagent:  # §10.1: origin and delegationDepth carry over as they are
        record["origin"] = "subagent"
    record["delegationDepth"] = 1 if plan.session.subagent else 0
    return record


@functools.lru_cache(maxsize=16)
def expected_migration(session: V0Session, compression: str) -> Expected:
    """What the write open of ``session``'s v0 file (in ``compression``) must publish (memoised:
    the judges ask after every boot, explore after thousands)."""
    plan = build(session)
    count = kept(render(plan, compression))
    if count is None:
        return Expected(None, (), 0)
    return Expected(header(plan), _Migration(plan, plan.items[:count]).run(), count)
