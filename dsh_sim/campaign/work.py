"""Running one campaign task, wherever it runs: it returns values, it writes nothing.

A task on another machine cannot write into the submitter's ``scenarios/found``, and a task
killed halfway must not leave files anywhere.  So every task returns a :class:`TaskResult`:
its one results document, the scenarios it found as text (:class:`FoundFile`, named by
content exactly as :func:`~dsh_sim.scenario.files.save_found` would name them, and already
cited by that path in the document), and the lines the run prints about it.  The submitter
writes them (:mod:`dsh_sim.campaign.rundir`).

The task reports progress and asks whether to stop through a :class:`Context`; the executor
supplies one (a callback in this process, Dask events on a cluster).
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable
from typing import Any, Protocol

import attrs

from dsh_sim.campaign.plan import parsed
from dsh_sim.campaign.tasks import ExploreShard, FuzzShard, MutantKill, ReplayShard, Task, kind_of
from dsh_sim.drivers import faultsweep, readers, recheck, traces
from dsh_sim.drivers.explore import explore
from dsh_sim.drivers.fuzz import fuzz
from dsh_sim.drivers.replay import judge, run_scenario
from dsh_sim.drivers.selftest import KillResult, by_corpus, summary
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.evidence.document import Determinism, PointCounts, ReaderCounts, ResultsDocument, SweepRow, Violation
from dsh_sim.evidence.results import explore_document, merge_documents, meta
from dsh_sim.evidence.tally import CaseTally
from dsh_sim.mutants.catalogue import CATALOGUE
from dsh_sim.scenario.codec import to_json
from dsh_sim.scenario.files import dumps, found_name
from dsh_sim.scenario.model import Scenario


class Context(Protocol):
    worker: str

    def checkpoint(self) -> None:
        """Raise if the campaign is stopping (called only where stopping is clean)."""

    def progress(self, done: int, total: int | None, note: str) -> None:
        """How far the task is (``total`` None: open-ended, e.g. examples under a time budget)."""


@attrs.frozen
class FoundFile:
    name: str  # file name under the submitter's found directory
    text: str


@attrs.frozen
class TaskResult:
    task: str
    kind: str
    document: ResultsDocument
    found: tuple[FoundFile, ...] = ()
    lines: tuple[str, ...] = ()
    worker: str = "local"
    seconds: float = 0.0  # wall, where it ran
    cpu_seconds: float = 0.0  # CPU of the process that ran it (user + system), and of the children it waited for

    @property
    def violations(self) -> int:
        return len(self.document.violations or ())


class _Sink:
    """Collects found scenarios as text and answers the path the submitter will save them at."""

    def __init__(self, found_dir: str) -> None:
        self.found_dir = found_dir
        self.files: dict[str, FoundFile] = {}

    def __call__(self, scenario: Scenario) -> str:
        name = found_name(scenario)
        self.files.setdefault(name, FoundFile(name, dumps(scenario)))
        return os.path.join(self.found_dir, name)


def replay_document(rows: list[dict[str, Any]], seconds: float, task: str) -> ResultsDocument:
    tally = CaseTally()
    for row in rows:
        # scenarios that expect a violation or switch on a mutant are self-tests of the harness,
        # not coverage of the runtime: their crashes stay out of the matrices
        if row["expected"] == {"outcome": "pass"} and not row["mutants"]:
            tally.add_all(row["cases"])
    checked: dict[str, int] = {}
    points: dict[str, int] = {}
    for row in rows:
        for name, n in row["checked"].items():
            checked[name] = checked.get(name, 0) + n
        for name, n in row["points"].items():
            points[name] = points.get(name, 0) + n
    return ResultsDocument(
        meta=meta("replay", scenarios=len(rows), seconds=round(seconds, 3), task=task),
        case_tally=tally,
        checked=checked,
        points={name: PointCounts(hits=n) for name, n in points.items()},
        violations=tuple(
            Violation(r["invariant"] or "expectation", "; ".join(r["problems"]), r["scenario"], "replay") for r in rows if not r["ok"]
        ),
        # traces that moved while every oracle held: a change no model judged (a gap, not a pass)
        moved_unjudged=tuple(r["scenario"] for r in rows if r.get("moved_unjudged")),
        determinism=tuple(
            Determinism(r["scenario"], r["recorded_digest"] == r["digest"], r["recorded_digest"], r["digest"], "recorded vs this process")
            for r in rows
            if r["recorded_digest"]
        ),
    )


def recorded_move(label: str, scenario: Any, digest: str) -> Any:
    """Where the trace parted from the one recorded beside the scenario, when its digest moved
    and the recorded trace is on this machine (a worker without the corpus's files says less)."""
    if scenario.trace_digest in (None, digest):
        return None
    recorded = traces.load(label, scenario.trace_digest)
    if recorded is None:
        return None
    _, sim = run_scenario(scenario, keep_trace=True)
    return traces.first_move(recorded, sim.trace.records)


def _replay(task: ReplayShard, corpus: dict[str, str], ctx: Context, sink: _Sink) -> tuple[ResultsDocument, list[str]]:
    from dsh_sim.operations.replay import ReplayResult

    scenarios = parsed({label: corpus[label] for label in task.scenarios})
    started = time.perf_counter()
    rows, lines = [], []
    for index, (label, scenario) in enumerate(scenarios.items()):
        ctx.checkpoint()
        run, sim = run_scenario(scenario)
        problems = judge(scenario, run)
        moved = recorded_move(label, scenario, run.digest)
        if moved is not None:
            problems.append(moved.describe())
        result = ReplayResult(label, scenario, run, tuple(problems), point_hits=dict(sim.point_hits), moved=moved)
        rows.append({**result.row(), "moved_unjudged": result.moved_unjudged})
        if not result.ok:
            lines.append(f"  FAIL {label}: {'; '.join(result.problems)}")
        ctx.progress(index + 1, len(scenarios) + len(task.recheck), label)
    doc = replay_document(rows, time.perf_counter() - started, task.id)
    lines.insert(0, f"replayed {len(rows)} scenario(s): {sum(r['ok'] for r in rows)} hold")
    violations, determinism = list(doc.violations or ()), list(doc.determinism or ())
    if task.readers:
        ctx.checkpoint()
        whole = list(parsed(corpus).values())  # the reader and sweep scenarios may sit in other shards
        reader_counts, found = _reader_differential(whole, lines, ctx)
        violations += found
        ctx.checkpoint()
        sweep_rows, found = _failure_sweep(whole, lines, sink, ctx)
        violations += found
        doc = attrs.evolve(doc, readers=reader_counts, sweep=tuple(sweep_rows))
    for index, label in enumerate(task.recheck):
        ctx.checkpoint()
        check = recheck.check(label, corpus[label])
        determinism.append(check.entry())
        lines.append(f"determinism: {label} {'same' if check.same else 'DIFFERENT'} in two fresh processes")
        ctx.progress(len(rows) + index + 1, len(rows) + len(task.recheck), f"re-check {label}")
    return attrs.evolve(doc, violations=tuple(violations), determinism=tuple(determinism)), lines


def _reader_differential(corpus: list[Scenario], lines: list[str], ctx: Context) -> tuple[ReaderCounts, list[Violation]]:
    """Every runtime read entry point against the spec's reader, over the logs of the corpus's
    reader scenarios (those present) cut at every byte, damaged and bloated; a mismatch is a
    ``reader_differential`` violation of the replay shard.  Returns its counts (the shard
    document's ``readers``, the report's section) and its violations."""
    scenarios = [s for s in corpus if s.name in readers.READER_SCENARIOS]
    started = time.perf_counter()
    plan = readers.FULL_PLAN

    def between(cases: int) -> None:
        ctx.checkpoint()
        ctx.progress(cases, None, f"reader differential: {cases} cases")

    run = readers.differential(readers.default_sources(plan.seed), readers.corpus_originals(scenarios), plan, between=between)
    seconds = time.perf_counter() - started
    lines.append(f"reader differential: {run.cases} cases, {run.checks} checks, {len(run.mismatches)} mismatch(es), {seconds:.1f}s")
    lines.extend(f"  FAIL readers: {m}" for m in run.mismatches[:20])
    counts = ReaderCounts(
        scenarios=tuple(sorted(s.name for s in scenarios)),
        cases=run.cases,
        checks=run.checks,
        mismatches=len(run.mismatches),
        seconds=round(seconds, 3),
    )
    return counts, [Violation("reader_differential", m, "readers", "readers") for m in run.mismatches]


def _failure_sweep(corpus: list[Scenario], lines: list[str], sink: _Sink, ctx: Context) -> tuple[list[SweepRow], list[Violation]]:
    """An I/O error and a cancellation at every position of every durability sequence the
    corpus's sweep scenarios (those present) run; each violation is saved as a scenario.
    Returns one row of counts per scenario swept (the shard document's ``sweep``) and the
    violations."""
    out: list[Violation] = []
    rows: list[SweepRow] = []
    for scenario in (s for s in corpus if s.name in faultsweep.SWEEP_SET):

        def between(runs: int, total: int, name: str = scenario.name) -> None:
            ctx.checkpoint()
            ctx.progress(runs, total, f"failure-path sweep {name}")

        result = faultsweep.sweep(scenario, on_violation=sink, between=between)
        lines.append(
            f"failure-path sweep {scenario.name}: {result.runs_text()}, {len(result.violations)} violation(s), {result.seconds:.1f}s"
        )
        rows.append(
            SweepRow(
                scenario=scenario.name,
                positions=len(result.positions),
                runs=result.runs,
                bridged=result.bridged,
                not_applicable=result.not_applicable,
                violations=len(result.violations),
                seconds=round(result.seconds, 3),
            )
        )
        for found in result.violations:
            message = f"{found.action} at {found.position.describe()}: {found.violation.describe()}"
            lines.append(f"  FAIL sweep {scenario.name}: {message}")
            out.append(Violation(found.violation.invariant, message, scenario.name, "sweep"))
    return rows, out


def _explore(task: ExploreShard, corpus: dict[str, str], ctx: Context, sink: _Sink) -> tuple[ResultsDocument, list[str]]:
    scenarios = parsed({label: corpus[label] for label in task.scenarios})
    cache: dict[str, Any] = {}  # shared by the shard's scenarios only: the result never depends on placement
    docs, lines = [], []
    started = time.perf_counter()
    states = points = 0
    for index, (label, scenario) in enumerate(scenarios.items()):
        ctx.checkpoint()

        def on_point(done: int, total: int, index: int = index, label: str = label) -> None:
            ctx.checkpoint()
            ctx.progress(index, len(scenarios), f"{label}: point {done}/{total}")

        result = explore(scenario, bound=task.bound, on_violation=sink, cache=cache, on_point=on_point)
        docs.append(explore_document(result, label, result.seconds))
        states += len(result.states)
        points += len(result.points)
        stopped = f"; NOT EXPLORED past {result.not_applicable}" if result.not_applicable else ""
        lines.append(
            f"explored {label}: {sum(result.explored.values())}/{sum(result.possible.values())} states, "
            f"{len(result.violations)} violation(s), {result.seconds:.1f}s{stopped}"
        )
        ctx.progress(index + 1, len(scenarios), label)
    shard_meta = meta(
        "explore",
        scenarios=len(docs),
        states=states,
        crash_points=points,
        seconds=round(time.perf_counter() - started, 3),
        task=task.id,
        bound=task.bound,
    )
    return merge_documents(docs, shard_meta), lines


def _fuzz(task: FuzzShard, corpus: dict[str, str], ctx: Context, sink: _Sink) -> tuple[ResultsDocument, list[str]]:
    def progress(run: Any) -> None:
        limit = f"{run.seconds:.0f}s" if task.examples is not None else f"{run.seconds:.0f}/{task.budget:.0f}s"
        ctx.progress(
            run.examples,
            None,
            f"{run.examples}{'' if task.examples is None else f'/{task.examples}'} examples, {run.recoveries} recoveries, {limit}",
        )
        ctx.checkpoint()

    run = fuzz(
        task.machine,
        budget=task.budget,
        examples=task.examples,
        seed=task.seed,
        progress=progress,
        between_examples=ctx.checkpoint,  # (a batch takes seconds: a stop answers within an example)
        on_found=sink,
        steps=task.steps,
    )
    found = f"; VIOLATION {run.found.invariant} saved to {run.found.path}" if run.found else ""
    line = f"fuzzed {task.machine} [{task.id}]: seed {task.seed}, {run.examples} examples, {run.steps} steps in {run.seconds:.1f}s{found}"
    return run.document(meta("fuzz", task=task.id, budget=task.budget, examples_limit=task.examples)), [line]


def _mutant(task: MutantKill, corpus: dict[str, str], ctx: Context, sink: _Sink) -> tuple[ResultsDocument, list[str]]:
    ctx.checkpoint()
    scenarios = parsed({label: corpus[label] for label in task.corpus})
    started = time.perf_counter()
    kill = KillResult(
        task.mutant,
        CATALOGUE[task.mutant],
        {
            "corpus": by_corpus(
                task.mutant, [attrs.evolve(s, origin={**s.origin, "path": label}) for label, s in scenarios.items()], ctx.checkpoint
            )
        },
    )
    stats = summary([kill])
    doc = ResultsDocument(
        meta=meta("mutants", methods=["corpus"], seconds=round(time.perf_counter() - started, 3), task=task.id, **stats),
        kill_matrix=(kill.kill_row(),),
    )
    ctx.progress(1, 1, task.mutant)
    return doc, ([] if kill.killed else [f"  MUTANT SURVIVED {task.mutant}"])


RUNNERS: dict[type, Callable[[Any, dict[str, str], Context, _Sink], tuple[ResultsDocument, list[str]]]] = {
    ReplayShard: _replay,
    ExploreShard: _explore,
    FuzzShard: _fuzz,
    MutantKill: _mutant,
}


def run_task(task: Task, corpus: dict[str, str], ctx: Context, found_dir: str) -> TaskResult:
    """Run ``task`` here; found scenarios are cited under ``found_dir`` (the submitter's)."""
    started, cpu = time.perf_counter(), cpu_now()
    sink = _Sink(found_dir)
    with capture_runtime_logs():
        document, lines = RUNNERS[type(task)](task, corpus, ctx, sink)
    return TaskResult(
        task.id,
        kind_of(task),
        document,
        tuple(sink.files.values()),
        tuple(lines),
        ctx.worker,
        time.perf_counter() - started,
        cpu_now() - cpu,
    )


def cpu_now() -> float:
    """CPU seconds so far of this process and of the children it waited for (the determinism
    re-check's interpreters, DSH's Node processes): a task's CPU is the difference."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


__all__ = ["Context", "FoundFile", "TaskResult", "replay_document", "run_task", "to_json"]
