"""Run one benchmark script on two checkouts in turn and print the ratio of one figure, pair by pair.

CPU time on a shared machine drifts by tens of percent between identical runs; a figure
measured on two checkouts at different times compares the machine's moods as much as the
code.  This runs the same script on the base checkout and on this one alternately (B A B A
...), pulls one number out of each run's output with a regular expression, and prints every
pair's ratio and the median ratio: pairs measured back to back share the machine's state.

The base is a directory holding another checkout (``git worktree add`` or ``git archive REV |
tar -x -C DIR``), with its own ``benchmarks/`` directory; the script runs from there with
``PYTHONPATH`` set to that checkout, so each side imports its own code.  An older checkout
whose benchmark scripts predate a figure needs a copy of a script that works there.

    python benchmarks/paired.py --base /tmp/base --script bench_explore_scaling.py \\
        --pattern 'std-8\\s+\\d+\\s+\\d+\\s+\\d+\\s+\\d+\\s+([\\d.]+)' --rounds 5 --label 'std-8 CPU s'
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys

from _bench import refuse

HERE = os.path.dirname(os.path.abspath(__file__))


def run_once(root: str, script: str, args: list[str], pattern: re.Pattern[str]) -> float:
    """One run of ``script`` in ``root``'s benchmarks directory; the figure ``pattern`` captures."""
    env = dict(os.environ, PYTHONPATH=root)
    bench_dir = os.path.join(root, "benchmarks")
    done = subprocess.run([sys.executable, script, *args], cwd=bench_dir, env=env, capture_output=True, text=True, check=False)
    match = pattern.search(done.stdout)
    if done.returncode != 0 or match is None:
        last = ((done.stdout + done.stderr).strip().splitlines() or ["(no output)"])[-1]
        refuse(f"{bench_dir}/{script} exited {done.returncode} without the figure; its last line: {last[:200]}")
    try:
        return float(match.group(1))
    except (IndexError, ValueError):
        refuse(f"--pattern must capture a number in its first group, it captured {match.group(0)[:80]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="directory of the base checkout")
    parser.add_argument("--script", required=True, help="benchmark script name (in each side's benchmarks/)")
    parser.add_argument("--pattern", required=True, help="regular expression whose first group is the figure")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--label", default="figure")
    parser.add_argument("args", nargs="*", help="arguments for the script (after --)")
    args = parser.parse_args()
    if not os.path.isdir(os.path.join(args.base, "benchmarks")):
        refuse(f"{args.base}: no benchmarks/ directory (not a checkout?)")
    this = os.path.dirname(HERE)
    for root in (args.base, this):
        if not os.path.isfile(os.path.join(root, "benchmarks", args.script)):
            refuse(f"{root}/benchmarks/{args.script}: no such script")
    if args.rounds < 1:
        refuse(f"--rounds must be at least 1, got {args.rounds}")
    try:
        pattern = re.compile(args.pattern)
    except re.error as err:
        refuse(f"--pattern is not a regular expression: {err}")
    if pattern.groups < 1:
        refuse("--pattern needs a group that captures the figure, e.g. 'CPU s\\s+([\\d.]+)'")
    ratios: list[float] = []
    print(f"{'round':>5}  {'base ' + args.label:>22}  {'this ' + args.label:>22}  this/base")
    for index in range(args.rounds):
        base = run_once(args.base, args.script, args.args, pattern)
        mine = run_once(this, args.script, args.args, pattern)
        ratios.append(mine / base)
        print(f"{index + 1:>5}  {base:>22.3f}  {mine:>22.3f}  {mine / base:9.3f}", flush=True)
    print(f"median this/base: {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}, {len(ratios)} pairs)")


if __name__ == "__main__":
    main()
