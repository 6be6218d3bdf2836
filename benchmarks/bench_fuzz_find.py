"""CPU seconds ``dsh-sim fuzz`` needs to find catalogue mutants, at several step counts.

Rule-steps per CPU-second is not what fuzzing is for: finding bugs is.  Longer examples
cost less Hypothesis and boot overhead per rule-step, but a bug may need a particular short
sequence that long examples reach less often (or shrink from more slowly).  This script runs
the fuzz driver itself (:func:`dsh_sim.drivers.fuzz.fuzz`, the ``fuzz`` settings profile
with ``stateful_step_count`` replaced through its ``steps``) against each ``--mutant`` for every ``--steps`` and
``--seed``, and prints the CPU seconds (``time.process_time``) from the start of the run until
the first violating example ended — before Hypothesis' shrinking, which is cut to a minimum
here (``shrink_budget`` 0.5 s, no minimising, nothing saved).  A run that finds nothing within
``--cap`` wall seconds counts as the cap (shown as ``>cap``).  The literal pool is built before
the clock starts, as in ``bench_fuzz.py``.

    python benchmarks/bench_fuzz_find.py --mutant write_behind.drop_failed_batch \\
        --mutant read.skip_corrupt_complete_frame --steps 12 25 50 --seeds 1 2 3 --cap 45
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from _bench import print_table, refuse

from dsh_sim.drivers import fuzz as fuzz_driver
from dsh_sim.drivers.constants import project_constants
from dsh_sim.mutants.catalogue import MUTANTS


def time_to_find(mutant: str, steps: int, seed: int, cap: float) -> dict[str, Any]:
    """One fuzz run; the CPU seconds and examples until its first violating example."""
    original_class = fuzz_driver._machine_class
    first: dict[str, Any] = {}
    started = time.process_time()

    def machine_class(machine: str, config: Any, run: fuzz_driver.FuzzRun) -> Any:
        cls = original_class(machine, config, run)
        teardown = cls.teardown

        def timed_teardown(self: Any) -> None:
            teardown(self)
            if run.first_failure is not None and not first:
                first.update(cpu=time.process_time() - started, examples=run.examples, steps=run.steps)

        cls.teardown = timed_teardown
        return cls

    fuzz_driver._machine_class = machine_class  # type: ignore[assignment]
    try:
        run = fuzz_driver.fuzz(
            "durability",
            budget=cap,
            seed=seed,
            active_mutants=(mutant,),
            minimize_budget=0.0,
            shrink_budget=0.5,
            on_found=lambda scenario: "(not saved)",
            steps=steps,
        )
    finally:
        fuzz_driver._machine_class = original_class
    return {"found": run.found.invariant if run.found is not None else None, **first}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutant", action="append", required=True, help="a catalogue mutant (repeat for more)")
    parser.add_argument("--steps", type=int, nargs="+", default=[12, 25, 50], help="stateful_step_count values")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--cap", type=float, default=45.0, help="wall seconds per run before it counts as not found")
    args = parser.parse_args()
    unknown = [name for name in args.mutant if name not in MUTANTS]
    if unknown:
        refuse(f"unknown mutant(s): {', '.join(unknown)} (dsh-sim mutants lists the catalogue)")
    if min(args.steps) < 1:
        refuse(f"--steps must each be at least 1, got {min(args.steps)}")
    if not args.cap > 0:
        refuse(f"--cap must be a positive number of seconds, got {args.cap}")

    project_constants()  # built once per process (cached), before any clock starts
    rows = []
    totals = dict.fromkeys(args.steps, 0.0)
    for mutant in args.mutant:
        row: list[Any] = [mutant]
        for steps in args.steps:
            cells = []
            for seed in args.seeds:
                result = time_to_find(mutant, steps, seed, args.cap)
                # found = the run reported it (a violation Hypothesis dropped is not a find)
                cpu = result.get("cpu") if result["found"] is not None else None
                cells.append(f"{cpu:.1f} ({result['examples']} ex)" if cpu is not None else f">{args.cap:.0f}")
                totals[steps] += cpu if cpu is not None else args.cap
            row.append(" / ".join(cells))
        rows.append(row)
    rows.append(["total CPU-s (a miss counts as the cap)", *(f"{totals[s]:.1f}" for s in args.steps)])
    print(f"CPU seconds to the first violating example (examples run), seeds {' / '.join(map(str, args.seeds))}")
    print_table(["mutant", *(f"steps={s}" for s in args.steps)], rows)


if __name__ == "__main__":
    main()
