"""``dsh-sim readers``: the reader differential (:func:`dsh_sim.api.readers`).

Every runtime read entry point over logs cut at every byte of their last frame or line,
damaged, bloated and moved under the reader, compared exactly with the spec's reader; exits
1 on any mismatch.  ``--sample`` runs the seeded sample the mutation test command runs.
"""

from __future__ import annotations

from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, emit_json


def main(args: Any) -> int:
    run = api.readers(seed=args.seed, sample=args.sample, scenarios=args.scenarios)
    if args.json:
        emit_json({"cases": run.cases, "checks": run.checks, "mismatches": list(run.mismatches), "seconds": round(run.seconds, 2)})
    else:
        for mismatch in run.mismatches:
            print(mismatch)
        print(f"readers: {run.cases} cases, {run.checks} checks, {len(run.mismatches)} mismatches ({run.seconds:.1f} s)")
    return EXIT_VIOLATION if run.mismatches else EXIT_OK
