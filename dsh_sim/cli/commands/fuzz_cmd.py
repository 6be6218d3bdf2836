"""``dsh-sim fuzz``: fuzz with a progress line; on a violation save, print and exit 1."""

from __future__ import annotations

import sys
from typing import Any

from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, CliError, emit_json
from dsh_sim.drivers.fuzz import FuzzRun, fuzz
from dsh_sim.engine.config import SimConfig
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.evidence.results import meta, write
from dsh_sim.mutation.catalogue import CATALOGUE
from dsh_sim.outputs import check_output_dir


def _progress(budget: float) -> Any:
    def show(run: FuzzRun) -> None:
        if sys.stderr.isatty():
            crashes = len(run.cases)
            sys.stderr.write(
                f"\rfuzz {run.machine} seed={run.seed}: {run.examples} examples, {run.steps} steps, "
                f"{crashes} crash recoveries, {run.seconds:.1f}s / {budget:.0f}s "
            )
            sys.stderr.flush()

    return show


def main(args: Any) -> int:
    check_output_dir(args.found_dir)  # refused now, not after minutes of fuzzing
    unknown = [m for m in args.mutant if m not in CATALOGUE]
    if unknown:
        raise CliError(f"unknown mutant(s) {', '.join(unknown)}; see dsh-sim mutants --list")
    config = SimConfig(compression=args.compression, checkpoint_policy=not args.no_checkpoint_policy)
    with capture_runtime_logs():
        run = fuzz(
            args.machine,
            budget=args.budget,
            examples=args.examples,
            seed=args.seed,
            config=config,
            out_dir=args.found_dir,
            active_mutants=tuple(args.mutant),
            progress=None if args.json else _progress(args.budget),
        )
    if sys.stderr.isatty() and not args.json:
        sys.stderr.write("\n")
    doc = run.document(meta("fuzz", config=config.to_json(), mutants=args.mutant))
    if args.results:
        write(doc, args.results)
    found = run.found
    if args.json:
        emit_json(
            {
                "machine": run.machine,
                "seed": run.seed,
                "examples": run.examples,
                "steps": run.steps,
                "seconds": round(run.seconds, 3),
                "crash_recoveries": len(run.cases),
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
            f"fuzz {run.machine}: seed {run.seed}, {run.examples} examples, {run.steps} steps, {len(run.cases)} crash recoveries checked in {run.seconds:.1f}s"
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
