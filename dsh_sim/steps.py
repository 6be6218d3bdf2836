"""Steps: the operations a scenario is made of, shared by the state machines and replay.

A step is ``{"op": name, "args": {...}}`` with plain JSON arguments, so a scenario file is
readable and survives changes to the Hypothesis strategies that found it.  :func:`apply`
performs one step on a :class:`~dsh_sim.sim.Simulation` and returns a short outcome string
(part of the trace), e.g. ``turn:completed`` or ``crashed:tools.execute.body``.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Sequence

import attrs

from dsh_sim.determinism import EPOCH_MS
from dsh_sim import invariants as inv
from dsh_sim.faults import CrashSpec, FaultRule
from dsh_sim.invariants import SeededSource
from dsh_sim.sim import Lifetime, Simulation
from runtime.adapters.script_model import ScriptedResponse
from runtime.persistence.layout import SessionPaths, generation_filename
from runtime.persistence.v0_format import ROW_TAGS, V0Event, V0Header, decode_v0
from runtime.persistence.zstd_frames import compress_frame, frame_layouts
from runtime.session.lossless import dumps
from runtime.tools.shell import ShellTool


@attrs.frozen
class Step:
    op: str
    args: dict[str, Any] = attrs.field(factory=dict, eq=False)

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "args": self.args}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Step":
        if not isinstance(obj, dict) or "op" not in obj:
            raise ValueError(f"a step must be an object with an 'op', got {obj!r}")
        if obj["op"] not in OPS:
            raise ValueError(f"unknown step op {obj['op']!r}; known: {', '.join(sorted(OPS))}")
        return cls(obj["op"], dict(obj.get("args", {})))

    def describe(self) -> str:
        args = ", ".join(f"{k}={json.dumps(v, sort_keys=True)}" for k, v in self.args.items())
        return f"{self.op}({args})"


def _outcome(sim: Simulation, life: Lifetime, reply: Any) -> str:
    if life.dead:
        crash = life.crash
        return f"crashed:{crash.point if crash else '?'}"
    if reply is not None and getattr(reply, "error", None) is not None:
        return f"error:{type(reply.error).__name__}"
    return "ok"


def _require_live(sim: Simulation) -> Lifetime:
    life = sim.current
    if life is None or life.dead or life.agent is None:
        raise StepNotApplicable("no live process with an agent")
    return life


def _require_session(sim: Simulation) -> Lifetime:
    life = sim.current
    if life is None or life.dead or life.session is None:
        raise StepNotApplicable("no live process with a session")
    return life


class StepNotApplicable(Exception):
    """The step cannot run in the current state (replay reports this loudly)."""


def op_boot(sim: Simulation, args: dict[str, Any]) -> str:
    if sim.alive:
        raise StepNotApplicable("a process is already running")
    life = sim.boot()
    if life.dead and life.crash is not None:
        return f"crashed:{life.crash.point}"
    if life.boot_error is not None:
        return f"refused:{type(life.boot_error).__name__}"
    return "booted"


def op_prompt(sim: Simulation, args: dict[str, Any]) -> str:
    life = _require_live(sim)
    if life.agent.turn_active:
        raise StepNotApplicable("a turn is already in progress")
    # a prompt's script is for its own turn: whatever an interrupted turn left unused is gone
    sim.model_queue[:] = [ScriptedResponse.from_json(r) for r in args.get("responses", ())]
    sim.approval_answers[:] = list(args.get("approvals", ()))

    async def turn(life: Lifetime) -> Any:
        return await life.agent.run_turn(args.get("text", "go"))

    reply = sim.run(turn, horizon=float(args.get("horizon", 600.0)))
    if life.dead:
        return _outcome(sim, life, reply)
    if not reply.done:
        return "turn:blocked"
    if reply.error is not None:
        return f"error:{type(reply.error).__name__}"
    return f"turn:{reply.value.reason['kind']}"


def op_advance(sim: Simulation, args: dict[str, Any]) -> str:
    life = sim.current
    sim.advance(float(args.get("seconds", 0.2)))
    return _outcome(sim, life, None) if life is not None else "ok"


def op_cancel(sim: Simulation, args: dict[str, Any]) -> str:
    life = _require_live(sim)

    async def cancel(life: Lifetime) -> None:
        life.agent.cancel()

    reply = sim.run(cancel)
    if not life.dead:
        sim.advance(float(args.get("settle", 1.0)))
    return _outcome(sim, life, reply)


def op_flush(sim: Simulation, args: dict[str, Any]) -> str:
    life = _require_session(sim)

    async def flush(life: Lifetime) -> None:
        await life.store.flush(life.session)

    reply = sim.run(flush)
    if reply.error is not None and not life.dead:
        inv.check_failed_append(sim.obs, life, reply.error)
    return _outcome(sim, life, reply)


def op_append(sim: Simulation, args: dict[str, Any]) -> str:
    """Storage machine: append ``count`` events to the live session (write-behind queues them)."""
    life = _require_session(sim)

    async def append(life: Lifetime) -> None:
        for index in range(int(args.get("count", 1))):
            life.session.append("todo/write", {"n": len(life.session), "text": "x" * int(args.get("size", 8))})

    return _outcome(sim, life, sim.run(append))


def op_set_approval_policy(sim: Simulation, args: dict[str, Any]) -> str:
    life = _require_live(sim)
    if life.runtime.approval is None:
        raise StepNotApplicable("no approval service is mounted")

    async def change(life: Lifetime) -> None:
        life.runtime.approval.set_policy(life.agent, args["policy"])

    return _outcome(sim, life, sim.run(change))


def op_set_sandbox_mode(sim: Simulation, args: dict[str, Any]) -> str:
    life = _require_live(sim)

    async def change(life: Lifetime) -> None:
        ShellTool.set_mode(life.agent, args["mode"])

    return _outcome(sim, life, sim.run(change))


def op_arm(sim: Simulation, args: dict[str, Any]) -> str:
    sim.plan.add(FaultRule.from_json(args["rule"]))
    return "armed"


def op_crash_now(sim: Simulation, args: dict[str, Any]) -> str:
    life = _require_session(sim)
    sim.kill_now(CrashSpec(**{k: v for k, v in args.items() if k in ("kind", "state", "torn_fraction", "cut")}))
    return f"crashed:{life.crash.label if life.crash else '?'}"


def op_second_writer(sim: Simulation, args: dict[str, Any]) -> str:
    _require_session(sim)
    if sim.disk.resolve(sim.config.log_path) is None:
        raise StepNotApplicable("the session log is not published yet, so there is nothing to contend for")
    life = sim.boot(secondary=True)
    if life.boot_error is not None:
        return f"refused:{type(life.boot_error).__name__}"
    return "opened"


def op_retry_unknown(sim: Simulation, args: dict[str, Any]) -> str:
    """The model retries every unknown-outcome ``pay`` with the same idempotency key."""
    life = _require_live(sim)
    report = life.report
    if report is None:
        raise StepNotApplicable("the current process did not recover anything")
    blocks = {
        b["id"]: b
        for e in report.events
        if e.type == "assistant/message"
        for b in e.data["message"]["content"]
        if b.get("type") == "tool-call"
    }
    calls = []
    for index, (call_id, code) in enumerate(sorted(report.verdicts.items())):
        block = blocks.get(call_id)
        if code != "TOOL_OUTCOME_UNKNOWN" or block is None or block["name"] != "pay":
            continue
        arguments = json.loads(block["arguments"] or "{}")
        arguments["idempotency_key"] = arguments.get("idempotency_key", call_id)
        sim.retries += 1
        calls.append({"id": f"{call_id}-retry{sim.retries}", "name": "pay", "arguments": arguments})
    if not calls:
        return "nothing-to-retry"
    return op_prompt(sim, {"text": "retry the unknown payments", "responses": [{"text": "retrying", "tool_calls": calls}]})


# -- historical (v0) sources, written the way the reference runtime writes them -----------------

MIN_RUN = 3  # the reference packs runs of three or more same-block deltas into one row


def _delta_kind(event: V0Event) -> str | None:
    data = event.data
    if event.type != "assistant/chunk" or event.ignorable or event.surface_op is not None or event.source_event_seqs is not None:
        return None
    if type(data) is not dict or set(data) != {"turn", "step", "chunk"} or type(data["chunk"]) is not dict:
        return None
    chunk = data["chunk"]
    kind = chunk.get("type")
    if kind in ("text-delta", "reasoning-delta") and set(chunk) == {"type", "index", "text"}:
        return kind
    if kind == "tool-call-delta" and set(chunk) - {"name"} == {"type", "index", "id", "argumentsDelta"}:
        return kind
    return None


def _same_run(prev: V0Event, nxt: V0Event) -> bool:
    a, b = prev.data, nxt.data
    ca, cb = a["chunk"], b["chunk"]
    return (
        nxt.seq == prev.seq + 1
        and (a["turn"], a["step"], ca["index"]) == (b["turn"], b["step"], cb["index"])
        and (ca.get("id"), "name" in ca, ca.get("name")) == (cb.get("id"), "name" in cb, cb.get("name"))
    )


def _row(kind: str, run: Sequence[V0Event]) -> dict[str, Any]:
    first = run[0].data
    tag = {v: k for k, v in ROW_TAGS.items()}[kind]
    data: dict[str, Any] = {"turn": first["turn"], "step": first["step"], "index": first["chunk"]["index"]}
    data["dt"] = [run[i + 1].time - run[i].time for i in range(len(run) - 1)]
    if kind == "tool-call-delta":
        data["id"] = first["chunk"]["id"]
        if "name" in first["chunk"]:
            data["name"] = first["chunk"]["name"]
        data["args"] = [e.data["chunk"]["argumentsDelta"] for e in run]
    else:
        data["texts"] = [e.data["chunk"]["text"] for e in run]
    return {"type": tag, "seq0": run[0].seq, "time0": run[0].time, "data": data}


def pack_records(events: Iterable[V0Event]) -> list[dict[str, Any]]:
    """Storage records of one batch: runs of ``MIN_RUN``+ same-block deltas become one row."""
    out: list[dict[str, Any]] = []
    run: list[V0Event] = []
    kind: str | None = None

    def flush() -> None:
        if kind is not None and len(run) >= MIN_RUN:
            out.append(_row(kind, run))
        else:
            out.extend(e.to_record() for e in run)

    for event in events:
        k = _delta_kind(event)
        if k is not None and k == kind and _same_run(run[-1], event):
            run.append(event)
            continue
        flush()
        run, kind = ([event], k) if k is not None else ([], None)
        if k is None:
            out.append(event.to_record())
    flush()
    return out


def encode_v0(header: V0Header, batches: Sequence[Sequence[V0Event]], compression: str, *, pack: bool = True) -> bytes:
    """A v0 file as the reference writes it: header frame (or line), one frame per batch."""
    parts = [(dumps(header.to_record()) + "\n").encode()]
    for batch in batches:
        records = pack_records(batch) if pack else [e.to_record() for e in batch]
        parts.append("".join(dumps(r) + "\n" for r in records).encode())
    if compression == "zstd":
        return b"".join(compress_frame(p) for p in parts)
    return b"".join(parts)


def v0_history(session_id: str, cwd: str, turns: int, notes: int, system: str | None) -> tuple[V0Header, list[list[V0Event]]]:
    """Balanced v0 turns as the reference agent logged them, one durable batch per turn.

    Each turn: ``turn/start``, ``step/start``, a user message, ``request/header`` (with the
    system prompt, as v0 kept it), ``request/context``, the streamed ``assistant/chunk``
    events (block start, text deltas that pack into a row, block end, finish), the
    ``assistant/message`` citing them, ``step/end``, ``turn/end``.  ``notes`` log-only
    ``todo/write`` events follow as a last batch (the one a torn seed tears).
    """
    events: list[V0Event] = []
    batches: list[list[V0Event]] = []

    def add(kind: str, data: Any, **extra: Any) -> int:
        events.append(V0Event(kind, len(events), EPOCH_MS - 60_000 + 10 * len(events), data, **extra))
        return len(events) - 1

    for turn in range(1, turns + 1):
        start = len(events)
        add("turn/start", {"turn": turn})
        add("step/start", {"turn": turn, "step": 1})
        add("user/message", {"id": f"v0-user-{turn}", "role": "user", "content": [{"type": "text", "text": f"prompt {turn}"}], "source": {"kind": "user"}}, surface_op="append")
        header: dict[str, Any] = {"config": {"provider": "sim", "model": "sim-v0"}}
        if system is not None:
            header["system"] = system
        add("request/header", {"header": header, "reason": "initial" if turn == 1 else "resume"})
        if turn == 1:
            add("request/context", {"provider": "sim", "model": "sim-v0"})
        chunks = [{"type": "block-start", "index": 0, "blockType": "text"}]
        chunks += [{"type": "text-delta", "index": 0, "text": t} for t in ("an", "sw", "er ", str(turn))]
        chunks += [{"type": "block-end", "index": 0, "block": {"type": "text", "text": f"answer {turn}"}}, {"type": "finish", "reason": {"kind": "stop"}}]
        cited = tuple(add("assistant/chunk", {"turn": turn, "step": 1, "chunk": c}) for c in chunks)
        message = {"id": f"v0-assistant-{turn}", "role": "assistant", "content": [{"type": "text", "text": f"answer {turn}"}], "source": {"kind": "model", "provider": "sim", "model": "sim-v0"}}
        add("assistant/message", {"turn": turn, "step": 1, "message": message}, surface_op="append", source_event_seqs=cited)
        add("step/end", {"turn": turn, "step": 1})
        add("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
        batches.append(events[start:])
    if notes:
        start = len(events)
        for n in range(notes):
            add("todo/write", {"n": n, "text": "legacy note"})
        batches.append(events[start:])
    return V0Header(session_id, EPOCH_MS - 120_000, cwd=cwd), batches


def op_seed_v0(sim: Simulation, args: dict[str, Any]) -> str:
    """Start from a historical log: place a v0 generation (written the way the reference writes
    it) for the configured session on the disk, durably, before the first boot.  ``torn``
    cuts the last batch in half, as a crash of the old runtime would have left it."""
    if sim.lifetimes:
        raise StepNotApplicable("seed_v0 sets up the starting state: it must come before the first boot")
    cfg = sim.config
    paths = SessionPaths.of(cfg.root, cfg.workspace, cfg.session_id, cfg.compression)
    path = f"{paths.session_dir}/{generation_filename(0, cfg.compression)}"
    if sim.disk.resolve(path) is not None or sim.disk.resolve(paths.log) is not None:
        raise StepNotApplicable("the session already has a log")
    header, batches = v0_history(cfg.session_id, cfg.workspace, int(args.get("turns", 2)), int(args.get("notes", 2)), cfg.system)
    data = encode_v0(header, batches, cfg.compression)
    if args.get("torn") and len(batches) > 1:
        whole = encode_v0(header, batches[:-1], cfg.compression)
        last = len(data) - len(whole)
        if cfg.compression == "zstd":
            last = frame_layouts(data)[-1].end - frame_layouts(data)[-1].start
        data = data[: len(whole) + last // 2]
        if data.endswith(b"\n"):
            data = data[:-1]  # a raw cut that happened to end a line would not be torn
    sim.disk.write_file_durable(path, data)
    sim.seeded_v0 = SeededSource.of(path, paths.log, data, cfg.compression)
    sim.trace.record("seed_v0", path, len(data), len(sim.seeded_v0.events))
    return f"seeded:v0:{len(decode_v0(data, cfg.compression).events)}->{len(sim.seeded_v0.events)}"


OPS: dict[str, Callable[[Simulation, dict[str, Any]], str]] = {
    "boot": op_boot,
    "prompt": op_prompt,
    "advance": op_advance,
    "cancel": op_cancel,
    "flush": op_flush,
    "append": op_append,
    "set_approval_policy": op_set_approval_policy,
    "set_sandbox_mode": op_set_sandbox_mode,
    "arm": op_arm,
    "crash_now": op_crash_now,
    "second_writer": op_second_writer,
    "retry_unknown": op_retry_unknown,
    "seed_v0": op_seed_v0,
}


def apply(sim: Simulation, step: Step) -> str:
    outcome = OPS[step.op](sim, step.args)
    sim.trace.record("step", step.op, outcome)
    inv.check_idempotent_keys(sim.obs)  # the ledger can go wrong without any crash
    return outcome
