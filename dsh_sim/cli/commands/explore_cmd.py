"""``dsh-sim explore SCENARIO...``: every crash state of each scenario, checked."""

from __future__ import annotations

import hashlib
import os
from typing import Any

from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, CliError, emit_json
from dsh_sim.cli.commands.replay_cmd import expand
from dsh_sim.drivers.explore import ExploreResult, explore
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.evidence.results import explore_document, write
from dsh_sim.outputs import check_output_dir
from dsh_sim.scenario.model import Scenario, ScenarioError, dumps, load, save


def saver(found_dir: str) -> Any:
    def save_repro(scenario: Scenario) -> str:
        digest = hashlib.sha256(dumps(scenario).encode()).hexdigest()[:8]
        path = os.path.join(found_dir, f"{scenario.expect.invariant}-explore-{digest}.json")
        if not os.path.exists(path):
            save(scenario, path)
        return path

    return save_repro


def summary(result: ExploreResult) -> dict[str, Any]:
    return {
        "scenario": result.scenario,
        "crash_points": len(result.points),
        "states": len(result.states),
        "recoveries_run": sum(not s.shared for s in result.states),
        "possible": sum(result.possible.values()),
        "explored": sum(result.explored.values()),
        "sampled_points": result.sampled,
        "per_point": {
            name: {"possible": result.possible[name], "explored": result.explored.get(name, 0)} for name in sorted(result.possible)
        },
        "violations": [{"invariant": v.invariant, "message": v.describe(), "scenario": s.repro} for s, v in result.violations],
        "seconds": round(result.seconds, 3),
    }


def main(args: Any) -> int:
    if getattr(args, "runtime", "dsh-sim") == "dsh":  # extension point: the published DSH's writer on SimFS
        from dsh_sim.dsh.explore_cli import run_explore_dsh

        return run_explore_dsh(args, list(expand(args.files)))
    check_output_dir(args.found_dir)  # refused now, not after minutes of fuzzing
    out = []
    docs = []
    for path in expand(args.files):
        try:
            scenario = load(path)
        except ScenarioError as err:
            raise CliError(str(err)) from None
        with capture_runtime_logs():
            result = explore(scenario, crash=args.crash, model=args.model, bound=args.bound, on_violation=saver(args.found_dir))
        out.append(summary(result))
        docs.append(explore_document(result, path, result.seconds))
        if not args.json:
            s = out[-1]
            sampled = f", sampled at {sum(s['sampled_points'].values())} point(s)" if s["sampled_points"] else " (exhaustive)"
            print(
                f"{path}: {s['explored']}/{s['possible']} crash states checked at {s['crash_points']} points{sampled}; "
                f"{s['recoveries_run']} distinct recoveries in {s['seconds']}s; {len(s['violations'])} violation(s)"
            )
            seen = set()
            for violation in s["violations"]:
                key = (violation["invariant"], violation["scenario"])
                if key not in seen:
                    seen.add(key)
                    print(f"  {violation['message'].splitlines()[0]}\n    replay: dsh-sim replay {violation['scenario']}")
    if args.results:
        for index, doc in enumerate(docs):
            base, ext = os.path.splitext(args.results)
            write(doc, args.results if len(docs) == 1 else f"{base}-{index}{ext or '.json'}")
    if args.json:
        emit_json(out)
    return EXIT_OK if not any(s["violations"] for s in out) else EXIT_VIOLATION
