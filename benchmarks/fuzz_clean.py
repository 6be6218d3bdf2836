"""Long fuzzing of the correct runtime: every finding is a false positive of a judge.

    python benchmarks/fuzz_clean.py storage 1 41            # seeds 1..40, 200 examples each
    python benchmarks/fuzz_clean.py durability 1 31 --examples 200

One line per seed: the machine, the seed, examples and rule-steps run, ``clean`` or the first
finding (its invariant and message; the minimal scenario is written under ``--out``), and the
CPU seconds.  The judges' false-positive figure in benchmarks/README.md is the sum of these lines.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from dsh_sim.drivers.fuzz import fuzz
from dsh_sim.engine.logs import capture_runtime_logs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("machine", choices=("durability", "storage"))
    parser.add_argument("first", type=int, help="first seed")
    parser.add_argument("end", type=int, help="seed after the last")
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--out", default=None, help="where found scenarios go (default: a new temporary directory)")
    args = parser.parse_args()
    if args.end <= args.first:
        parser.error(f"no seeds from {args.first} to {args.end} (the end is the seed after the last)")
    if args.examples < 1:
        parser.error(f"--examples must be at least 1, got {args.examples}")
    out = args.out or tempfile.mkdtemp(prefix="fuzz-clean-")
    examples = steps = findings = 0
    started = time.process_time()
    for seed in range(args.first, args.end):
        t = time.process_time()
        with capture_runtime_logs():
            run = fuzz(args.machine, budget=1e9, examples=args.examples, seed=seed, out_dir=out, minimize_budget=5.0, shrink_budget=10.0)
        examples, steps = examples + run.examples, steps + run.steps
        findings += run.found is not None
        what = f"{run.found.invariant}: {run.found.message[:300]}" if run.found else "clean"
        print(f"{args.machine} {seed} {run.examples} {run.steps} {what} {time.process_time() - t:.0f}cpu-s", flush=True)
    print(
        f"{args.machine}: {examples} examples, {steps} rule-steps, {findings} finding(s), {time.process_time() - started:.0f} CPU-s; scenarios in {out}"
    )


if __name__ == "__main__":
    main()
