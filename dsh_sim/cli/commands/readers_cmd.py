"""``dsh-sim readers``: the reader differential (:mod:`dsh_sim.drivers.readers`).

Every runtime read entry point over logs cut at every byte of their last frame or line,
damaged, bloated and moved under the reader, compared exactly with the spec's reader; exits
1 on any mismatch.  ``--sample`` runs the seeded sample the mutation test command runs.
"""

from __future__ import annotations

import time
from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import emit_json
from dsh_sim.drivers import readers
from dsh_sim.mutation import harness
from dsh_sim.scenario.files import load


def main(args: Any) -> int:
    plan = harness.READER_PLAN if args.sample else readers.FULL_PLAN
    plan = readers.Plan(args.seed, plan.tear_limit, plan.flips, plan.bomb_limit)
    if args.scenarios is None:
        scenarios = harness.named(harness.corpus(), readers.READER_SCENARIOS, "reader set")
    else:
        scenarios = [load(path) for path in api.expand(args.scenarios)]
    started = time.perf_counter()
    run = readers.differential(readers.default_sources(args.seed), readers.corpus_originals(scenarios), plan)
    seconds = time.perf_counter() - started
    if args.json:
        emit_json({"cases": run.cases, "checks": run.checks, "mismatches": list(run.mismatches), "seconds": round(seconds, 2)})
    else:
        for mismatch in run.mismatches:
            print(mismatch)
        print(f"readers: {run.cases} cases, {run.checks} checks, {len(run.mismatches)} mismatches ({seconds:.1f} s)")
    return 1 if run.mismatches else 0
