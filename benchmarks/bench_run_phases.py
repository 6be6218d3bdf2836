"""Where the main job's time goes: ``dsh-sim run`` once, then its own record (``run.json``) read
back — wall and CPU per phase (replay, explore, fuzz, mutants, the DSH phase) and per task kind —
beside the CPU time of the whole process tree as the operating system counted it.

    python benchmarks/bench_run_phases.py                      # the README's main job (seed 7)
    python benchmarks/bench_run_phases.py -- --skip dsh        # extra arguments for dsh-sim run

A phase's wall time is what the submitter saw (its first task started to its last finished; the
DSH phase around its call); its CPU time is each task's process and the children it waited for,
measured where the task ran (the DSH phase's Node processes included).  The process tree's CPU
(``RUSAGE_CHILDREN``) also holds start-up, planning, the report and the waiting loop: the
difference is the harness's own overhead.  Choose the next speed-up from the largest row.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORDER = ("replay", "explore", "fuzz", "mutants", "dsh")  # the order the run goes through them


def fmt(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds:8.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("extra", nargs="*", help="arguments passed on to dsh-sim run (after --)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-run-") as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "dsh_sim", "run", "--seed", str(options.seed), "--out", out, *options.extra],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        tree_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        records = [os.path.join(out, "runs", run, "run.json") for run in sorted(os.listdir(os.path.join(out, "runs")))]
        if done.returncode not in (0, 1) or not records or not os.path.isfile(records[-1]):
            raise SystemExit(f"dsh-sim run failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
        with open(records[-1], encoding="utf-8") as handle:
            record = json.load(handle)["campaign"]
    print(f"dsh-sim run --seed {options.seed} {' '.join(options.extra)}".rstrip())
    print(f"{'phase':10} {'tasks':>5} {'wall s':>8} {'CPU s':>8} {'CPU share':>9}")
    cpu_total = sum(p["cpu_seconds"] for p in record["phases"].values()) or 1.0
    for kind in sorted(record["phases"], key=lambda k: ORDER.index(k) if k in ORDER else len(ORDER)):
        phase = record["phases"][kind]
        share = 100 * phase["cpu_seconds"] / cpu_total
        tasks = f"{phase['tasks']:5d}" if kind != "dsh" else f"{'(run)':>5}"  # the submitter runs it, not a task
        print(f"{kind:10} {tasks} {fmt(phase['wall_seconds'])} {fmt(phase['cpu_seconds'])} {share:8.1f}%")
    for kind, why in record.get("skipped", {}).items():
        print(f"{kind:10} skipped: {why}")
    print(f"{'run':10} {'':5} {fmt(record['wall_seconds'])} {fmt(record['cpu_seconds'])}   (the run's own record)")
    print(f"{'process':10} {'':5} {fmt(wall)} {fmt(tree_cpu)}   (dsh-sim and every child, start-up and report included)")
    print(f"harness overhead outside the phases: {tree_cpu - record['cpu_seconds']:.1f} CPU-s")


if __name__ == "__main__":
    main()
