"""``dsh-sim run``: the main job.

Replay every committed scenario (outcome, fired faults, recorded digest), explore every
crash state of each passing scenario, check that the corpus still kills every durability
mutant, fuzz both machines for the budget, re-check determinism in fresh processes, write one results document per part, merge them (plus any
``--from`` inputs) into the report, print a short summary and exit non-zero on a violation
or an unmet coverage requirement.  ``--workers N`` shards scenarios and fuzz seeds over N
processes; results of separate runs merge with ``--from``.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from typing import Any

from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, CliError
from dsh_sim.cli.commands.explore_cmd import saver
from dsh_sim.cli.commands.replay_cmd import check_determinism, replay_one
from dsh_sim.cli.commands.report_cmd import read_documents, report_and_judge
from dsh_sim.drivers.explore import explore
from dsh_sim.drivers.fuzz import fuzz
from dsh_sim.drivers.selftest import run_mutants, summary
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.evidence.results import explore_document, meta, write
from dsh_sim.outputs import check_output_dir, ensure_output_dir
from dsh_sim.scenario.model import Scenario, discover, load

DETERMINISM_SAMPLES = 2
FOUND_DIR = "scenarios/found"  # where fuzz (its default) and explore save what they find


def _shard(items: list[str], shard: str | None) -> list[str]:
    if not shard:
        return items
    index, count = (int(x) for x in shard.split("/"))
    return items[index::count]


def run_part(args: Any, seed: int, results_dir: str, tag: str) -> list[str]:
    """Replay, explore and fuzz this shard's share; returns the result files written."""
    written: list[str] = []
    scenarios = _shard(discover(args.scenarios), args.shard) if os.path.isdir(args.scenarios) else []
    started = time.perf_counter()
    loaded: list[Scenario] = []
    rows = []
    for path in scenarios:
        loaded.append(load(path))
        rows.append(replay_one(path, scenario=loaded[-1]))
    replay_doc: dict[str, Any] = {
        "meta": meta("replay", scenarios=len(rows), seconds=round(time.perf_counter() - started, 3), shard=args.shard),
        # scenarios that expect a violation or switch on a mutant are self-tests of the harness,
        # not coverage of the runtime: their crashes stay out of the matrices
        "cases": [c for r in rows if r["expected"] == {"outcome": "pass"} and not r.get("mutants") for c in r["cases"]],
        "checked": _sum_counts(r["checked"] for r in rows),
        "points": {name: {"hits": n} for name, n in _sum_counts(r["points"] for r in rows).items()},
        "violations": [
            {
                "invariant": r["invariant"] or "expectation",
                "message": "; ".join(r["problems"]),
                "scenario": r["scenario"],
                "source": "replay",
            }
            for r in rows
            if not r["ok"]
        ],
        "determinism": [
            {
                "scenario": r["scenario"],
                "digest_a": r["recorded_digest"],
                "digest_b": r["digest"],
                "same": r["recorded_digest"] == r["digest"],
                "how": "recorded vs this process",
            }
            for r in rows
            if r["recorded_digest"]
        ],
    }
    for path in scenarios[:DETERMINISM_SAMPLES]:
        check = check_determinism(path)
        replay_doc["determinism"].append({**check, "how": "two fresh processes, PYTHONHASHSEED 1 and 2"})
    written.append(write(replay_doc, os.path.join(results_dir, f"replay{tag}.json")))
    print(f"replayed {len(rows)} scenario(s): {sum(r['ok'] for r in rows)} hold", flush=True)
    shared_cache: dict[str, Any] = {}
    skipped = []
    for index, (path, scenario) in enumerate(zip(scenarios, loaded)):
        if not scenario.passes_clean:
            skipped.append(path)  # a self-test of the harness (expects a violation): replayed, not explored
            continue
        with capture_runtime_logs():
            result = explore(scenario, bound=args.bound, on_violation=saver(FOUND_DIR), cache=shared_cache)
        written.append(write(explore_document(result, path, result.seconds), os.path.join(results_dir, f"explore{tag}-{index:03d}.json")))
        print(
            f"explored {path}: {sum(result.explored.values())}/{sum(result.possible.values())} states, {len(result.violations)} violation(s), {result.seconds:.1f}s",
            flush=True,
        )
    if skipped:
        print(
            f"not explored: {len(skipped)} self-test scenario(s) that expect a violation ({', '.join(os.path.basename(p) for p in skipped)})",
            flush=True,
        )
    if not args.shard or args.shard.startswith("0/"):
        started = time.perf_counter()
        with capture_runtime_logs():
            kills = run_mutants(corpus_dir=os.path.join(args.scenarios, "starter"), methods=("corpus",))
        stats = summary(kills)
        written.append(
            write(
                {
                    "meta": meta("mutants", methods=["corpus"], seconds=round(time.perf_counter() - started, 3), **stats),
                    "kill_matrix": [k.row() for k in kills],
                },
                os.path.join(results_dir, f"mutants{tag}.json"),
            )
        )
        print(f"self-test: the corpus kills {stats['killed']}/{stats['mutants']} durability mutants", flush=True)
        if stats["survivors"]:
            print(f"  survivors: {', '.join(stats['survivors'])}", flush=True)
    for machine, share in (("durability", 0.75), ("storage", 0.25)):
        with capture_runtime_logs():
            run = fuzz(machine, budget=args.budget * share, seed=seed)
        written.append(write(run.document(meta("fuzz")), os.path.join(results_dir, f"fuzz-{machine}{tag}.json")))
        found = f"; VIOLATION {run.found.invariant} saved to {run.found.path}" if run.found else ""
        print(f"fuzzed {machine}: seed {seed}, {run.examples} examples, {run.steps} steps in {run.seconds:.1f}s{found}", flush=True)
    return written


def _sum_counts(dicts: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in dicts:
        for key, n in d.items():
            out[key] = out.get(key, 0) + n
    return out


def main(args: Any) -> int:
    if args.workers < 1:
        raise CliError("--workers must be at least 1")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    results_dir = ensure_output_dir(os.path.join(args.out, "results"))
    check_output_dir(FOUND_DIR)
    if args.shard:  # a worker of a parallel run: do the share, write results, no report
        run_part(args, seed, results_dir, f"-shard{args.shard.replace('/', 'of')}")
        return EXIT_OK
    for stale in discover(results_dir):  # this run's results replace the previous run's
        os.remove(stale)  # removes a link itself, never its target
    print(f"dsh-sim run: seed {seed}, fuzz budget {args.budget:.0f}s, {args.workers} worker(s)", flush=True)
    if args.workers == 1:
        run_part(args, seed, results_dir, "")
    else:
        procs = []
        for index in range(args.workers):
            cmd = [
                sys.executable,
                "-m",
                "dsh_sim",
                "run",
                "--shard",
                f"{index}/{args.workers}",
                "--budget",
                str(args.budget),
                "--scenarios",
                args.scenarios,
                "--out",
                args.out,
                "--seed",
                str(seed + index),
            ]
            if args.bound is not None:
                cmd += ["--bound", str(args.bound)]
            procs.append(subprocess.Popen(cmd))
        codes = [p.wait() for p in procs]
        if any(codes):
            raise CliError(f"a worker failed (exit codes {codes})", EXIT_VIOLATION)
    return report_and_judge(read_documents([results_dir] + list(args.inputs)), args.out)
