"""A stop reaches ``dsh-sim run`` inside its long phases, not only between them (issue 33: the
reader differential, the failure-path sweep and the DSH phase checked for a stop only before
and after they ran, so SIGTERM took 3.7-9.5 s; the DSH phase showed no progress for minutes).

Each long phase calls back between its items (a case, a run of the sweep, a crash point): the
campaign reports progress there and stops there.  Here the callback's stop is raised after a
few items, and the phase must end at once — the rest of its items not run.  (How long a real
SIGTERM takes in each phase is measured by ``benchmarks/bench_stop.py``.)
"""

from __future__ import annotations

import contextlib
import io
import signal
from pathlib import Path
from typing import Any

import pytest

from dsh_sim.campaign import dsh_phase, runner, stop, work
from dsh_sim.campaign.display import PhaseLines
from dsh_sim.campaign.tasks import FuzzShard, MutantKill
from dsh_sim.cli.main import main
from dsh_sim.drivers import faultsweep, readers
from dsh_sim.operations.scenarios import load
from tests.support.campaign import TINY, runs, small_corpus, small_readers, status
from tests.support.paths import SCENARIOS, STARTER


class StopAfter:
    """A task's context that asks to stop once ``items`` progress reports were made."""

    worker = "local"

    def __init__(self, items: int) -> None:
        self.items, self.reports = items, []  # type: list[tuple[int, int | None, str]]

    def progress(self, done: int, total: int | None, note: str) -> None:
        self.reports.append((done, total, note))

    def checkpoint(self) -> None:
        if len(self.reports) >= self.items:
            raise stop.Stopped(signal.SIGTERM)


def _corpus(names: frozenset[str] | set[str] | tuple[str, ...]) -> list[Any]:
    found = [load(str(path)) for path in sorted(Path(SCENARIOS).rglob("*.json")) if path.stem in names]
    assert found, names
    return found


def test_the_reader_differential_stops_between_cases_and_reports_them() -> None:
    ctx = StopAfter(3)
    with pytest.raises(stop.Stopped):
        work._reader_differential(_corpus(readers.READER_SCENARIOS), [], ctx)
    assert [done for done, _, _ in ctx.reports] == [1, 2, 3]  # (it ran thousands of cases before it looked)
    assert all(note == f"reader differential: {done} cases" for done, _, note in ctx.reports)


def test_the_failure_path_sweep_stops_between_runs_and_reports_them() -> None:
    ctx = StopAfter(2)
    sink = work._Sink("found")
    with pytest.raises(stop.Stopped):
        work._failure_sweep(_corpus(faultsweep.SWEEP_SET), [], sink, ctx)
    assert [done for done, _, _ in ctx.reports] == [1, 2]
    (total,) = {total for _, total, _ in ctx.reports}
    assert total is not None and total > 2 and ctx.reports[0][2].startswith("failure-path sweep ")


class StopAtCheck(StopAfter):
    """A task's context that asks to stop at its ``n``-th look."""

    def __init__(self, n: int) -> None:
        super().__init__(0)
        self.n, self.looks = n, 0

    def checkpoint(self) -> None:
        self.looks += 1
        if self.looks >= self.n:
            raise stop.Stopped(signal.SIGTERM)


def test_a_fuzz_shard_stops_between_examples_not_only_between_batches() -> None:
    ctx = StopAtCheck(3)
    task = FuzzShard("fuzz-durability-0", "durability", 7, 3600.0, 25)
    with pytest.raises(stop.Stopped):
        work._fuzz(task, {}, ctx, work._Sink("found"))
    # three examples, then the stop (the batch of 25 did not finish); the shard's last progress says so
    assert [done for done, _, _ in ctx.reports] == [3]


def test_a_mutant_task_stops_between_scenarios() -> None:
    ctx = StopAtCheck(3)  # (the task's first look, then one before each scenario)
    corpus = {path: Path(path).read_text() for path in sorted(str(p) for p in Path(STARTER).glob("*.json"))[:5]}
    with pytest.raises(stop.Stopped):
        work._mutant(MutantKill("mutant-0", "write_behind.drop_failed_batch", tuple(corpus)), corpus, ctx, work._Sink("found"))
    assert ctx.looks == 3


def test_the_dsh_phase_stops_between_crash_points(tmp_path: Path) -> None:
    if dsh_phase.installed() is None:
        pytest.skip("DSH is not installed (dsh-sim dsh setup)")
    seen: list[tuple[str, int, int]] = []

    def between(part: str, done: int, total: int) -> None:
        seen.append((part, done, total))
        if done == 2:
            raise stop.Stopped(signal.SIGTERM)

    files = [str(p) for p in sorted(Path(STARTER).glob("*.json"))]
    with pytest.raises(stop.Stopped):
        dsh_phase.run_dsh_phase(files, [load(f) for f in files], str(tmp_path), "", between)
    assert [done for _, done, _ in seen] == [0, 1, 2] and seen[0][0].startswith("DSH writer, shape 1/")
    assert seen[-1][2] > 2  # the shape had more crash points: the stop did not wait for them
    assert not list(tmp_path.iterdir())  # nothing half-written


@pytest.mark.slow
def test_a_stop_in_the_dsh_phase_ends_the_run_incomplete_and_resume_runs_the_phase(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    small_corpus(tmp_path)
    small_readers(monkeypatch)  # the reader differential on a small plan: the DSH phase's stop is the subject
    phases: list[str] = []

    def stopped_phase(*args: Any) -> list[dict[str, Any]]:
        phases.append("dsh")
        if len(phases) == 1:
            raise stop.Stopped(signal.SIGTERM)  # (the callback's stop, between two crash points)
        return []

    monkeypatch.setattr(runner, "_dsh_phase", stopped_phase)
    with_dsh = [arg for i, arg in enumerate(TINY) if not (arg == "dsh" or TINY[i + 1 : i + 2] == ["dsh"])]
    args = ["run", "--scenarios", "scen", *with_dsh, "--skip", "explore"]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    assert code == 143 and err.getvalue().count("\n") == 1 and "is incomplete (5/5 tasks done" in err.getvalue(), err.getvalue()
    (run,) = runs(Path("reports"))
    assert status(run)["state"] == "incomplete" and status(run)["stopped_by"] == "SIGTERM"
    assert not Path("reports/latest").exists()  # an incomplete run is not the latest report
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["run", "--resume", run.name])
    assert code in (0, 1) and phases == ["dsh", "dsh"] and status(run)["state"] == "complete"


def test_phase_lines_say_each_new_kind_of_work_then_at_most_every_heartbeat(capsys: pytest.CaptureFixture[str]) -> None:
    lines = PhaseLines(None, "dsh")
    lines("DSH writer, shape 1/2 (a), crash point", 0, 0)
    lines("DSH writer, shape 1/2 (a), crash point", 1, 9)  # same kind, within the heartbeat: quiet
    lines("DSH route, scenario 1/3 (b), crash point", 0, 0)
    assert capsys.readouterr().out.splitlines() == ["dsh | DSH writer, shape 1/2 (a)", "dsh | DSH route, scenario 1/3 (b)"]


@pytest.mark.parametrize("value", ["0", "-1", "4000", "abc", "nan", "inf"])
def test_a_bad_cluster_patience_is_refused_in_one_line_and_writes_nothing(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as raised:
        code = main(["run", "--cluster-patience", value])
        raise SystemExit(code)
    err = capsys.readouterr().err
    assert raised.value.code == 2 and err.count("\n") == 1 and "--cluster-patience" in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())  # no run directory, no report
