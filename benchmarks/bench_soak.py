"""Soak: does a long fuzz run keep its memory flat?

Runs ``python -m dsh_sim fuzz --budget SECONDS`` as a child process (exactly what a user or
a campaign shard runs) and samples the child's resident set size every ``--every`` seconds.
Reports RSS at minute 1 and at the end, the growth between them, and the examples done;
the target is growth < 15 MB over a 10-minute run.  Not part of the test suite: it takes
as long as its budget.

``--tracemalloc`` instead runs the fuzz driver in this process under tracemalloc (much
slower), snapshots after minute 1 and at the end, and prints the allocation sites that grew
most, with their tracebacks: how the causes fixed in issue 15 were found.

``--pythonpath DIR`` imports ``dsh_sim`` from another checkout (an export of an older commit)
for before/after figures.

    python benchmarks/bench_soak.py                         # 10 minutes, durability machine
    python benchmarks/bench_soak.py --minutes 5 --pythonpath /tmp/base
    python benchmarks/bench_soak.py --minutes 3 --tracemalloc
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import psutil
from _bench import print_table


def soak(args: argparse.Namespace) -> dict[str, Any]:
    env = {**os.environ}
    if args.pythonpath:
        env["PYTHONPATH"] = os.path.abspath(args.pythonpath)
    seconds = args.minutes * 60
    with tempfile.TemporaryDirectory(prefix="dsh-soak-") as found:
        cmd = [sys.executable, "-m", "dsh_sim", "fuzz", "--machine", args.machine, "--budget", str(seconds), "--seed", str(args.seed)]
        cmd += ["--found-dir", os.path.join(found, "found"), "--json"]
        started = time.monotonic()
        # cwd outside any checkout: with -m, the working directory comes first on sys.path and
        # would shadow --pythonpath
        child = subprocess.Popen(cmd, env=env, cwd=found, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        proc = psutil.Process(child.pid)
        samples: list[tuple[float, float]] = []
        while child.poll() is None:
            try:
                samples.append((time.monotonic() - started, proc.memory_info().rss / 2**20))
            except psutil.NoSuchProcess:
                break
            if args.verbose:
                print(f"{samples[-1][0]:7.1f}s  {samples[-1][1]:7.1f} MB", flush=True)
            time.sleep(args.every)
        out = child.communicate()[0]
    result = json.loads(out) if out.strip().startswith("{") else {}
    minute = next((rss for t, rss in samples if t >= 60), float("nan"))
    end = samples[-1][1] if samples else float("nan")
    return {
        "samples": samples,
        "rss_start": samples[0][1] if samples else float("nan"),
        "rss_minute_1": minute,
        "rss_end": end,
        "rss_peak": max((rss for _, rss in samples), default=float("nan")),
        "growth_after_minute_1": end - minute,
        "examples": result.get("examples"),
        "steps": result.get("steps"),
        "seconds": result.get("seconds"),
        "found": (result.get("found") or {}).get("invariant"),
    }


def traced(args: argparse.Namespace) -> None:
    import tracemalloc

    from dsh_sim import api

    seconds = args.minutes * 60
    snapshots: dict[str, Any] = {}

    def progress(run: Any) -> None:
        if run.seconds >= 60 and "minute" not in snapshots:
            gc.collect()
            snapshots["minute"] = tracemalloc.take_snapshot()

    tracemalloc.start(args.frames)
    with tempfile.TemporaryDirectory(prefix="dsh-soak-") as found:
        run = api.fuzz(args.machine, budget=seconds, seed=args.seed, found_dir=found, progress=progress)
    gc.collect()
    end = tracemalloc.take_snapshot()
    if "minute" not in snapshots:
        print("the run ended before minute 1: nothing to compare")
        return
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__)]
    stats = end.filter_traces(ignore).compare_to(snapshots["minute"].filter_traces(ignore), "traceback")
    print(f"{run.examples} examples; traced memory growth after minute 1, top {args.top} sites:")
    for stat in stats[: args.top]:
        print(f"\n{stat.size_diff / 1024:+.0f} KiB in {stat.count_diff:+d} blocks")
        for line in stat.traceback.format()[-2 * args.frames :]:
            print("   ", line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--machine", choices=("durability", "storage"), default="durability")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--every", type=float, default=5.0, help="seconds between RSS samples")
    parser.add_argument("--pythonpath", default=None, help="import dsh_sim from here (before/after figures)")
    parser.add_argument("--tracemalloc", action="store_true", help="find what grows instead (in process, slow)")
    parser.add_argument("--frames", type=int, default=6, help="with --tracemalloc: traceback depth")
    parser.add_argument("--top", type=int, default=10, help="with --tracemalloc: sites shown")
    parser.add_argument("--verbose", action="store_true", help="print every sample")
    args = parser.parse_args()
    if args.tracemalloc:
        traced(args)
        return
    figures = soak(args)
    rows = [[f"{t / 60:.1f}", rss] for t, rss in figures["samples"][:: max(1, int(60 / args.every))]]
    print_table(["minute", "RSS MB"], rows, title=f"dsh-sim fuzz --machine {args.machine} --seed {args.seed}, {args.minutes:g} min")
    print()
    print_table(
        ["RSS start", "RSS minute 1", "RSS end", "peak", "growth after minute 1", "examples", "target"],
        [
            [
                figures["rss_start"],
                figures["rss_minute_1"],
                figures["rss_end"],
                figures["rss_peak"],
                figures["growth_after_minute_1"],
                figures["examples"] or "-",
                "< 15 MB",
            ]
        ],
    )
    if figures["found"]:
        print(f"(the run stopped early: it found {figures['found']})")


if __name__ == "__main__":
    main()
