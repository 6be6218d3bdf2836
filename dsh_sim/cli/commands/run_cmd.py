"""``dsh-sim run``: the main job, as a campaign (:func:`dsh_sim.api.run`).

Replay every committed scenario (outcome, fired faults, recorded digest, two re-checked in
fresh processes), explore every crash state of each passing scenario, check that the corpus
still kills every durability mutant, fuzz both machines for the budget; write each task's
results document into the run's own directory as it finishes, merge them (plus any
``--from`` runs) into the report, print the totals and exit non-zero on a violation, a
surviving mutant, a failed task or an unmet coverage requirement.

The corpus is ``scenarios/starter`` and ``scenarios/regressions`` (committed); other
directories under ``scenarios/`` (untracked findings in ``scenarios/found``) are skipped and
named.  ``--scenarios`` replays exactly the files and directories given instead.  One worker
runs in this process; ``--workers N`` on an embedded Dask LocalCluster; ``--scheduler`` on
an existing Dask cluster.  Every input is checked before anything runs.
"""

from __future__ import annotations

import sys
from typing import Any

from dsh_sim import api


def main(args: Any) -> int:
    outcome = api.run(
        budget=args.budget,
        workers=args.workers,
        scheduler=args.scheduler,
        scenarios=args.scenarios,
        out=args.out,
        inputs=args.inputs,
        resume=args.resume,
        seed=args.seed,
        examples=args.examples,
        steps=args.steps,
        fuzz_shards=args.fuzz_shards,
        bound=args.bound,
        skip=args.skip,
        rechecks=args.rechecks,
        json=args.json,
        argv=getattr(args, "command_line", None) or sys.argv[1:],
        cluster_patience=args.cluster_patience,
    )
    return outcome.code
