"""``dsh-sim run``: the main job.

Replay every committed scenario (outcome, fired faults, recorded digest), explore every
crash state of each passing scenario, check that the corpus still kills every durability
mutant, explore the published DSH's writer and compare a sample of our recoveries with DSH's
reader when DSH is installed (``dsh-sim dsh setup``; otherwise one line says it was skipped),
fuzz both machines for the budget, re-check determinism in fresh processes, write
one results document per part, merge them (plus any ``--from`` inputs) into the report,
print a short summary and exit non-zero on a violation or an unmet coverage requirement.

The corpus is ``scenarios/starter`` and ``scenarios/regressions`` (committed); other
directories under ``scenarios/`` (untracked findings in ``scenarios/found``) are skipped and
named.  ``--scenarios`` replays exactly the files and directories given instead.
``--workers N`` shards scenarios and fuzz seeds over N processes and prints the totals.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, CliError
from dsh_sim.drivers.selftest import summary
from dsh_sim.evidence.results import explore_document, meta, write
from dsh_sim.outputs import check_output_dir, ensure_output_dir
from dsh_sim.scenario.files import corpus, discover

DETERMINISM_SAMPLES = 2
FOUND_DIR = "scenarios/found"  # where fuzz (its default) and explore save what they find
MUTANT_CORPUS = "scenarios/starter"  # the corpus the mutant self-test replays (shard 0)


def _scenario_files(args: Any) -> list[str]:
    if args.scenarios:
        return api.expand(args.scenarios)
    files, skipped = corpus("scenarios")
    if not args.shard:
        for directory, count in skipped:
            if count:
                print(
                    f"skipped {directory}: {count} scenario(s) outside the committed corpus (replay them with dsh-sim replay {directory})"
                )
    return files


def _sum_counts(dicts: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in dicts:
        for key, n in d.items():
            out[key] = out.get(key, 0) + n
    return out


def _replay_document(results: list[api.ReplayResult], seconds: float, shard: str | None) -> dict[str, Any]:
    rows = [r.row() for r in results]
    return {
        "meta": meta("replay", scenarios=len(rows), seconds=round(seconds, 3), shard=shard),
        # scenarios that expect a violation or switch on a mutant are self-tests of the harness,
        # not coverage of the runtime: their crashes stay out of the matrices
        "cases": [c for r in rows if r["expected"] == {"outcome": "pass"} and not r["mutants"] for c in r["cases"]],
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


def run_part(args: Any, files: list[str], seed: int, results_dir: str, tag: str) -> list[str]:
    """Replay, explore and fuzz this shard's share; returns the result files written."""
    if args.shard:
        index, count = (int(x) for x in args.shard.split("/"))
        files = files[index::count]
    scenarios = [api.load(path) for path in files]
    written: list[str] = []
    started = time.perf_counter()
    results = [api.replay(scenario, path=path) for path, scenario in zip(files, scenarios)]
    replay_doc = _replay_document(results, time.perf_counter() - started, args.shard)
    for path in files[:DETERMINISM_SAMPLES]:
        check = api.check_determinism(path)
        replay_doc["determinism"].append(
            {
                "scenario": path,
                "digest_a": check.digest_a,
                "digest_b": check.digest_b,
                "same": check.same,
                "how": "two fresh processes, PYTHONHASHSEED 1 and 2",
            }
        )
    written.append(write(replay_doc, os.path.join(results_dir, f"replay{tag}.json")))
    print(f"replayed {len(results)} scenario(s): {sum(r.ok for r in results)} hold", flush=True)
    for result in results:
        if not result.ok:
            print(f"  FAIL {result.label}: {'; '.join(result.problems)}", flush=True)
    cache: dict[str, Any] = {}
    skipped = []
    for index, (path, scenario) in enumerate(zip(files, scenarios)):
        if not scenario.passes_clean:
            skipped.append(path)  # a self-test of the harness (expects a violation): replayed, not explored
            continue
        explored = api.explore(scenario, bound=args.bound, cache=cache)
        doc = explore_document(explored, path, explored.seconds)
        written.append(write(doc, os.path.join(results_dir, f"explore{tag}-{index:03d}.json")))
        print(
            f"explored {path}: {sum(explored.explored.values())}/{sum(explored.possible.values())} states, "
            f"{len(explored.violations)} violation(s), {explored.seconds:.1f}s",
            flush=True,
        )
    if skipped:
        names = ", ".join(os.path.basename(p) for p in skipped)
        print(f"not explored: {len(skipped)} self-test scenario(s) that expect a violation ({names})", flush=True)
    if not args.shard or args.shard.startswith("0/"):
        started = time.perf_counter()
        kills = api.mutants(corpus_dir=MUTANT_CORPUS, methods=("corpus",))
        stats = summary(kills)
        doc = {
            "meta": meta("mutants", methods=["corpus"], seconds=round(time.perf_counter() - started, 3), **stats),
            "kill_matrix": [k.row() for k in kills],
        }
        written.append(write(doc, os.path.join(results_dir, f"mutants{tag}.json")))
        print(f"self-test: the corpus kills {stats['killed']}/{stats['mutants']} durability mutants", flush=True)
        if stats["survivors"]:
            print(f"  survivors: {', '.join(stats['survivors'])}", flush=True)
        from dsh_sim.dsh.run_phase import run_dsh_phase  # the published DSH, when installed (one line when not)

        written += run_dsh_phase(files, scenarios, results_dir, tag)
    for machine, share in (("durability", 0.75), ("storage", 0.25)):
        run = api.fuzz(machine, budget=args.budget * share, seed=seed)
        written.append(write(run.document(meta("fuzz")), os.path.join(results_dir, f"fuzz-{machine}{tag}.json")))
        found = f"; VIOLATION {run.found.invariant} saved to {run.found.path}" if run.found else ""
        print(f"fuzzed {machine}: seed {seed}, {run.examples} examples, {run.steps} steps in {run.seconds:.1f}s{found}", flush=True)
    return written


def totals(docs: list[dict[str, Any]]) -> str:
    """One line adding up the shards' result documents."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        by_kind.setdefault(doc["meta"].get("kind", "?"), []).append(doc)
    replayed = sum(d["meta"].get("scenarios", 0) for d in by_kind.get("replay", []))
    failed = sum(len(d["violations"]) for d in by_kind.get("replay", []))
    explored = by_kind.get("explore", [])
    states = sum(d["meta"].get("states", 0) for d in explored)
    violations = sum(len(d["violations"]) for d in explored)
    fuzzed = by_kind.get("fuzz", [])
    examples = sum(d["meta"].get("examples", 0) for d in fuzzed)
    return (
        f"total over {len(docs)} result document(s): replayed {replayed} scenario(s), {replayed - failed} hold; "
        f"explored {len(explored)} scenario(s), {states} crash states, {violations} violation(s); "
        f"fuzzed {examples} examples in {len(fuzzed)} run(s)"
    )


def main(args: Any) -> int:
    if args.workers < 1:
        raise CliError("--workers must be at least 1")
    check_output_dir(args.out, "--out")
    check_output_dir(os.path.join(args.out, "results"), "--out")
    files = _scenario_files(args)
    for path in files:  # a bad file is refused before anything runs
        api.load(path)
    if (not args.shard or args.shard.startswith("0/")) and not discover(MUTANT_CORPUS):
        # the self-test reads it after the replays and explorations: refused now, not then
        raise CliError(f"{MUTANT_CORPUS}: no scenarios for the mutant self-test (run from a clone of the repository)")
    if args.inputs:
        api.read_results(args.inputs)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    results_dir = ensure_output_dir(os.path.join(args.out, "results"))
    check_output_dir(FOUND_DIR)
    if args.shard:  # a worker of a parallel run: do the share, write results, no report
        run_part(args, files, seed, results_dir, f"-shard{args.shard.replace('/', 'of')}")
        return EXIT_OK
    for stale in discover(results_dir):  # this run's results replace the previous run's
        os.remove(stale)  # removes a link itself, never its target
    print(f"dsh-sim run: seed {seed}, fuzz budget {args.budget:.0f}s, {args.workers} worker(s), {len(files)} scenario(s)", flush=True)
    if args.workers == 1:
        run_part(args, files, seed, results_dir, "")
    else:
        procs = []
        for index in range(args.workers):
            cmd = [sys.executable, "-m", "dsh_sim", "run", "--shard", f"{index}/{args.workers}", "--budget", str(args.budget)]
            cmd += ["--out", args.out, "--seed", str(seed + index), "--scenarios", *files]
            if args.bound is not None:
                cmd += ["--bound", str(args.bound)]
            procs.append(subprocess.Popen(cmd))
        codes = [p.wait() for p in procs]
        if any(codes):
            raise CliError(f"a worker failed (exit codes {codes})", EXIT_VIOLATION)
        print(totals(api.read_results([results_dir])), flush=True)
    report = api.report([results_dir] + list(args.inputs), args.out)
    print("\n".join(report.lines))
    return EXIT_VIOLATION if report.failed else EXIT_OK
