"""``dsh-sim sweep SCENARIO...``: an I/O error and a cancellation at every position of every
durability sequence of each scenario, every run judged (see :mod:`dsh_sim.drivers.faultsweep`)."""

from __future__ import annotations

from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, emit_json
from dsh_sim.drivers.faultsweep import SweepResult, sweep
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.outputs import check_output_dir
from dsh_sim.scenario.files import save_found


def summary(result: SweepResult, saved: dict[int, str]) -> dict[str, Any]:
    return {
        "scenario": result.scenario,
        "positions": len(result.positions),
        "runs": result.runs,
        "not_applicable": result.not_applicable,
        "bridged": result.bridged,
        "replays": result.replays,
        "baseline": list(result.baseline),
        "violations": [
            {
                "invariant": found.violation.invariant,
                "action": found.action,
                "position": found.position.describe(),
                "message": found.violation.describe(),
                "scenario": saved.get(index),
            }
            for index, found in enumerate(result.violations)
        ],
        "seconds": round(result.seconds, 3),
    }


def main(args: Any) -> int:
    check_output_dir(args.found_dir, "--found-dir")
    files = api.expand(args.files)
    scenarios = [api.load(path) for path in files]  # every file is checked before the first sweep starts
    out = []
    for path, scenario in zip(files, scenarios):
        with capture_runtime_logs():
            result = sweep(scenario)
        saved = {index: save_found(found.repro, args.found_dir) for index, found in enumerate(result.violations)}
        out.append(summary(result, saved))
        if not args.json:
            s = out[-1]
            print(f"{path}: {result.runs_text()} over {s['positions']} positions in {s['seconds']}s; {len(s['violations'])} violation(s)")
            for problem in s["baseline"]:
                print(f"  NOT SWEPT: the scenario itself does not hold: {problem}")
            for v in s["violations"]:
                print(f"  VIOLATION {v['invariant']} after {v['action']} at {v['position']}")
                print(f"    {v['message'].splitlines()[0]}")
                print(f"    replay: dsh-sim replay {v['scenario']}")
    if args.json:
        emit_json(out)
    return EXIT_OK if not any(s["violations"] or s["baseline"] for s in out) else EXIT_VIOLATION
