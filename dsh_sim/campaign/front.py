"""The campaign as :mod:`dsh_sim.api` offers it: :func:`run` (what ``dsh-sim run`` does) and
:func:`report_runs` (what ``dsh-sim report`` does with run ids).

Here, above the operations and beside the runner, because both name runs under a report
directory (:mod:`~dsh_sim.campaign.rundir`) and ``run`` checks every input before a run
directory exists.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Sequence

from dsh_sim.campaign.cluster import LOST_GRACE
from dsh_sim.campaign.rundir import list_runs, resolve_inputs
from dsh_sim.campaign.runner import Outcome, Request, read_texts
from dsh_sim.campaign.runner import run as run_request
from dsh_sim.campaign.tasks import Options
from dsh_sim.errors import InputError
from dsh_sim.evidence.results import unique
from dsh_sim.operations.results import Report, read_results, report
from dsh_sim.operations.scenarios import expand, load
from dsh_sim.outputs import check_output_dir
from dsh_sim.scenario.files import corpus, discover

__all__ = ["PARTS", "report_runs", "run"]

FOUND_DIR = "scenarios/found"  # where fuzz (its default) and explore save what they find
MUTANT_CORPUS = "scenarios/starter"  # what the mutant self-test replays
DEFAULT_BUDGET = 60.0
DEFAULT_FUZZ_SHARDS = 4
DEFAULT_RECHECKS = 2
PARTS = ("replay", "explore", "fuzz", "mutants", "dsh")  # what --skip may leave out
SCHEDULERS = ("tcp://", "tls://", "inproc://", "ucx://", "ws://", "wss://")


def run(
    *,
    budget: float | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    scenarios: Sequence[str] | None = None,
    out: str = "reports",
    inputs: Sequence[str] = (),
    resume: str | None = None,
    seed: int | None = None,
    examples: int | None = None,
    steps: int | None = None,
    fuzz_shards: int | None = None,
    bound: int | None = None,
    skip: Sequence[str] = (),
    rechecks: int | None = None,
    json: bool = False,
    argv: Sequence[str] = (),
    cluster_patience: float | None = None,
) -> Outcome:
    """The campaign ``dsh-sim run`` runs: replay and explore the corpus, re-check determinism,
    kill the mutants, fuzz, the DSH phase; each task's results document written into a new
    run directory under ``out/runs`` as it finishes, then merged (with ``inputs``: run ids or
    result files) into the report.  Every input is checked before anything runs.

    The keywords are the command's flags: ``budget`` fuzzing seconds per worker (60),
    ``workers`` embedded workers (1: in this process; N: a local Dask cluster), ``scheduler``
    an existing Dask cluster's address, ``scenarios`` files or directories (default: the
    committed corpus, ``scenarios/starter`` and ``scenarios/regressions``), ``resume`` the id
    (or ``latest``) of an interrupted run to finish, ``seed`` (default random), ``examples`` and
    ``steps`` per fuzz shard, ``fuzz_shards`` (4), ``bound`` states per explored point,
    ``skip`` parts (:data:`PARTS`), ``rechecks`` scenarios re-run in two fresh processes (2),
    ``cluster_patience`` seconds a run waits for a lost Dask cluster (no worker, no scheduler)
    before it ends incomplete (20).
    The campaign prints its progress (on stderr with ``json``, which prints the outcome as JSON
    on stdout); ``argv`` is recorded in the run's status.  On SIGINT or SIGTERM the run stops,
    resumable, and the outcome's ``code`` is 130 or 143."""
    given: dict[str, object] = {"scenarios": scenarios, "seed": seed, "examples": examples, "steps": steps, "fuzz_shards": fuzz_shards}
    given |= {"bound": bound, "budget": budget, "skip": skip, "rechecks": rechecks}
    unknown = [part for part in skip if part not in PARTS]
    if unknown:
        raise InputError(f"skip: unknown part {unknown[0]!r}; the parts are {', '.join(PARTS)}")
    if scheduler is not None and workers is not None:
        raise InputError("--workers sizes the embedded cluster; with --scheduler the cluster's own workers run the campaign")
    if cluster_patience is not None and not 0 < cluster_patience <= 3600:
        raise InputError(f"--cluster-patience {cluster_patience:g}: must be more than 0 and at most 3600 seconds")
    if scheduler is not None and not scheduler.startswith(SCHEDULERS):
        raise InputError(f"--scheduler {scheduler}: not a Dask scheduler address (tcp://HOST:PORT)")
    if resume is not None:
        flags = [flag for flag, value in given.items() if value is not None and value not in ([], ())]
        if flags:
            raise InputError(f"--resume runs the plan of the run it resumes; drop {', '.join('--' + f.replace('_', '-') for f in flags)}")
    check_output_dir(out, "--out")
    check_output_dir(FOUND_DIR)
    if inputs:
        read_results(resolve_inputs(inputs, out))  # refused now, not after the run
    texts: dict[str, str] = {}
    mutant_corpus: dict[str, str] = {}
    options = None
    if resume is None:
        files = _scenario_files(scenarios, json)
        for path in files:  # a bad file is refused before anything runs
            load(path)
        texts = read_texts(files)
        if "mutants" not in skip:
            if not os.path.isdir(MUTANT_CORPUS) or not discover(MUTANT_CORPUS):
                # refused with the other inputs, before anything runs or is written
                raise InputError(
                    f"{MUTANT_CORPUS}: no scenarios for the mutant self-test (run from a clone of the repository, or --skip mutants)"
                )
            mutant_corpus = read_texts(discover(MUTANT_CORPUS))
        options = Options(
            seed=seed if seed is not None else random.SystemRandom().randrange(2**32),
            budget=budget if budget is not None else DEFAULT_BUDGET,
            examples=examples,
            workers=workers or 1,
            fuzz_shards=fuzz_shards or DEFAULT_FUZZ_SHARDS,
            bound=bound,
            skip=tuple(sorted(set(skip))),
            rechecks=rechecks if rechecks is not None else DEFAULT_RECHECKS,
            steps=steps,
        )
    request = Request(
        out=out,
        found_dir=FOUND_DIR,
        scenarios=texts,
        mutant_corpus=mutant_corpus,
        options=options,
        resume=resume,
        scheduler=scheduler,
        inputs=tuple(inputs),
        json_mode=json,
        argv=tuple(argv),
        workers_on_resume=workers or 1,
        cluster_patience=cluster_patience if cluster_patience is not None else LOST_GRACE,
    )
    return run_request(request)


def _scenario_files(scenarios: Sequence[str] | None, json: bool) -> list[str]:
    if scenarios:
        return expand(scenarios)
    files, skipped = corpus("scenarios")
    for directory, count in skipped:
        if count:  # on stderr with --json: stdout holds only the result
            print(
                f"skipped {directory}: {count} scenario(s) outside the committed corpus (replay them with dsh-sim replay {directory})",
                file=sys.stderr if json else sys.stdout,
            )
    if not files:
        raise InputError(
            "scenarios/: no committed corpus here (scenarios/starter, scenarios/regressions); run from a clone or give --scenarios"
        )
    return files


def report_runs(runs: Sequence[str] | None = None, out: str = "reports") -> Report:
    """What ``dsh-sim report`` does: merge the result documents of ``runs`` (ids under
    ``out/runs``, ``latest``, or result files and directories; a task of a run counts once
    however often its run is named) into coverage.json/.md/.html under ``out``.  Without
    ``runs``: the latest run under ``out`` (or, from before run directories, ``out/results``)."""
    check_output_dir(out)
    if runs:
        inputs = resolve_inputs(runs, out)
    elif list_runs(out):
        inputs = resolve_inputs(["latest"], out)
    else:
        inputs = [os.path.join(out, "results")]
    return report(unique(read_results(inputs)), out)
