"""The starter scenario corpus, generated (``python -m dsh_sim.drivers.corpus scenarios/starter``).

Each scenario is replayed once here to record its trace digest and to prove it holds; the
files are then committed and every run replays them.  Regenerating is deliberate: digests
change when the runtime's behaviour does, and the diff shows which scenarios moved.

Torn-frame scenarios use an explicit post-crash state computed from a recorded run (the
exact byte where the cut lands: inside the magic, the frame header, a block, the checksum),
so they keep meaning what their name says.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import attrs

from dsh_sim.adapters.simfs.crash import PowerCut, TornCut
from dsh_sim.adapters.simfs.disk import Disk, WriteOp
from dsh_sim.adapters.simfs.torn import classify
from dsh_sim.drivers.explore import record
from dsh_sim.drivers.machines.strategies import aimed_crash_rule
from dsh_sim.drivers.replay import judge, run_scenario
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.scenario.codec import config_of, step_of
from dsh_sim.scenario.files import save
from dsh_sim.scenario.model import Expectation, Scenario

SEED = 20261130
BOOT = {"op": "boot", "args": {}}

TOOL_CALLS: dict[str, dict[str, Any]] = {
    "pay": {"name": "pay", "arguments": {"to": "bob", "amount": 7}},
    "pay_legacy": {"name": "pay_legacy", "arguments": {"to": "bob", "amount": 7}},
    "send_message": {"name": "send_message", "arguments": {"to": "alice", "text": "hi"}},
    "get_balance": {"name": "get_balance", "arguments": {"account": "bob"}},
    "write_note": {"name": "write_note", "arguments": {"path": "/sim/workspace/notes.txt", "text": "a"}},
    "batch_pay": {"name": "batch_pay", "arguments": {"payments": [{"to": "bob", "amount": 1}, {"to": "alice", "amount": 2}]}},
    "shell": {"name": "shell", "arguments": {"argv": ["write", "out.txt", "x"]}},
}
BOUNDARY_SLUG = {"before 1": "before-1", "1→2": "1-2", "2→3": "2-3", "3→4": "3-4", "after 4": "after-4"}


def _scenario(*, steps: tuple[dict[str, Any], ...], config: dict[str, Any] | None = None, **fields: Any) -> Scenario:
    """A scenario from the plain JSON steps and config this module writes (validated like a file)."""
    return Scenario(steps=tuple(step_of(s["op"], s["args"]) for s in steps), config=config_of(config or {}), **fields)


def prompt(*calls: dict[str, Any], approvals: list[str] | None = None, text: str = "go") -> dict[str, Any]:
    responses = [{"text": "working", "tool_calls": list(calls)}] if calls else []
    return {"op": "prompt", "args": {"text": text, "responses": responses + [{"text": "done"}], "approvals": approvals or []}}


def call(call_id: str, kind: str) -> dict[str, Any]:
    return {"id": call_id, **TOOL_CALLS[kind]}


def arm(rule: dict[str, Any]) -> dict[str, Any]:
    return {"op": "arm", "args": {"rule": rule}}


def boundary_scenarios() -> list[Scenario]:
    """Each boundary of the four moments for each tool kind (a read-only call first, so the
    assistant message is durable before the chosen call — the case that separates
    TOOL_NOT_STARTED from TOOL_OUTCOME_UNKNOWN)."""
    out = []
    for kind in TOOL_CALLS:
        for boundary, slug in BOUNDARY_SLUG.items():
            crash = {"kind": "kill"} if slug in ("1-2", "3-4") and kind in ("pay", "write_note") else {"kind": "power", "state": "drop"}
            script = prompt(call("c0", "get_balance"), call("c1", kind), approvals=["allowed-once"] if kind == "send_message" else [])
            rule = aimed_crash_rule(script["args"], 1, "c1", boundary, crash, 1)
            out.append(
                _scenario(
                    name=f"boundary-{slug}-{kind}",
                    description=f"{crash['kind']} crash {boundary} of a {kind} call (preceded by a read-only call)",
                    seed=SEED,
                    steps=(BOOT, arm(rule), script, BOOT, prompt(text="after recovery")),
                )
            )
    return out


def _torn_cuts(base: Scenario, point: str, occurrence: int, *, last: bool = False) -> dict[str, PowerCut]:
    """Explicit power cuts, one per torn class, for the last unsynced write of the log at a point:
    the first cut of each class (``last``: the last one — in a frame of several blocks, the one
    in its final block, after the others are whole)."""
    points, _, _, stopped = record(base)
    if stopped is not None:
        raise LookupError(f"the base scenario {base.name} cannot run: {stopped}")
    log_path = base.sim_config().log_path
    cp = next(p for p in points if p.point == point and p.occurrence == occurrence and p.details.get("path") == log_path)
    disk = Disk.from_image(cp.image)
    log = disk.resolve(base.sim_config().log_path)
    if log is None:
        raise LookupError(f"{log_path} is not on the disk at {point} #{occurrence}")
    node = disk.file(log)
    index = max(i for i, op in enumerate(node.pending) if isinstance(op, WriteOp))
    op = node.pending[index]
    assert isinstance(op, WriteOp)
    cuts: dict[str, PowerCut] = {}
    for cut, cls in sorted(classify(op.data).items(), reverse=last):
        if 0 < cut < len(op.data) and cls not in cuts:
            cuts[cls] = PowerCut((TornCut(log, index, cut),))
    return cuts


# What recovery does with each torn class's cut (checked against the recovery by the tests)
_TORN_OUTCOME = {
    "checksum": "with complete records; recovery truncates the torn frame and re-appends its records",
    "mid-line": "the last line is cut short; recovery truncates it",
    "before-newline": "the last line lacks only its newline; a raw torn tail recovers nothing, so recovery truncates it",
    "line-boundary": "the cut falls between lines; there is no torn tail and every whole line stays",
}


def torn_scenarios() -> list[Scenario]:
    out = []
    for compression in ("zstd", "none"):
        # the second turn's window write is in the page cache when the power fails
        steps = (BOOT, prompt(call("c1", "get_balance")), {"op": "advance", "args": {"seconds": 1}}, prompt(call("c2", "pay")))
        base = _scenario(name="base", seed=SEED, steps=steps, config={"compression": compression})
        # fsync #9 is turn 2's tools/execute checkpoint: the batch holding the assistant message and tool/call c2
        for cls, cut in _torn_cuts(base, "fs.fsync", 9).items():
            rule = {
                "point": "fs.fsync",
                "action": "crash",
                "hit": 9,
                "lifetime": 1,
                "crash": {"kind": "power", "state": "cut", "cut": cut.to_json()},
            }
            what = _TORN_OUTCOME.get(cls, "without complete records; recovery truncates the torn frame")
            out.append(
                _scenario(
                    name=f"torn-{compression}-{cls}",
                    seed=SEED,
                    config={"compression": compression},
                    description=f"power loss tears the last unsynced {compression} batch ({cls}): {what}",
                    steps=(BOOT, arm(rule)) + steps[1:] + (BOOT, prompt(text="after recovery")),
                )
            )
    big = (
        BOOT,
        {"op": "append", "args": {"count": 1}},
        {"op": "flush", "args": {}},
        {"op": "append", "args": {"count": 30, "size": 6000}},
        {"op": "flush", "args": {}},
    )
    base = _scenario(name="base", seed=SEED, steps=big, machine="storage")
    cut = _torn_cuts(base, "fs.fsync", 2, last=True)["block"]  # the big batch's append fsync, torn in its second block
    rule = {
        "point": "fs.fsync",
        "action": "crash",
        "hit": 2,
        "lifetime": 1,
        "crash": {"kind": "power", "state": "cut", "cut": cut.to_json()},
    }
    out.append(
        _scenario(
            name="torn-zstd-multiblock-partial-records",
            seed=SEED,
            machine="storage",
            description="a >128 KiB batch frame torn inside its second block: the complete records of the first block are recovered",
            steps=(BOOT, arm(rule)) + big[1:] + (BOOT, {"op": "append", "args": {"count": 1}}, {"op": "flush", "args": {}}),
        )
    )
    return out


def fault_scenarios() -> list[Scenario]:
    pay = call("c1", "pay")
    return [
        _scenario(
            name="fsync-fail-on-append",
            seed=SEED,
            machine="storage",
            description="an append's fsync fails (dirty data dropped, Linux style): rolled back, retried, nothing acknowledged lost",
            steps=(
                BOOT,
                {"op": "append", "args": {"count": 2}},
                {"op": "flush", "args": {}},
                arm({"point": "fs.fsync", "action": "fsync_fail", "hit": 1, "drop_dirty": True, "lifetime": 1}),
                {"op": "append", "args": {"count": 2}},
                {"op": "flush", "args": {}},
                {"op": "flush", "args": {}},
                {"op": "crash_now", "args": {"kind": "power", "state": "drop"}},
                BOOT,
            ),
        ),
        _scenario(
            name="window-write-fails-then-recovers",
            seed=SEED,
            description="a background (window) write fails: the batch is kept, retried with the next events, and a clean shutdown persists everything",
            steps=(
                BOOT,
                prompt(call("c1", "get_balance")),
                arm({"point": "fs.write", "action": "error", "errno": "EIO", "hit": 1, "lifetime": 1}),
                {"op": "advance", "args": {"seconds": 0.5}},
                prompt(call("c2", "get_balance")),
                {"op": "advance", "args": {"seconds": 1}},
            ),
        ),
        _scenario(
            name="fsync-fail-on-first-publication",
            seed=SEED,
            machine="storage",
            description="the temp file's fsync fails during first publication: nothing published, the retry publishes",
            steps=(
                BOOT,
                arm({"point": "fs.fsync", "action": "fsync_fail", "hit": 1, "lifetime": 1}),
                {"op": "append", "args": {"count": 2}},
                {"op": "flush", "args": {}},
                {"op": "flush", "args": {}},
                {"op": "crash_now", "args": {"kind": "power", "state": "drop"}},
                BOOT,
            ),
        ),
        _scenario(
            name="cancel-while-tool-checkpoint-pending",
            seed=SEED,
            description="the turn is cancelled while the tools/execute checkpoint flush runs: ABORTED_BEFORE_DISPATCH, no effect",
            steps=(
                BOOT,
                arm({"point": "session.flush", "action": "cancel", "hit": 1, "lifetime": 1, "match": {"reason": "tools/execute"}}),
                prompt(pay),
            ),
        ),
        _scenario(
            name="cancel-during-tool-body",
            seed=SEED,
            description="the turn is cancelled while the payment is in flight: the effect happens, the result says ABORTED (never 'before dispatch')",
            steps=(
                BOOT,
                arm({"point": "world.deliver", "action": "cancel", "hit": 1, "lifetime": 1, "match": {"root_call_id": "c1"}}),
                prompt(pay),
            ),
        ),
        _scenario(
            name="approval-never",
            seed=SEED,
            description="policy never: the message is rejected inside the service, audit pair logged, no effect",
            steps=(
                BOOT,
                {"op": "set_approval_policy", "args": {"policy": "never"}},
                prompt(call("c1", "send_message"), approvals=["allowed-once"]),
            ),
        ),
        _scenario(
            name="approval-unavailable",
            seed=SEED,
            description="nobody answers: unavailable, fails closed, no effect",
            steps=(BOOT, prompt(call("c1", "send_message"))),
        ),
        _scenario(
            name="approval-answerer-fails",
            seed=SEED,
            description="the answerer raises: unavailable, fails closed",
            steps=(
                BOOT,
                arm({"point": "approval.answer", "action": "answerer_failure", "hit": 1, "lifetime": 1}),
                prompt(call("c1", "send_message")),
            ),
        ),
        _scenario(
            name="sandbox-unavailable",
            seed=SEED,
            description="no sandbox backend: SANDBOX_UNAVAILABLE, the command never runs",
            steps=(
                BOOT,
                arm({"point": "sandbox.confine", "action": "sandbox_unavailable", "hit": 1, "lifetime": 1}),
                prompt(call("c1", "shell")),
            ),
        ),
        _scenario(
            name="sandbox-read-only-denies-write",
            seed=SEED,
            description="read-only mode: the sandbox refuses the write",
            steps=(BOOT, {"op": "set_sandbox_mode", "args": {"mode": "read-only"}}, prompt(call("c1", "shell"))),
        ),
        _scenario(
            name="two-writers",
            seed=SEED,
            description="a second process opens the session for write while the first holds it: refused",
            steps=(
                BOOT,
                prompt(pay),
                {"op": "advance", "args": {"seconds": 1}},
                {"op": "second_writer", "args": {}},
                prompt(call("c2", "get_balance")),
            ),
        ),
        _scenario(
            name="two-writers-storage",
            seed=SEED,
            machine="storage",
            description="storage level: the second writer is refused by the flock",
            steps=(BOOT, {"op": "append", "args": {"count": 2}}, {"op": "flush", "args": {}}, {"op": "second_writer", "args": {}}),
        ),
        _scenario(
            name="idempotent-retry-converges",
            seed=SEED,
            description="crash after the payment, before its result: TOOL_OUTCOME_UNKNOWN; the retry with the same key applies nothing new",
            steps=(
                BOOT,
                arm(
                    {
                        "point": "world.respond",
                        "action": "crash",
                        "hit": 1,
                        "lifetime": 1,
                        "match": {"call_id": "c1"},
                        "crash": {"kind": "kill"},
                    }
                ),
                prompt(pay),
                BOOT,
                {"op": "retry_unknown", "args": {}},
            ),
        ),
        _scenario(
            name="crash-during-recovery",
            seed=SEED,
            description="power fails again while recovery appends its closers; the next recovery still holds",
            steps=(
                BOOT,
                arm({"point": "world.respond", "action": "crash", "hit": 1, "lifetime": 1, "crash": {"kind": "kill"}}),
                prompt(pay),
                arm(
                    {
                        "point": "fs.fsync",
                        "action": "crash",
                        "hit": 1,
                        "lifetime": 2,
                        "crash": {"kind": "power", "state": "torn", "torn_fraction": 0.5},
                    }
                ),
                BOOT,
                BOOT,
                prompt(text="after two recoveries"),
            ),
        ),
        _scenario(
            name="corrupt-complete-frame-refused",
            seed=SEED,
            description="a byte of a complete, checksummed event frame flips on the medium: recovery refuses the log instead of repairing it",
            steps=(
                BOOT,
                prompt(pay),
                {"op": "advance", "args": {"seconds": 1}},
                arm({"point": "agent.turn.start", "action": "corrupt", "hit": 1, "lifetime": 1, "corrupt_offset": -30}),
                prompt(text="again"),
                {"op": "crash_now", "args": {"kind": "kill"}},
                BOOT,
            ),
        ),
        _scenario(
            name="network-response-lost",
            seed=SEED,
            description="the payment happened but its response was lost: an error result, the ledger knows better",
            steps=(
                BOOT,
                arm({"point": "world.respond", "action": "response_lost", "hit": 1, "lifetime": 1}),
                prompt(pay),
                {"op": "crash_now", "args": {"kind": "power", "state": "keep"}},
                BOOT,
            ),
        ),
        _scenario(
            name="network-duplicate-delivery",
            seed=SEED,
            description="a keyed payment delivered twice: the idempotent service applies it once",
            steps=(BOOT, arm({"point": "world.deliver", "action": "duplicate", "hit": 1, "lifetime": 1}), prompt(pay)),
        ),
        _scenario(
            name="no-checkpoint-policy-unsafe",
            seed=SEED,
            config={"checkpoint_policy": False},
            description="without the checkpoint policy, a later call's tool/call misses the window: repair says TOOL_NOT_STARTED for a payment that happened",
            expect=Expectation("violation", "verdict_soundness"),
            steps=(
                BOOT,
                arm(
                    {
                        "point": "world.respond",
                        "action": "crash",
                        "hit": 1,
                        "lifetime": 1,
                        "match": {"call_id": "c2"},
                        "crash": {"kind": "kill"},
                    }
                ),
                prompt(call("c1", "pay"), call("c2", "pay")),
                BOOT,
            ),
        ),
    ]


def build() -> list[Scenario]:
    return boundary_scenarios() + torn_scenarios() + fault_scenarios()


def main(out_dir: str) -> int:
    os.makedirs(out_dir, exist_ok=True)
    failed = 0
    with capture_runtime_logs():
        for scenario in build():
            result, _ = run_scenario(scenario)
            problems = judge(scenario, result, check_digest=False)
            final = attrs.evolve(scenario, trace_digest=result.digest)
            path = save(final, os.path.join(out_dir, f"{scenario.name}.json"), overwrite=True)
            status = "ok" if not problems else "PROBLEM: " + "; ".join(problems)
            failed += bool(problems)
            print(f"{path}: {status}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else "scenarios/starter"))
