"""One exploration of the standard session, for instruction counts under valgrind.

CPU time on a shared machine moves by tens of percent between identical runs; the number of
instructions a run executes does not.  This runs what ``bench_explore_scaling.py`` times —
a warm-up (the 1-prompt session, sampled), then the standard session with ``N`` prompts
explored exhaustively with a fresh cache — and prints its CPU seconds and states, so that

    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \\
        python benchmarks/explore_once.py 2

reports in ``I refs`` the instructions of exactly that work (plus the interpreter's start-up
and imports, the same on both sides of a comparison).  Compare two builds by their counts;
``bench_explore_scaling.py`` prints the outcome hash that shows both explored the same states.
"""

from __future__ import annotations

import argparse
import time

from _bench import refuse
from bench_sim_speed import standard_session

from dsh_sim.drivers.explore import explore
from dsh_sim.engine.logs import capture_runtime_logs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prompts", type=int, nargs="?", default=8, help="prompts in the standard session (default 8)")
    args = parser.parse_args()
    if args.prompts < 1:
        refuse(f"prompts must be at least 1, not {args.prompts}")
    with capture_runtime_logs():
        explore(standard_session(1, 0.0, False), cache={}, bound=2)
        started = time.process_time()
        result = explore(standard_session(args.prompts, 0.0, True), cache={})
        print(f"std-{args.prompts}: {len(result.states)} states in {time.process_time() - started:.2f} CPU-s")


if __name__ == "__main__":
    main()
