"""Crash states per second in ``explore``, and total explore time for the starter corpus.

Part 1, a few scenarios (``--scenarios``), each explored alone with a fresh cache (kill and
power loss, prefix model, no bound): crash points recorded, crash states checked, distinct
recoveries actually run (the rest share an identical post-crash state's result), wall
seconds, states/s.  Baseline in the same run: one full replay of the same scenario
(``run_scenario``, median of 3) — roughly what a naive explorer would pay *per state* by
replaying the prefix up to the crash and recovering; the ratio is how many naive states
one replay costs against explore's per-state cost.

Part 2, the corpus: every passing, mutant-free scenario of ``scenarios/starter`` explored
in one process with one shared cache, exactly as ``dsh-sim run`` does (``--bound`` as
there); total wall time and states/s, against the baseline of replaying the same corpus
once.  ``--quick`` explores every 5th scenario only; ``--skip-corpus`` leaves part 2 out.

    python benchmarks/bench_explore.py            # about 3 minutes on 2 cores
    python benchmarks/bench_explore.py --quick    # about 1 minute
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from _bench import median, print_table, timed

from dsh_sim.drivers.explore import explore
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.scenario.files import discover, load
from dsh_sim.scenario.model import Scenario

STARTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "starter")
DEFAULT_SCENARIOS = ("boundary-3-4-pay", "torn-zstd-block", "crash-during-recovery", "fsync-fail-on-append")


def replay_seconds(scenario: Scenario, repeat: int = 3) -> float:
    return median([run_scenario(scenario)[0].seconds for _ in range(repeat)])


def per_scenario(names: list[str], corpus: str) -> None:
    rows = []
    for name in names:
        scenario = load(os.path.join(corpus, f"{name}.json"))
        result = explore(scenario, cache={})
        states = len(result.states)
        recoveries = sum(not s.shared for s in result.states)
        replay = replay_seconds(scenario)
        per_state = result.seconds / states
        rows.append(
            [
                name,
                scenario.machine,
                len(result.points),
                states,
                recoveries,
                result.seconds,
                states / result.seconds,
                1e3 * per_state,
                1e3 * replay,
                replay / per_state,
                len(result.violations),
            ]
        )
    print_table(
        [
            "scenario",
            "machine",
            "points",
            "states",
            "recoveries",
            "wall s",
            "states/s",
            "ms/state",
            "replay ms",
            "replay:state",
            "violations",
        ],
        rows,
        title="explore, one scenario at a time (fresh cache each)",
    )


def corpus_run(paths: list[str], bound: int | None) -> None:
    scenarios = [s for s in (load(p) for p in paths) if s.passes_clean]
    cache: dict[str, Any] = {}
    states = recoveries = violations = 0
    start = time.perf_counter()
    for scenario in scenarios:
        result = explore(scenario, bound=bound, cache=cache)
        states += len(result.states)
        recoveries += sum(not s.shared for s in result.states)
        violations += len(result.violations)
    wall = time.perf_counter() - start
    replay, _ = timed(lambda: [run_scenario(s) for s in scenarios])
    print_table(
        ["run", "scenarios", "states", "recoveries", "wall s", "states/s", "explore:replay"],
        [
            [f"explore, shared cache, bound={bound}", len(scenarios), states, recoveries, wall, states / wall, wall / replay],
            ["baseline: replay each once", len(scenarios), "-", "-", replay, "-", 1.0],
        ],
        title="explore the starter corpus (as dsh-sim run does)",
    )
    print(
        f"total explore time for the corpus: {wall:.1f} s ({wall / 60:.1f} min), {violations} violation(s); "
        f"{1 - recoveries / states:.0%} of the states shared a recovery"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", nargs="*", default=list(DEFAULT_SCENARIOS), help="starter scenario names for part 1")
    parser.add_argument("--corpus", default=STARTER, help="scenario directory for part 2 (default scenarios/starter)")
    parser.add_argument("--bound", type=int, default=None, help="sample at most this many states per point (default: exhaustive)")
    parser.add_argument("--quick", action="store_true", help="part 2 on every 5th scenario only")
    parser.add_argument("--skip-corpus", action="store_true", help="part 1 only")
    args = parser.parse_args()
    with capture_runtime_logs():
        if args.scenarios:
            per_scenario(args.scenarios, args.corpus)
        if not args.skip_corpus:
            paths = discover(args.corpus)
            if args.quick:
                paths = paths[::5]
            print()
            corpus_run(paths, args.bound)


if __name__ == "__main__":
    main()
