"""Simulated seconds per wall second on the standard session (the sim:real ratio).

The *standard session* (defined below, default deployment: zstd log, checkpoint policy,
approval service) is what a typical crash test looks like: a boot, then ``--prompts``
prompts, each a multi-step turn with a parallel pair of read-only calls, a keyed payment, a
workspace write and an approved message; halfway through, the process is killed after the
payment was applied but before its response arrived (3→4), rebooted with repair, and the
model retries the unknown payment with the same key.  Virtual time comes only from what
the simulation models (model chunk spacing, service latencies; ``--think`` adds idle user
time between prompts).  The run is deterministic: every repetition advances the same
virtual time in the same jumps.

Figure: virtual seconds (``Simulation.now()``) / wall seconds of the whole run (median of
``--repeat`` runs).  Baseline in the same run: a trivial ``trio.run`` under the same
``MockClock`` that sleeps through exactly the same sequence of clock jumps and does nothing
else — the ceiling any trio-based simulator could reach — and the ratio between the two.

    python benchmarks/bench_sim_speed.py --prompts 8 --repeat 5
"""

from __future__ import annotations

import argparse
from typing import Any

import trio
from _bench import median, print_table, timed

from dsh_sim.engine.determinism import new_clock
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.engine.machine import Simulation
from dsh_sim.evidence.checker import Checker
from dsh_sim.scenario.codec import step_of
from dsh_sim.scenario.model import Scenario
from dsh_sim.scenario.steps import apply

SEED = 20261130


def turn(n: int) -> dict[str, Any]:
    """One prompt: read-only pair in parallel, then a payment, a note, a message; then done."""
    c = f"t{n}"
    return {
        "text": f"prompt {n}",
        "responses": [
            {
                "text": "checking the balances first",
                "tool_calls": [
                    {"id": f"{c}-b1", "name": "get_balance", "arguments": {"account": "bob"}},
                    {"id": f"{c}-b2", "name": "get_balance", "arguments": {"account": "alice"}},
                ],
            },
            {"text": "paying bob", "tool_calls": [{"id": f"{c}-pay", "name": "pay", "arguments": {"to": "bob", "amount": n + 1}}]},
            {
                "text": "writing it down",
                "tool_calls": [
                    {
                        "id": f"{c}-note",
                        "name": "write_note",
                        "arguments": {"path": f"/sim/workspace/note-{n}.txt", "text": f"paid bob {n + 1}"},
                    },
                ],
            },
            {
                "text": "telling alice",
                "tool_calls": [{"id": f"{c}-msg", "name": "send_message", "arguments": {"to": "alice", "text": f"paid bob {n + 1}"}}],
            },
            {"text": f"done with prompt {n}: bob was paid and alice was told"},
        ],
        "approvals": ["allowed-once"],  # the simulated user allows the message once
    }


def standard_session(prompts: int, think: float, crash: bool) -> Scenario:
    steps: list[dict[str, Any]] = [{"op": "boot", "args": {}}]
    for n in range(prompts):
        if crash and n == prompts // 2:
            rule = {
                "point": "world.respond",
                "action": "crash",
                "hit": 1,
                "lifetime": 1,
                "match": {"call_id": f"t{n}-pay"},
                "crash": {"kind": "kill"},
            }
            steps += [
                {"op": "arm", "args": {"rule": rule}},
                {"op": "prompt", "args": turn(n)},
                {"op": "boot", "args": {}},
                {"op": "retry_unknown", "args": {}},
            ]
        else:
            steps.append({"op": "prompt", "args": turn(n)})
        if think:
            steps.append({"op": "advance", "args": {"seconds": think}})
    return Scenario(
        name="standard-session", seed=SEED, steps=tuple(step_of(s["op"], s["args"]) for s in steps), description=__doc__.splitlines()[0]
    )


def run_session(scenario: Scenario) -> tuple[Simulation, list[float], list[str]]:
    """Replay the session; returns the simulation, the clock's jumps in order, the outcomes."""
    sim = Simulation(scenario.seed, scenario.sim_config())
    Checker.attach(sim)
    jumps: list[float] = []
    jump = sim.clock.jump

    def counting_jump(seconds: float) -> None:  # every advance of virtual time goes through here
        jumps.append(seconds)
        jump(seconds)

    sim.clock.jump = counting_jump  # type: ignore[method-assign]
    outcomes = []
    try:
        for step in scenario.steps:
            outcomes.append(apply(sim, step))
    finally:
        sim.shutdown()
    return sim, jumps, outcomes


def trivial_loop(jumps: list[float]) -> None:
    """The same virtual timeline in one bare ``trio.run``: one sleep per recorded jump."""

    async def main() -> None:
        for seconds in jumps:
            await trio.sleep(seconds)

    trio.run(main, clock=new_clock())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=8, help="prompts in the standard session (default 8)")
    parser.add_argument("--repeat", type=int, default=5, help="runs to take the median of (default 5)")
    parser.add_argument("--think", type=float, default=0.0, help="idle virtual seconds between prompts (default 0)")
    parser.add_argument("--no-crash", action="store_true", help="leave out the mid-session kill + recovery")
    args = parser.parse_args()

    scenario = standard_session(args.prompts, args.think, not args.no_crash)
    walls, virtual, jumps, sim, outcomes = [], 0.0, [], None, []
    with capture_runtime_logs():
        for _ in range(args.repeat):
            wall, (sim, jumps, outcomes) = timed(lambda: run_session(scenario))
            walls.append(wall)
            virtual = sim.now()
    assert sim is not None
    violations = Checker.of(sim).violations
    if violations:
        raise SystemExit(f"the standard session violated an invariant: {violations[0].describe()}")
    base = median([timed(lambda: trivial_loop(jumps))[0] for _ in range(args.repeat)])
    wall = median(walls)
    tool_calls = len(sim.world.ledger)
    print(
        f"standard session: {len(scenario.steps)} steps ({args.prompts} prompts, crash={'no' if args.no_crash else 'kill 3→4 + recovery + retry'}), "
        f"{len(sim.lifetimes)} lifetimes, {tool_calls} service calls, {len(jumps)} clock jumps, outcomes {sorted(set(outcomes))}"
    )
    print_table(
        ["run", "virtual s", "wall s", "sim:real", "wall ms / jump"],
        [
            ["dsh-sim standard session", virtual, wall, virtual / wall, 1e3 * wall / len(jumps)],
            ["bare trio.run, same jumps", virtual, base, virtual / base, 1e3 * base / len(jumps)],
        ],
    )
    print(
        f"sim:real ratio = {virtual / wall:.2f} : 1   (the bare loop is {wall / base:.0f}x faster: the cost is the runtime + harness, not trio's clock)"
    )


if __name__ == "__main__":
    main()
