"""Steps: the operations a scenario is made of, shared by the state machines and replay.

A step is ``{"op": name, "args": {...}}`` with plain JSON arguments, so a scenario file is
readable and survives changes to the Hypothesis strategies that found it.  :func:`apply`
performs one step on a :class:`~dsh_sim.engine.machine.Simulation` and returns a short outcome string
(part of the trace), e.g. ``turn:completed`` or ``crashed:tools.execute.body``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import attrs

from dsh_sim.engine.faults import CrashSpec, FaultRule
from dsh_sim.engine.history import SeededLog
from dsh_sim.engine.lifetime import Lifetime
from dsh_sim.engine.machine import Simulation
from dsh_sim.scenario.v0_writer import encode_v0, v0_history
from runtime.adapters.script_model import ScriptedResponse
from runtime.persistence.migration import migrate_v0
from runtime.persistence.v0_format import decode_v0
from runtime.persistence.zstd_frames import frame_layouts


@attrs.frozen
class Step:
    op: str
    args: dict[str, Any] = attrs.field(factory=dict, eq=False)

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "args": self.args}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Step:
        if not isinstance(obj, dict) or "op" not in obj:
            raise ValueError(f"a step must be an object with an 'op', got {obj!r}")
        if obj["op"] not in OPS:
            raise ValueError(f"unknown step op {obj['op']!r}; known: {', '.join(sorted(OPS))}")
        return cls(obj["op"], dict(obj.get("args", {})))

    def describe(self) -> str:
        args = ", ".join(f"{k}={json.dumps(v, sort_keys=True)}" for k, v in self.args.items())
        return f"{self.op}({args})"


def _outcome(life: Lifetime, reply: Any) -> str:
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
        return _outcome(life, reply)
    if not reply.done:
        return "turn:blocked"
    if reply.error is not None:
        return f"error:{type(reply.error).__name__}"
    return f"turn:{reply.value.reason['kind']}"


def op_advance(sim: Simulation, args: dict[str, Any]) -> str:
    life = sim.current
    sim.advance(float(args.get("seconds", 0.2)))
    return _outcome(life, None) if life is not None else "ok"


def op_cancel(sim: Simulation, args: dict[str, Any]) -> str:
    life = _require_live(sim)

    async def cancel(life: Lifetime) -> None:
        life.agent.cancel()

    reply = sim.run(cancel)
    if not life.dead:
        sim.advance(float(args.get("settle", 1.0)))
    return _outcome(life, reply)


def op_flush(sim: Simulation, args: dict[str, Any]) -> str:
    life = _require_session(sim)

    async def flush(life: Lifetime) -> None:
        await life.store.flush(life.session)

    reply = sim.run(flush)
    if reply.error is not None and not life.dead:
        sim.notify("on_flush_failed", life, reply.error)
    return _outcome(life, reply)


def op_append(sim: Simulation, args: dict[str, Any]) -> str:
    """Storage machine: append ``count`` events to the live session (write-behind queues them)."""
    life = _require_session(sim)

    async def append(life: Lifetime) -> None:
        for _index in range(int(args.get("count", 1))):
            life.session.append("todo/write", {"n": len(life.session), "text": "x" * int(args.get("size", 8))})

    return _outcome(life, sim.run(append))


def op_read_only(sim: Simulation, args: dict[str, Any]) -> str:
    """A reader beside the writer, as ``dsh-sim inspect`` or a session picker is: list the
    sessions (header-only reads), open this one read-only, read it twice, try to write through
    it, close it and read again.  The outcome is what that reader saw, so a replay compares it
    with the recorded run (the mutation harness's progress check does)."""
    life = _require_session(sim)

    async def peek(life: Lifetime) -> str:
        backend = life.runtime.backend if life.runtime is not None else life.handle._backend
        listed = sorted(stat.header.id for stat in await backend.list())
        handle = await backend.open(sim.config.session_id, "read")
        first = await handle.read()
        again = await handle.read(len(first) // 2)
        seen = [f"listed={','.join(listed)}", f"events={len(first)}", f"tail={len(again)}", f"last={first[-1].type if first else '-'}"]
        for name, call in (("append", lambda: handle.append([])), ("flush", handle.flush)):
            try:
                await call()
                seen.append(f"{name}=allowed")
            except Exception as err:
                seen.append(f"{name}={type(err).__name__}")
        await handle.close()
        try:
            await handle.read()
            seen.append("closed-read=allowed")
        except Exception as err:
            seen.append(f"closed-read={type(err).__name__}")
        return "read-only:" + ":".join(seen)

    reply = sim.run(peek)
    if reply.error is None and not life.dead and reply.done:
        return str(reply.value)
    return _outcome(life, reply)


def op_set_approval_policy(sim: Simulation, args: dict[str, Any]) -> str:
    life = _require_live(sim)
    if life.live_runtime().approval is None:
        raise StepNotApplicable("no approval service is mounted")

    async def change(life: Lifetime) -> None:
        approval = life.live_runtime().approval
        if approval is None:
            raise RuntimeError("the approval service is no longer mounted")
        approval.set_policy(life.agent, args["policy"])

    return _outcome(life, sim.run(change))


def op_set_sandbox_mode(sim: Simulation, args: dict[str, Any]) -> str:
    life = _require_live(sim)

    async def change(life: Lifetime) -> None:
        life.live_runtime().hooks.services["sandbox"].set_mode(life.agent, args["mode"])

    return _outcome(life, sim.run(change))


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
    for _index, (call_id, code) in enumerate(sorted(report.verdicts.items())):
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


def op_seed_v0(sim: Simulation, args: dict[str, Any]) -> str:
    """Start from a historical log: place a v0 generation (written the way the reference writes
    it) for the configured session on the disk, durably, before the first boot.  ``torn``
    cuts the last batch in half, as a crash of the old runtime would have left it."""
    if sim.lifetimes:
        raise StepNotApplicable("seed_v0 sets up the starting state: it must come before the first boot")
    cfg = sim.config
    path = cfg.v0_path
    if sim.disk.resolve(path) is not None or sim.disk.resolve(cfg.log_path) is not None:
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
    sim.history.seeded = SeededLog(path, cfg.log_path, data)
    migrated = migrate_v0(decode_v0(data, cfg.compression))
    sim.trace.record("seed_v0", path, len(data), len(migrated.events))
    return f"seeded:v0:{len(decode_v0(data, cfg.compression).events)}->{len(migrated.events)}"


OPS: dict[str, Callable[[Simulation, dict[str, Any]], str]] = {
    "boot": op_boot,
    "prompt": op_prompt,
    "advance": op_advance,
    "cancel": op_cancel,
    "flush": op_flush,
    "append": op_append,
    "read_only": op_read_only,
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
    sim.notify("on_step", step.op, outcome)
    return outcome
