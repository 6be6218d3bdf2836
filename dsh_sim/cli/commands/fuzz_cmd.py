"""``dsh-sim fuzz``: fuzz with a progress line; on a violation save, print and exit 1
(:func:`dsh_sim.api.fuzz`)."""

from __future__ import annotations

import sys
from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, emit_json
from dsh_sim.cli.commands.dsh_cmd import against_line
from dsh_sim.outputs import check_output_dir, check_output_file


def _progress(budget: float) -> Any:
    def show(run: api.FuzzRun) -> None:
        if sys.stderr.isatty():
            sys.stderr.write(
                f"\rfuzz {run.machine} seed={run.seed}: {run.examples} examples, {run.steps} steps, "
                f"{run.recoveries} crash recoveries, {run.seconds:.1f}s / {budget:.0f}s "
            )
            sys.stderr.flush()

    return show


def main(args: Any) -> int:
    if getattr(args, "runtime", "dsh-sim") == "dsh-route":
        from dsh_sim.cli.commands import route_cmd

        return route_cmd.fuzz(args)
    if args.results:
        check_output_file(args.results, "--results")
    check_output_dir(args.found_dir, "--found-dir")
    with api.against_dsh(getattr(args, "against", None) == "dsh") as oracle:  # shrinking and minimising compare too
        run = api.fuzz(
            args.machine,
            budget=args.budget,
            examples=args.examples,
            steps=args.steps,
            seed=args.seed,
            compression=args.compression,
            checkpoint_policy=not args.no_checkpoint_policy,
            mutants=args.mutant,
            found_dir=args.found_dir,
            progress=None if args.json else _progress(args.budget),
            results=args.results,
        )
        against = oracle.summary() if oracle is not None else None
        if against is not None and not args.json:
            print(against_line(against))
    if sys.stderr.isatty() and not args.json:
        sys.stderr.write("\n")
    found = run.found
    if args.json:
        emit_json(
            {
                "machine": run.machine,
                "seed": run.seed,
                "examples": run.examples,
                "discarded_examples": run.discarded,
                "shrink_replays": run.shrink_replays,
                "steps": run.steps,
                "max_rules_per_example": run.rules_per_example,
                "seconds": round(run.seconds, 3),
                "crash_recoveries": run.recoveries,
                "against_dsh": against,
                "found": None
                if found is None
                else {
                    "invariant": found.invariant,
                    "message": found.message,
                    "scenario": found.path,
                    "steps": list(found.steps),
                    "time_to_find": round(found.time_to_find, 3),
                    "steps_before_minimize": found.steps_before,
                    "steps_after": found.steps_after,
                    "digest": found.digest,
                },
            }
        )
    else:
        print(
            f"fuzz {run.machine}: seed {run.seed}, {run.examples} examples of at most {run.rules_per_example} rules, {run.steps} steps, "
            f"{run.recoveries} crash recoveries checked in {run.seconds:.1f}s"
        )
        if found is None:
            print("no invariant violated")
        else:
            print(f"VIOLATION {found.invariant} (first found after {found.time_to_find:.1f}s)")
            print(found.message)
            print(f"saved: {found.path}  ({found.steps_after} steps; replay with: dsh-sim replay {found.path})")
            for index, step in enumerate(found.steps):
                print(f"  {index:>2}. {step}")
    return EXIT_OK if found is None else EXIT_VIOLATION
