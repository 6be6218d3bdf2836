"""The two test tiers, timed as a user runs them: wall time and the CPU time of pytest and all its
workers (pytest-xdist, ``-n auto`` from pyproject), and the number of tests each ran.

    python benchmarks/bench_tiers.py            # the quick tier, then everything
    python benchmarks/bench_tiers.py --quick    # the quick tier only

Targets (issue 35): the quick tier (``pytest -m "not slow"``) within 90 s and everything
(``pytest``, the README's test command) within 8 minutes, on 2 cores.  Wall time is what the
target names, so it is reported; on a shared machine read it beside the CPU time (the CPU time
does not move with the neighbours, the wall time does).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIERS = {"quick": ["-m", "not slow"], "everything": []}


def run_tier(name: str) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TIERS[name]],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = next((line for line in reversed(done.stdout.splitlines()) if re.search(r"\d+ (passed|failed)", line)), "?")
    if done.returncode != 0:
        summary += f"  (exit {done.returncode})"
    return wall, cpu, summary.strip("= ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the quick tier only")
    args = parser.parse_args()
    print(f"{'tier':<12}{'wall':>10}{'CPU':>10}  tests")
    for name in ("quick",) if args.quick else tuple(TIERS):
        wall, cpu, summary = run_tier(name)
        print(f"{name:<12}{wall:>9.1f}s{cpu:>9.1f}s  {summary}", flush=True)
    print(f"({os.cpu_count()} cores; load average now {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
