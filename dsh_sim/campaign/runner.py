"""One campaign from start to report: plan (or resume), execute, persist, report, summarise.

Each finished task is persisted the moment it comes back — its found scenarios under the
found directory, its results document in the run directory — so an interrupted run keeps
everything finished so far as a valid, partial result set, and ``--resume`` runs only the
rest.  On SIGINT/SIGTERM the executor is closed (workers and re-check children end), the
run's status says ``incomplete`` and by which signal, one line goes to stderr, and the exit
status is 130 or 143.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

import attrs

from dsh_sim.campaign import display, stop, timing
from dsh_sim.campaign.board import Board, fmt_seconds
from dsh_sim.campaign.cluster import LOST_GRACE
from dsh_sim.campaign.events import ClusterLost, Event, Failed, Finished
from dsh_sim.campaign.inprocess import InProcess
from dsh_sim.campaign.plan import plan, skipped_self_tests
from dsh_sim.campaign.rundir import DSH_RESULTS, RunDir, Status, ended, new_status, publish_latest, resolve_inputs, save_found
from dsh_sim.campaign.summary import totals
from dsh_sim.campaign.tasks import Campaign, Options, kind_of
from dsh_sim.campaign.work import TaskResult
from dsh_sim.evidence.document import Meta, ResultsDocument, unstructure

EXIT_OK, EXIT_FAILED = 0, 1


@attrs.frozen
class Request:
    out: str
    found_dir: str
    scenarios: dict[str, str]  # label -> text (a new run)
    mutant_corpus: dict[str, str]
    options: Options | None  # None: --resume
    resume: str | None = None
    scheduler: str | None = None
    inputs: tuple[str, ...] = ()
    json_mode: bool = False
    argv: tuple[str, ...] = ()
    workers_on_resume: int = 1  # --resume: how many embedded workers this time
    cluster_patience: float = LOST_GRACE  # seconds without a worker or the scheduler before the run ends incomplete


@attrs.frozen
class Outcome:
    """How a campaign ended: its run id and directory, ``complete``/``failed``/``incomplete``,
    the exit status (0: all held; 1: a violation, a survivor, a failed task or an unmet
    requirement; 130/143: stopped by a signal), the closing lines and the report's files."""

    run: str
    path: str
    state: str
    code: int
    lines: tuple[str, ...] = ()
    report: dict[str, str] = attrs.field(factory=dict)


def _executor(request: Request) -> Any:
    """In process for one embedded worker; a Dask cluster (embedded or by address) otherwise."""
    workers = request.options.workers if request.options is not None else 1
    if request.resume is not None and request.scheduler is None:
        workers = request.workers_on_resume
    if request.scheduler is None and workers == 1:
        return InProcess(request.found_dir)
    from dsh_sim.campaign.cluster import DaskCluster

    where = (
        f"connecting to the Dask cluster at {request.scheduler}"
        if request.scheduler
        else f"starting a local Dask cluster of {workers} workers"
    )
    print(f"dsh-sim run: {where}…", file=sys.stderr if request.json_mode else sys.stdout, flush=True)
    return DaskCluster(request.found_dir, workers=workers, scheduler=request.scheduler, patience=request.cluster_patience)


class _Session:
    """The bookkeeping of one execution: the board, the status file, the persisted results."""

    def __init__(self, run: RunDir, campaign: Campaign, status: Status, found_dir: str, argv: Sequence[str]) -> None:
        self.run, self.campaign, self.status, self.found_dir, self.argv = run, campaign, status, found_dir, tuple(argv)
        self.display: display.Display | None = None
        self.board: Board | None = None
        self.clock = timing.Clock({task.id: kind_of(task) for task in campaign.tasks})
        self.skipped = timing.skipped_phases(campaign)
        self.before = timing.read_before(run.path)  # the executions before this one (read once: this one rewrites the file)

    def persist(self, result: TaskResult) -> None:
        save_found(result.found, self.found_dir)
        doc = result.document
        # the command is the submitter's (a Dask worker's own command line says nothing of the run)
        old = doc.meta or Meta()
        meta = attrs.evolve(
            old,
            argv=tuple(self.argv),
            worker_argv=old.argv,
            run=self.run.id,
            task=result.task,
            worker=result.worker,
            cpu_seconds=round(result.cpu_seconds, 3),
        )
        self.run.write_result(result.task, attrs.evolve(doc, meta=meta))

    def write_timing(self, state: str) -> ResultsDocument:
        """The run's campaign document (seed, command, time per phase), this execution added to
        the ones before; written into the run directory and returned.  Written as the run goes
        (``running``: at its start and after each task), so a run killed outright leaves its
        record too, read as ``died`` afterwards."""
        execution = self.clock.execution(self.argv, self.status.executor, state)
        doc = timing.document(self.run.id, self.campaign, execution, self.before, self.skipped)
        self.run.write_document(timing.FILE, doc)
        return doc

    def emit(self, event: Event) -> None:
        self.clock.see(event)
        if isinstance(event, Finished):
            self.persist(event.result)  # before anything says it is done
            self.status = attrs.evolve(self.status, done=(*self.status.done, event.result.task))
            self.run.write_status(self.status)
            self.write_timing("running")
        elif isinstance(event, Failed):
            self.status = attrs.evolve(self.status, failed={**self.status.failed, event.task: event.error})
            self.run.write_status(self.status)
        assert self.board is not None and self.display is not None
        self.board.apply(event)
        self.display.update(event)


def _start(request: Request, workers: int) -> tuple[RunDir, Campaign, dict[str, ResultsDocument]]:
    if request.resume is not None:
        run = RunDir.resume(request.out, request.resume)
        campaign = run.read_campaign()
        timing.read_before(run.path)  # a damaged run record is refused before anything runs
        return run, campaign, run.finished(campaign)
    assert request.options is not None
    campaign = plan(attrs.evolve(request.options, workers=workers), request.scenarios, request.mutant_corpus)
    run = RunDir.create(request.out)
    run.write_campaign(campaign)
    return run, campaign, {}


def run(request: Request) -> Outcome:
    """Run (or resume) the campaign; an :class:`~dsh_sim.errors.InputError` is a refusal."""
    with stop.handling():
        executor = _executor(request)  # a cluster that cannot start refuses before a run exists
        try:
            run_dir, campaign, done = _start(request, executor.workers)
        except BaseException:
            executor.close()
            raise
        try:
            return _execute(request, run_dir, campaign, done, executor)
        finally:
            executor.close()
            run_dir.release()


def _execute(request: Request, run: RunDir, campaign: Campaign, done: dict[str, ResultsDocument], executor: Any) -> Outcome:
    todo = [task for task in campaign.tasks if task.id not in done]
    executor.bind(run.id)
    session = _Session(
        run, campaign, new_status(run, executor.description, len(campaign.tasks), request.argv, done), request.found_dir, request.argv
    )
    run.write_status(session.status)
    session.write_timing("running")  # a run killed before its first task still leaves its record
    run.start_heartbeat()
    violations_before = sum(len(doc.violations or ()) for doc in done.values())
    session.board = Board(todo, executor.workers, len(done), violations_before)
    try:
        with display.make(session.board, request.json_mode) as shown:
            session.display = shown
            for line in _header(request, run, campaign, executor.description, len(done)):
                shown.print(line)
            executor.run(todo, campaign.corpus, session.emit)
    except stop.Stopped as stopped:
        executor.close()  # workers and children end before the line that says so
        return _stopped(run, session, str(stopped), stopped.exit_code)
    except ClusterLost as lost:
        executor.close()
        return _stopped(run, session, str(lost), EXIT_FAILED, "the cluster failed it:")
    except BaseException:
        run.write_status(ended(session.status, "failed"))
        with contextlib.suppress(OSError):
            session.write_timing("failed")
        raise
    executor.close()
    try:
        return _finish(request, run, campaign, session)
    except stop.Stopped as stopped:  # in the DSH phase: a resume runs it again
        return _stopped(run, session, str(stopped), stopped.exit_code)


def _stopped(run: RunDir, session: _Session, why: str, code: int, how: str = "stopped by") -> Outcome:
    """The run ends incomplete, in one line saying why and how to finish it."""
    status = ended(session.status, "incomplete", stopped_by=why)
    with contextlib.suppress(OSError):  # (what ran so far: a resume adds its own execution to it)
        session.write_timing("incomplete")
    run.write_status(status)
    line = (
        f"dsh-sim: {how} {why}: run {run.id} is incomplete ({len(status.done)}/{status.total} tasks done, "
        f"results in {run.results}); resume with: dsh-sim run --resume {run.id}"
    )
    print(line, file=sys.stderr, flush=True)
    return Outcome(run.id, run.path, "incomplete", code)


def _header(request: Request, run: RunDir, campaign: Campaign, executor: str, done: int) -> list[str]:
    o = campaign.options
    fuzz = f"{o.examples} examples per shard" if o.examples else f"{o.budget:g}s per worker"  # (--examples: whatever the time)
    head = "resuming" if request.resume else "dsh-sim run"
    lines = [
        f"{head} {run.id}: seed {o.seed}, fuzz {fuzz} over {o.fuzz_shards} shard(s), "
        f"{len(campaign.tasks)} task(s){f' ({done} already done)' if done else ''}, {executor}"
    ]
    skipped = skipped_self_tests(campaign) if any(t.id.startswith("explore-") for t in campaign.tasks) else []
    if skipped:
        names = ", ".join(os.path.basename(p) for p in skipped)
        lines.append(f"not explored: {len(skipped)} self-test scenario(s) that expect a violation ({names})")
    return lines


def _finish(request: Request, run: RunDir, campaign: Campaign, session: _Session) -> Outcome:
    from dsh_sim.evidence.results import unique
    from dsh_sim.operations.results import read_results
    from dsh_sim.operations.results import report as merge_report

    docs = list(run.finished(campaign).values())
    complete = len(docs) == len(campaign.tasks)
    extra = read_results(resolve_inputs(request.inputs, request.out)) if request.inputs else []
    if complete and "dsh" not in campaign.options.skip:
        with session.clock.phase("dsh"):
            dsh_docs = _dsh_phase(campaign, run, request.json_mode, session.board)
        extra += dsh_docs
        skipped = [d for d in dsh_docs if d.kind == "dsh-skipped"]
        if skipped:
            session.skipped["dsh"] = str(skipped[0].dsh_skipped or "skipped")
    elif not complete:
        session.skipped["dsh"] = "not run: the run's tasks did not all finish"
    state = "complete" if complete else "failed"
    record = session.write_timing(state)
    report = merge_report(unique([record, *docs, *extra]), run.path)
    # only a complete run becomes the latest report: a failed one's report is its own (a run that
    # lost tasks once replaced the latest with a report of the few it kept)
    latest = publish_latest(run, request.out) if complete else None
    run.write_status(ended(session.status, state))
    lines = [
        *totals(docs, campaign),
        f"run {run.id} {state} in {_took(unstructure(record.campaign) if record.campaign is not None else {})}: {run.path}",
    ]
    if not complete:
        lines += [f"  TASK FAILED {task}: {error}" for task, error in session.status.failed.items()]
    lines += list(report.lines)
    if latest is not None:
        lines.append(f"  latest report also at {os.path.join(latest, os.path.basename(report.paths.get('html', 'coverage.html')))}")
    else:
        lines.append(f"  latest report left as it was: this run is {state}")
    code = EXIT_FAILED if report.failed or not complete else EXIT_OK
    if request.json_mode:
        print(json.dumps({"run": run.id, "dir": run.path, "state": state, "exit": code, "report": report.paths, "lines": lines}, indent=2))
    else:
        assert session.display is not None
        for line in lines:
            print(line, flush=True)
    return Outcome(run.id, run.path, state, code, tuple(lines), dict(report.paths))


def _took(record: dict[str, Any]) -> str:
    """The run's wall time as its report says it (and this execution's, when it was resumed)."""
    executions = record["executions"]
    if len(executions) == 1:
        return fmt_seconds(record["wall_seconds"])
    return f"{fmt_seconds(executions[-1]['wall_seconds'])} ({fmt_seconds(record['wall_seconds'])} over its {len(executions)} executions)"


def _dsh_phase(campaign: Campaign, run: RunDir, json_mode: bool, board: Board | None) -> list[ResultsDocument]:
    """The published DSH (its writer explored, a sample of our recoveries read by it), when it
    is installed: on the submitting machine, after the campaign's tasks — it needs Node and the
    installed packages there.  Its documents go to the run directory and join the report."""
    from dsh_sim.campaign.dsh_phase import run_dsh_phase
    from dsh_sim.operations.results import read_results
    from dsh_sim.operations.scenarios import load

    files = [label for label in campaign.corpus if os.path.isfile(label)]
    out = os.path.join(run.path, DSH_RESULTS)
    os.makedirs(out, exist_ok=True)
    shown = display.PhaseLines(board, "dsh")

    def between(part: str, done: int, total: int) -> None:
        stop.checkpoint()  # (between crash points: a stop answers within a point's time)
        shown(part, done, total)

    with contextlib.redirect_stdout(sys.stderr) if json_mode else contextlib.nullcontext():  # --json: stdout is the result
        written = run_dsh_phase(files, [load(path) for path in files], out, "", between)
    return read_results(written) if written else []


def read_texts(paths: Sequence[str]) -> dict[str, str]:
    from dsh_sim.inputs import read_regular
    from dsh_sim.scenario.files import MAX_SCENARIO_BYTES

    return {path: read_regular(path, MAX_SCENARIO_BYTES, "scenario file").decode("utf-8") for path in paths}
