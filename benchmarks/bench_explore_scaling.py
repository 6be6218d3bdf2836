"""Is explore linear in session length?  States per CPU-second at 2 and at 8 prompts.

Explores the standard session of ``bench_sim_speed.py`` (each prompt: a parallel pair of
read-only calls, a keyed payment, a workspace write, an approved message; a kill 3→4 halfway,
recovery, keyed retry) with ``--small`` and with ``--large`` prompts, each with a fresh
cache, kill and power loss, prefix model, no bound — every crash state of the session.

Figures (CPU time of this process, ``time.process_time``, which includes the simulated
processes' threads; the machine is shared, so wall time would measure the neighbours):
(after an untimed warm-up exploration, so that one-time costs such as lazy imports land on
neither side) crash points, states, distinct recoveries, CPU seconds, states per CPU-second, and the ratio
of the large session's states/CPU-s to the small one's.  A linear explorer keeps that ratio
near 1 (each state costs the same however long the log before it); a quadratic one drops it
roughly by the length ratio.  The ``outcome`` column is a short hash of every state's result
(verdicts, applied effects, violations), so a change that makes explore faster but explores
something else shows up as a different hash.

    python benchmarks/bench_explore_scaling.py                  # std-2 and std-8
    python benchmarks/bench_explore_scaling.py --large 16       # a longer session
    python benchmarks/bench_explore_scaling.py --command        # as a user runs it

``--command`` measures what a user's command costs instead: each session is written to a
scenario file and explored by ``dsh-sim explore FILE --json`` in a child process, and the
figure is that process's whole CPU time (start-up, imports and recording included; no
warm-up), with its peak resident memory.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from _bench import print_table, refuse
from bench_sim_speed import standard_session

from dsh_sim.drivers.explore import ExploreResult, explore
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.scenario.files import save


def outcome_hash(result: ExploreResult) -> str:
    """A short hash of what explore found in every state (not of how fast)."""
    h = hashlib.sha256()
    for s in result.states:
        h.update(repr((s.point, s.kind, s.cut, s.phase, s.torn_class, sorted(s.verdicts.items()), sorted(s.applied.items()))).encode())
        h.update(repr([v.invariant for v in s.violations]).encode())
    return h.hexdigest()[:12]


def measure(prompts: int) -> tuple[list[object], float]:
    scenario = standard_session(prompts, 0.0, True)
    start = time.process_time()
    result = explore(scenario, cache={})
    cpu = time.process_time() - start
    states = len(result.states)
    recoveries = sum(not s.shared for s in result.states)
    row: list[object] = [
        f"std-{prompts}",
        len(result.points),
        states,
        recoveries,
        len(result.violations),
        cpu,
        states / cpu,
        1e3 * cpu / states,
        outcome_hash(result),
    ]
    return row, states / cpu


def measure_command(prompts: int) -> tuple[list[object], float]:
    """``dsh-sim explore`` of the std-``prompts`` session in a child process: its CPU time."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"std-{prompts}.json")
        save(standard_session(prompts, 0.0, True), path)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([sys.executable, "-m", "dsh_sim", "explore", path, "--json"], capture_output=True, text=True, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        refuse(f"dsh-sim explore exited {done.returncode}: {last[:300]}")
    report = json.loads(done.stdout)
    row = report[0] if isinstance(report, list) else report
    states = int(row.get("states", 0))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rss = after.ru_maxrss / 1024
    return [f"std-{prompts}", states, len(row.get("violations", [])), cpu, states / cpu, f"{rss:.0f}"], states / cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=2, help="prompts in the short session (default 2)")
    parser.add_argument("--large", type=int, default=8, help="prompts in the long session (default 8)")
    parser.add_argument("--command", action="store_true", help="measure the dsh-sim explore command in a child process (whole CPU time)")
    args = parser.parse_args()
    if min(args.small, args.large) < 1:
        refuse(f"--small and --large are prompts per session, at least 1 (got {args.small} and {args.large})")
    if args.command:
        small_row, small_rate = measure_command(args.small)
        large_row, large_rate = measure_command(args.large)
        print_table(
            ["session", "states", "violations", "CPU s (command)", "states/CPU-s", "peak RSS MiB"],
            [small_row, large_row],
            title="dsh-sim explore of the standard session, the whole command (kill + power, prefix model, exhaustive)",
        )
        print(
            f"linearity: states/CPU-s at {args.large} prompts / at {args.small} prompts = {large_rate / small_rate:.2f}"
            f" (target >= 0.9 at 100 prompts); std-{args.large}: {large_row[3]:.1f} CPU-s"
        )
        return
    with capture_runtime_logs():
        explore(standard_session(1, 0.0, False), cache={}, bound=2)  # warm-up: imports, first-use caches
        small_row, small_rate = measure(args.small)
        large_row, large_rate = measure(args.large)
    print_table(
        ["session", "points", "states", "recoveries", "violations", "CPU s", "states/CPU-s", "CPU ms/state", "outcome"],
        [small_row, large_row],
        title="explore the standard session (fresh cache each, kill + power, prefix model, exhaustive)",
    )
    print(
        f"linearity: states/CPU-s at {args.large} prompts / at {args.small} prompts = {large_rate / small_rate:.2f} "
        f"(1.0 = linear; target >= 0.67); std-{args.large} explored in {large_row[5]:.1f} CPU-s (target <= 10)"
    )


if __name__ == "__main__":
    main()
