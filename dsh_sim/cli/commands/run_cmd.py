"""``dsh-sim run``: the main job, as a campaign (:mod:`dsh_sim.campaign`).

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

import os
import random
import sys
from typing import Any

from dsh_sim import api
from dsh_sim.campaign.rundir import resolve_inputs
from dsh_sim.campaign.runner import Request, read_texts, run
from dsh_sim.campaign.tasks import Options
from dsh_sim.cli.commands.common import CliError
from dsh_sim.outputs import check_output_dir
from dsh_sim.scenario.files import corpus, discover

FOUND_DIR = "scenarios/found"  # where fuzz (its default) and explore save what they find
MUTANT_CORPUS = "scenarios/starter"  # what the mutant self-test replays
DEFAULT_BUDGET = 60.0
DEFAULT_FUZZ_SHARDS = 4
PLAN_FLAGS = ("scenarios", "seed", "examples", "steps", "fuzz_shards", "bound", "budget", "skip", "rechecks")
DEFAULT_RECHECKS = 2


def _scenario_files(args: Any) -> list[str]:
    if args.scenarios:
        return api.expand(args.scenarios)
    files, skipped = corpus("scenarios")
    for directory, count in skipped:
        if count:  # on stderr with --json: stdout holds only the result
            print(
                f"skipped {directory}: {count} scenario(s) outside the committed corpus (replay them with dsh-sim replay {directory})",
                file=sys.stderr if args.json else sys.stdout,
            )
    if not files:
        raise CliError(
            "scenarios/: no committed corpus here (scenarios/starter, scenarios/regressions); run from a clone or give --scenarios"
        )
    return files


def _check(args: Any) -> None:
    if args.scheduler is not None and args.workers is not None:
        raise CliError("--workers sizes the embedded cluster; with --scheduler the cluster's own workers run the campaign")
    if args.scheduler is not None and not args.scheduler.startswith(("tcp://", "tls://", "inproc://", "ucx://", "ws://", "wss://")):
        raise CliError(f"--scheduler {args.scheduler}: not a Dask scheduler address (tcp://HOST:PORT)")
    if args.resume is not None:
        given = [flag for flag in PLAN_FLAGS if getattr(args, flag) not in (None, [])]
        if given:
            flags = ", ".join("--" + flag.replace("_", "-") for flag in given)
            raise CliError(f"--resume runs the plan of the run it resumes; drop {flags}")
    check_output_dir(args.out, "--out")
    check_output_dir(FOUND_DIR)
    if args.inputs:
        api.read_results(resolve_inputs(args.inputs, args.out))  # refused now, not after the run


def main(args: Any) -> int:
    _check(args)
    scenarios: dict[str, str] = {}
    mutant_corpus: dict[str, str] = {}
    options = None
    if args.resume is None:
        files = _scenario_files(args)
        for path in files:  # a bad file is refused before anything runs
            api.load(path)
        scenarios = read_texts(files)
        if "mutants" not in args.skip:
            if not os.path.isdir(MUTANT_CORPUS) or not discover(MUTANT_CORPUS):
                # refused with the other inputs, before anything runs or is written
                raise CliError(
                    f"{MUTANT_CORPUS}: no scenarios for the mutant self-test (run from a clone of the repository, or --skip mutants)"
                )
            mutant_corpus = read_texts(discover(MUTANT_CORPUS))
        options = Options(
            seed=args.seed if args.seed is not None else random.SystemRandom().randrange(2**32),
            budget=args.budget if args.budget is not None else DEFAULT_BUDGET,
            examples=args.examples,
            workers=args.workers or 1,
            fuzz_shards=args.fuzz_shards or DEFAULT_FUZZ_SHARDS,
            bound=args.bound,
            skip=tuple(sorted(set(args.skip))),
            rechecks=args.rechecks if args.rechecks is not None else DEFAULT_RECHECKS,
            steps=args.steps,
        )
    request = Request(
        out=args.out,
        found_dir=FOUND_DIR,
        scenarios=scenarios,
        mutant_corpus=mutant_corpus,
        options=options,
        resume=args.resume,
        scheduler=args.scheduler,
        inputs=tuple(args.inputs),
        json_mode=args.json,
        argv=tuple(sys.argv[1:]),
        workers_on_resume=args.workers or 1,
    )
    return run(request).code
