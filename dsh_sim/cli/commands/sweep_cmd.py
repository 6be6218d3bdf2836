"""``dsh-sim sweep SCENARIO...``: an I/O error and a cancellation at every position of every
durability sequence of each scenario, every run judged (:func:`dsh_sim.api.sweep`)."""

from __future__ import annotations

from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, emit_json
from dsh_sim.outputs import check_output_dir


def main(args: Any) -> int:
    check_output_dir(args.found_dir, "--found-dir")
    files = api.expand(args.files)
    scenarios = [api.load(path) for path in files]  # every file is checked before the first sweep starts
    out = []
    for path, scenario in zip(files, scenarios):
        swept = api.sweep(scenario, found_dir=args.found_dir)
        out.append(swept.row())
        if not args.json:
            s = out[-1]
            print(
                f"{path}: {swept.result.runs_text()} over {s['positions']} positions in {s['seconds']}s; {len(s['violations'])} violation(s)"
            )
            for problem in s["baseline"]:
                print(f"  NOT SWEPT: the scenario itself does not hold: {problem}")
            for v in s["violations"]:
                print(f"  VIOLATION {v['invariant']} after {v['action']} at {v['position']}")
                print(f"    {v['message'].splitlines()[0]}")
                print(f"    replay: dsh-sim replay {v['scenario']}")
    if args.json:
        emit_json(out)
    return EXIT_OK if not any(s["violations"] or s["baseline"] for s in out) else EXIT_VIOLATION
