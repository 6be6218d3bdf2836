"""Steps: the operations a scenario is made of, shared by the state machines and replay.

A step is a :class:`~dsh_sim.scenario.args.Step`: an op and its typed args (in a file,
``{"op": name, "args": {...}}``, so a scenario is readable and survives changes to the
Hypothesis strategies that found it).  :func:`apply` performs one step on a
:class:`~dsh_sim.engine.machine.Simulation` and returns a short outcome string (part of the
trace), e.g. ``turn:completed`` or ``crashed:tools.execute.body``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import attrs
import trio

from dsh_sim.adapters.policy import CallPolicy
from dsh_sim.engine import links
from dsh_sim.engine.determinism import EPOCH_MS
from dsh_sim.engine.faults import CrashSpec
from dsh_sim.engine.history import Corruption, SeededLog
from dsh_sim.engine.json_values import EDGE_VALUES
from dsh_sim.engine.lifetime import Lifetime
from dsh_sim.engine.machine import Simulation
from dsh_sim.engine.observer import ReaderView
from dsh_sim.scenario.args import (
    AdvanceArgs,
    AppendArgs,
    ArmArgs,
    CancelArgs,
    FlushArgs,
    ModelResponse,
    PlantLinkArgs,
    PromptArgs,
    ReadOnlyArgs,
    RemoveLinksArgs,
    SeedV0Args,
    SetApprovalPolicyArgs,
    SetSandboxModeArgs,
    Step,
    ToolCall,
)
from dsh_sim.scenario.v0.describe import describe
from dsh_sim.scenario.v0.expect import expected_migration
from dsh_sim.scenario.v0.legacy import legacy_append
from dsh_sim.scenario.v0.plan import build
from dsh_sim.scenario.v0.render import render
from runtime.adapters.script_model import ScriptedResponse, ScriptedToolCall
from runtime.persistence.header import SessionHeader
from runtime.session.events import Event


def _outcome(life: Lifetime, reply: Any) -> str:
    life.step_error = getattr(reply, "error", None) if reply is not None else None
    if life.hung is not None:
        return f"hung:{life.hung.kind}"
    if life.dead:
        crash = life.crash
        return f"crashed:{crash.point if crash else '?'}"
    if reply is not None and getattr(reply, "error", None) is not None:
        return f"error:{type(reply.error).__name__}"
    return "ok"


def _require_live(sim: Simulation) -> Lifetime:
    life = sim.current
    if life is None or life.dead or life.agent is None:
        raise StepNotApplicable("no live process with an agent", None if sim.alive else RESTART)
    return life


def _require_session(sim: Simulation) -> Lifetime:
    life = sim.current
    if life is None or life.dead or life.session is None:
        raise StepNotApplicable("no live process with a session", None if sim.alive else RESTART)
    return life


class StepNotApplicable(Exception):
    """The step cannot run in the current state (replay reports this loudly).

    ``bridge``, where one exists, is the step that would let it run: a boot where the process
    is gone (a fault killed it, or failed its boot), a kill where one outlived the crash its
    scenario placed.  Replay never inserts it; the failure-path sweep does, to follow a run
    whose course an injected fault changed on to its later boots and recoveries."""

    def __init__(self, why: str, bridge: Step | None = None) -> None:
        super().__init__(why)
        self.bridge = bridge


RESTART = Step("boot")  # the operator starts the application again
KILL = Step("crash_now", CrashSpec())  # the process dies where it stands (kill -9, between steps)


def op_boot(sim: Simulation, args: object) -> str:
    if sim.alive:
        raise StepNotApplicable("a process is already running", KILL)
    life = sim.boot()
    if life.hung is not None:
        return f"hung:{life.hung.kind}"
    if life.dead and life.crash is not None:
        return f"crashed:{life.crash.point}"
    if life.boot_error is not None:
        return f"refused:{type(life.boot_error).__name__}"
    return "booted"


def _arguments(call: ToolCall) -> str:
    args = call.arguments
    return args if isinstance(args, str) else json.dumps(args, separators=(",", ":"), sort_keys=True)


def scripted(response: ModelResponse) -> ScriptedResponse:
    """What the scripted model streams for one response of a prompt."""
    calls = tuple(ScriptedToolCall(c.id, c.name, _arguments(c)) for c in response.tool_calls)
    return ScriptedResponse(response.text, calls, float(response.chunk_delay), response.finish)


def op_prompt(sim: Simulation, args: PromptArgs) -> str:
    life = _require_live(sim)
    if life.agent.turn_active:
        raise StepNotApplicable("a turn is already in progress")
    # a prompt's script is for its own turn: whatever an interrupted turn left unused is gone
    sim.model_queue[:] = [scripted(r) for r in args.responses]
    sim.approval_answers[:] = list(args.approvals)
    sim.approval_delay[0] = float(args.approval_delay)
    if sim.config.policy:
        for response in args.responses:
            for call in response.tool_calls:
                sim.call_policies[call.id] = CallPolicy(call.gate, float(call.gate_delay), call.guard, float(call.guard_delay), call.post)

    async def turn(life: Lifetime) -> Any:
        return await life.agent.run_turn(args.text)

    sim.history.prompts.append((life.index, len(life.agent.session.events), args.text))  # (its turn/start comes next)

    reply = sim.run(turn, horizon=float(args.horizon))
    if life.dead:
        return _outcome(life, reply)
    if not reply.done:
        return "turn:blocked"
    if reply.error is not None:
        return f"error:{type(reply.error).__name__}"
    return f"turn:{reply.value.reason['kind']}"


def op_advance(sim: Simulation, args: AdvanceArgs) -> str:
    life = sim.current
    sim.advance(float(args.seconds))
    return _outcome(life, None) if life is not None else "ok"


def op_cancel(sim: Simulation, args: CancelArgs) -> str:
    life = _require_live(sim)

    async def cancel(life: Lifetime) -> None:
        sim.cancel_turn(life)

    reply = sim.run(cancel)
    if not life.dead:
        sim.advance(float(args.settle))
    return _outcome(life, reply)


def op_flush(sim: Simulation, args: FlushArgs) -> str:
    life = _require_session(sim)

    async def flush(life: Lifetime) -> None:
        if args.cancel_first_after is None:
            await life.store.flush(life.session)
            return
        errors: list[Exception] = []  # what each caller was told: the second's first (the step's outcome)
        async with trio.open_nursery() as nursery:
            first = trio.CancelScope()

            async def first_flush() -> None:
                with first:  # its own task's scope (a caller's timeout), not the process's
                    try:
                        await life.store.flush(life.session)
                    except Exception as err:
                        errors.append(err)

            nursery.start_soon(first_flush)
            await trio.sleep(args.cancel_first_after / 2)  # the first flush holds the barrier; the second waits on it
            timer = trio.CancelScope()
            nursery.start_soon(_cancel_after, timer, first, args.cancel_first_after / 2)
            try:
                await life.store.flush(life.session)
            except Exception as err:
                errors.insert(0, err)
            timer.cancel()  # (a first flush still running is left to finish)
        if errors:  # raised outside the nursery: the caller's error itself, not a group of one
            raise errors[0]

    reply = sim.run(flush)
    if reply.error is not None and not life.dead:
        sim.notify("on_flush_failed", life, reply.error)
    return _outcome(life, reply)


async def _cancel_after(timer: trio.CancelScope, scope: trio.CancelScope, seconds: float) -> None:
    with timer:
        await trio.sleep(seconds)
        scope.cancel()


def op_append(sim: Simulation, args: AppendArgs) -> str:
    """Storage machine: append ``count`` events to the live session (write-behind queues them),
    or (``via="handle"``) straight to a write handle of a second session (:func:`_append_at_handle`)."""
    life = _require_session(sim)
    if args.via == "handle":
        return _outcome(life, sim.run(lambda life: _append_at_handle(sim, life, args)))

    async def append(life: Lifetime) -> None:
        for _index in range(args.count):
            if args.value is None:
                life.session.append("todo/write", {"n": len(life.session), "text": "x" * args.size})
            else:
                life.session.append("todo/write", {"n": len(life.session), "value": EDGE_VALUES[args.value].make()})

    return _outcome(life, sim.run(append))


async def _append_at_handle(sim: Simulation, life: Lifetime, args: AppendArgs) -> None:
    """Events the caller built, each holding the edge value, appended to a write handle of a new
    session ``<session_id>.handle-<n>`` (one per step, so an earlier step's faults cannot reach
    it; closed before the step ends): the persistence seam checks them itself (spec §1.1:
    "rejected at Session.append and at every persistence append").  What a read handle then
    reads is kept for ``lossless_refused``."""
    backend = life.handle._backend
    sim.handle_sessions += 1
    side = f"{sim.config.session_id}.handle-{sim.handle_sessions}"
    life.direct_read = None
    handle = await backend.create(SessionHeader(side, EPOCH_MS, cwd=sim.config.workspace))
    try:
        for _index in range(args.count):
            seq = handle.next_seq
            event = Event("todo/write", seq, EPOCH_MS + seq, {"n": seq, "value": EDGE_VALUES[str(args.value)].make()})
            await handle.append([event])
        await handle.flush()
    finally:
        await handle.close()
        if handle.next_seq:
            reader = await backend.open(side, "read")
            try:
                life.direct_read = tuple(await reader.read())
            finally:
                await reader.close()


def op_read_only(sim: Simulation, args: ReadOnlyArgs) -> str:
    """A reader beside the writer, as ``dsh-sim inspect`` or a session picker is: list the
    sessions (header-only reads), open this one read-only, read it twice, try to write through
    it, close it and read again.  What it saw goes to the observers (the checker holds it to
    the spec: the valid prefix on disk, writes and closed reads refused)."""
    life = _require_session(sim)

    async def peek(life: Lifetime) -> ReaderView:
        backend = life.runtime.backend if life.runtime is not None else life.handle._backend
        listed = tuple(sorted(stat.header.id for stat in await backend.list()))
        handle = await backend.open(sim.config.session_id, "read")
        first = tuple(await handle.read())
        tail = tuple(await handle.read(len(first) // 2))
        refusals: dict[str, str] = {}
        for name, call in (("append", lambda: handle.append([])), ("flush", handle.flush)):
            try:
                await call()
                refusals[name] = "allowed"
            except Exception as err:
                refusals[name] = type(err).__name__
        await handle.close()
        try:
            await handle.read()
            refusals["closed-read"] = "allowed"
        except Exception as err:
            refusals["closed-read"] = type(err).__name__
        return ReaderView(listed, first, tail, refusals)

    reply = sim.run(peek)
    if reply.error is None and not life.dead and reply.done:
        view: ReaderView = reply.value
        sim.notify("on_reader", life, view)
        return view.outcome()
    if reply.error is not None and not life.dead:
        sim.notify("on_reader_failed", life, reply.error)
    return _outcome(life, reply)


def op_set_approval_policy(sim: Simulation, args: SetApprovalPolicyArgs) -> str:
    life = _require_live(sim)
    if life.live_runtime().approval is None:
        raise StepNotApplicable("no approval service is mounted")

    async def change(life: Lifetime) -> None:
        approval = life.live_runtime().approval
        if approval is None:
            raise RuntimeError("the approval service is no longer mounted")
        approval.set_policy(life.agent, args.policy)

    return _outcome(life, sim.run(change))


def op_set_sandbox_mode(sim: Simulation, args: SetSandboxModeArgs) -> str:
    life = _require_live(sim)

    async def change(life: Lifetime) -> None:
        life.live_runtime().hooks.services["sandbox"].set_mode(life.agent, args.mode)

    return _outcome(life, sim.run(change))


def op_arm(sim: Simulation, args: ArmArgs) -> str:
    sim.plan.add(args.rule)
    return "armed"


def op_crash_now(sim: Simulation, args: CrashSpec) -> str:
    life = _require_session(sim)
    sim.kill_now(args)
    return f"crashed:{life.crash.label if life.crash else '?'}"


def op_second_writer(sim: Simulation, args: object) -> str:
    _require_session(sim)
    if sim.disk.resolve(sim.config.log_path) is None:
        raise StepNotApplicable("the session log is not published yet, so there is nothing to contend for")
    life = sim.boot(secondary=True)
    if life.boot_error is not None:
        return f"refused:{type(life.boot_error).__name__}"
    return "opened"


def op_retry_unknown(sim: Simulation, args: object) -> str:
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
        calls.append(ToolCall(f"{call_id}-retry{sim.retries}", "pay", arguments))
    if not calls:
        return "nothing-to-retry"
    return op_prompt(sim, PromptArgs("retry the unknown payments", (ModelResponse("retrying", tuple(calls)),)))


def op_seed_v0(sim: Simulation, args: SeedV0Args) -> str:
    """Start from a historical log: place a v0 generation (written the way the reference writes
    it) for the configured session on the disk, durably, before the first boot.

    The history is described logically (:func:`~dsh_sim.scenario.v0.describe.describe`) and
    rendered as v0 bytes, torn or damaged as ``args`` says; the description goes on the
    history, where the judges derive what migrating it must publish — independently of the
    runtime's decoder and migration."""
    if sim.lifetimes:
        raise StepNotApplicable("seed_v0 sets up the starting state: it must come before the first boot")
    cfg = sim.config
    path = cfg.v0_path
    if sim.disk.resolve(path) is not None or sim.disk.resolve(cfg.log_path) is not None:
        raise StepNotApplicable("the session already has a log")
    session = describe(args, cfg.session_id, cfg.workspace, cfg.system)
    source = render(build(session), cfg.compression)
    expected = expected_migration(session, cfg.compression)
    sim.disk.write_file_durable(path, source.data)
    if source.damage is not None and expected.refused:
        sim.history.corruptions.append(Corruption(path, source.damage, complete_frame=True))
    sim.history.seeded = SeededLog(path, cfg.log_path, source.data, session)
    sim.legacy_writer = legacy_append
    migrated: int | str = "refused" if expected.refused else len(expected.records)
    sim.trace.record("seed_v0", path, len(source.data), migrated)
    return f"seeded:v0:{'damaged' if expected.refused else expected.source_events}->{migrated}"


def _between_processes(sim: Simulation, what: str) -> None:
    if any(not life.dead for life in sim.lifetimes):
        raise StepNotApplicable(f"{what} while no process runs: a process is running (stop or crash it first)")


def _changed_since_crash(sim: Simulation) -> None:
    """Another program changed the disk while no process ran: the latest crash's image becomes
    the disk as it is now — what the next boot that gets past the links recovers from, and
    what no dead process may change (``fidelity``)."""
    crashes = sim.history.crashes
    if not crashes:
        return
    latest = crashes[-1]
    changed = attrs.evolve(latest, image=sim.disk.image())
    crashes[-1] = changed
    for life in sim.lifetimes:
        if life.crash is latest:
            life.crash = changed


def op_plant_link(sim: Simulation, args: PlantLinkArgs) -> str:
    """A link at a session path, to a directory (holding one file) or file of the same kind
    outside the root; a log or lock file already there is moved aside until ``remove_links``.
    The runtime must never reach the target through it (session files are never reached
    through symlinks: :mod:`dsh_sim.engine.links`)."""
    _between_processes(sim, "a link is planted")
    paths = sim.config.paths
    path = {"project": paths.project_dir, "session": paths.session_dir, "log": paths.log, "lock": paths.lock}[args.at]
    if sim.disk.resolve(path) is not None and args.at in ("project", "session"):
        raise StepNotApplicable(f"{path} already exists: a directory link is planted only where nothing is yet")
    planted = links.plant(sim.disk, sim.history, path, directory=args.at in ("project", "session"))
    _changed_since_crash(sim)
    sim.trace.record("plant_link", path, planted.target)
    return f"planted:{args.at}"


def op_remove_links(sim: Simulation, args: RemoveLinksArgs) -> str:
    """The operator's repair before the next boot: the links go, what they displaced comes back."""
    _between_processes(sim, "links are removed")
    removed = links.remove_all(sim.disk, sim.history)
    if removed:
        _changed_since_crash(sim)
    sim.trace.record("remove_links", removed)
    return f"removed:{removed}"


RUNNERS: dict[str, Callable[[Simulation, Any], str]] = {
    "boot": op_boot,
    "plant_link": op_plant_link,
    "remove_links": op_remove_links,
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
    outcome = RUNNERS[step.op](sim, step.args)
    if sim.unfit is not None:
        raise StepNotApplicable(sim.unfit)
    sim.trace.record("step", step.op, outcome)
    sim.notify("on_step", step.op, outcome, step.args)
    return outcome
