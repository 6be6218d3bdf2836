"""``dsh-sim run`` as a campaign in one process: run directories, resume, concurrent runs, progress."""

from __future__ import annotations

import contextlib
import io
import json
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dsh_sim.campaign import inprocess, stop
from dsh_sim.campaign.board import Board
from dsh_sim.campaign.display import PlainDisplay, RichDisplay, status_line
from dsh_sim.campaign.events import Finished, Progress, Started
from dsh_sim.campaign.tasks import ExploreShard, FuzzShard
from dsh_sim.campaign.work import TaskResult
from dsh_sim.cli.main import main
from dsh_sim.evidence.document import ResultsDocument, Violation
from dsh_sim.evidence.results import read
from tests.support.campaign import SMALL_READERS_CLI, TINY, comparable, runs, small_corpus, small_readers, status


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def corpus_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The small corpus in a fresh working directory; campaigns run here run the reader
    differential on a small plan (tests/support/small_readers_cli.py): these tests compare runs
    with runs of the same plan, and the reader differential is not their subject."""
    monkeypatch.chdir(tmp_path)
    small_readers(monkeypatch)
    return small_corpus(tmp_path)


@pytest.mark.slow
def test_a_run_writes_only_its_own_directory_and_runs_merge_by_id(corpus_dir: Path) -> None:
    code, out, err = run_cli("run", "--scenarios", "scen", *TINY, "--skip", "explore")
    assert code in (0, 1), err  # 1: three scenarios leave coverage requirements unmet
    (first,) = runs(Path("reports"))
    assert status(first)["state"] == "complete"
    assert {p.stem for p in (first / "results").iterdir()} == {t["id"] for t in json.loads((first / "campaign.json").read_text())["tasks"]}
    assert (first / "coverage.html").is_file() and Path("reports/latest/coverage.json").is_file()
    assert Path("reports/latest").resolve() == first.resolve()  # the latest report is the run's own, by one link
    assert "total over 5/5 task(s)" in out and re.search(r"fuzzed \d+ examples \(durability \d+, storage \d+\) in 4 shard", out), out
    # the run's own record: the command typed (every task document says it too), and the wall time the terminal says
    record = json.loads((first / "run.json").read_text())["campaign"]
    assert record["argv"] == ["run", "--scenarios", "scen", *TINY, "--skip", "explore"] and record["run"] == first.name
    assert all(json.loads(p.read_text())["meta"]["argv"] == record["argv"] for p in (first / "results").iterdir())
    took = re.search(rf"run {first.name} complete in (\d+)s", out)
    assert took is not None and int(took.group(1)) == round(record["wall_seconds"]), out
    md = (first / "coverage.md").read_text()
    assert record["command"] in md and f"dsh-sim run --resume {first.name}" in md and "of 1 campaign run(s)" in md
    code, _, err = run_cli("run", "--scenarios", "scen", *TINY, "--skip", "explore")
    second = next(r for r in runs(Path("reports")) if r != first)
    one = comparable(first / "coverage.json")
    # a run named twice counts once; two runs add up
    code, _, err = run_cli("report", "--from", first.name, first.name, "--out", "merged-once")
    assert comparable(Path("merged-once/coverage.json")) == one, err
    code, _, err = run_cli("report", "--from", first.name, second.name, "--out", "merged-two")
    assert comparable(Path("merged-two/coverage.json"))["cases"] == 2 * one["cases"]
    code, _, err = run_cli("report", "--from", "no-such-run")
    assert code == 2 and err.count("\n") == 1 and "no-such-run" in err


@pytest.mark.slow
def test_an_interrupted_run_resumes_with_only_its_unfinished_tasks(corpus_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stop comes after two tasks: their documents stay, valid; --resume runs the rest,
    and the finished run counts exactly what an uninterrupted run of the same seed counts."""
    ran: list[str] = []
    real = inprocess.run_task
    interrupt = [True]

    def counting(task: Any, *args: Any) -> TaskResult:
        ran.append(task.id)
        result = real(task, *args)
        if len(ran) == 2 and interrupt and interrupt.pop():
            stop.request(signal.SIGTERM)  # what the SIGTERM handler does
        return result

    monkeypatch.setattr(inprocess, "run_task", counting)
    code, _, err = run_cli("run", "--scenarios", "scen", *TINY)
    assert code == 143
    assert err.count("\n") == 1 and err.startswith("dsh-sim: stopped by SIGTERM") and "--resume" in err
    (run,) = runs(Path("reports"))
    state = status(run)
    assert state["state"] == "incomplete" and state["stopped_by"] == "SIGTERM" and len(state["done"]) == 2
    assert len(read([str(run / "results")])) == 2  # a partial but valid result set
    total = state["total"]

    ran.clear()
    code, out, err = run_cli("run", "--resume", run.name)
    assert code in (0, 1), err
    assert len(ran) == total - 2 and not set(ran) & set(state["done"])
    assert status(run)["state"] == "complete"
    resumed = comparable(run / "coverage.json")

    monkeypatch.setattr(inprocess, "run_task", real)
    run_cli("run", "--scenarios", "scen", *TINY)
    fresh = next(r for r in runs(Path("reports")) if r != run)
    assert resumed == comparable(fresh / "coverage.json")


def test_resume_refuses_plan_flags_in_one_line(corpus_dir: Path) -> None:
    code, _, err = run_cli("run", "--resume", "latest", "--seed", "3")
    assert code == 2 and err.count("\n") == 1 and "--seed" in err
    code, _, err = run_cli("run", "--resume", "latest", "--steps", "5")  # the plan fixed its fuzz shards' step count
    assert code == 2 and err.count("\n") == 1 and "--steps" in err
    code, _, err = run_cli("run", "--workers", "2", "--scheduler", "tcp://127.0.0.1:1")
    assert code == 2 and err.count("\n") == 1


@pytest.mark.slow
def test_two_concurrent_runs_in_one_directory_both_end_with_valid_reports(corpus_dir: Path) -> None:
    """Before run directories both exited 2 ("not a readable results document: Extra data"):
    each deleted and rewrote the other's results under the same names."""
    argv = [*SMALL_READERS_CLI, "run", "--scenarios", "scen", *TINY]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [p.communicate(timeout=300) for p in procs]
    for proc, (_out, err) in zip(procs, results):
        assert proc.returncode in (0, 1), err
        assert "Traceback" not in err
    both = runs(Path("reports"))
    assert len(both) == 2
    first, second = (comparable(run / "coverage.json") for run in both)
    assert first == second  # same seed, same counts: neither disturbed the other
    assert all(status(run)["state"] == "complete" for run in both)
    json.loads(Path("reports/latest/coverage.json").read_text())  # the latest report is whole
    assert Path("reports/latest").resolve() in {run.resolve() for run in both}


def test_progress_lines_show_phase_counts_violations_and_eta() -> None:
    tasks = [FuzzShard("fuzz-durability-0", "durability", 1, 30.0), ExploreShard("explore-0", ("a.json", "b.json"))]
    board = Board(tasks, workers=2)
    stream = io.StringIO()
    shown = PlainDisplay(board, stream)
    for event in (
        Started("fuzz-durability-0", "w1"),
        Progress("fuzz-durability-0", "w1", 120, None, "120 examples, 12 recoveries"),
        Started("explore-0", "w2"),
        Progress("explore-0", "w2", 1, 2, "b.json: point 3/40"),
    ):
        board.apply(event)
        shown.update(event)
    line = status_line(board)
    assert "explore+fuzz" in line and "0/2 tasks" in line and "0 violation(s)" in line and "ETA ~" in line
    assert "w1: fuzz-durability-0 120 examples" in line and "w2: explore-0 1/2 b.json: point 3/40" in line
    result = TaskResult(
        "explore-0", "explore", ResultsDocument(violations=(Violation("x"),)), lines=("explored b.json: 40/40 states",), worker="w2"
    )
    board.apply(Finished(result))
    shown.update(Finished(result))
    assert "explored b.json: 40/40 states" in stream.getvalue()
    assert board.violations == 1 and board.done == 1

    rich = RichDisplay(board)
    from rich.console import Console

    console = Console(record=True, width=160)
    console.print(rich._render())
    text = console.export_text()
    assert "fuzz" in text and "1/2 tasks" in text and "1 violation(s)" in text and "ETA ~" in text and "w1" in text


@pytest.mark.slow
def test_a_plain_run_prints_progress_and_json_keeps_stdout_for_the_result(corpus_dir: Path) -> None:
    code, out, err = run_cli("run", "--scenarios", "scen", *TINY, "--skip", "explore", "--json")
    assert code in (0, 1)
    result = json.loads(out)
    assert result["state"] == "complete" and result["exit"] == code and Path(result["dir"]).is_dir()
    assert "tasks |" in err and "ETA ~" in err and "fuzzed durability" in err  # progress on stderr


@pytest.mark.slow
def test_a_failed_run_keeps_its_report_to_itself(corpus_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run whose task failed writes its own report but leaves the latest one as it was (issue
    33: a run that lost its tasks replaced the latest report with a report of the one it kept)."""
    code, _, err = run_cli("run", "--scenarios", "scen", *TINY, "--skip", "explore")
    assert code in (0, 1), err
    latest = {name: Path("reports", "latest", name).read_bytes() for name in ("coverage.json", "coverage.md", "coverage.html")}
    real = inprocess.run_task

    def failing(task: Any, *args: Any) -> TaskResult:
        if isinstance(task, FuzzShard):
            raise RuntimeError("a worker lost its input")
        return real(task, *args)

    monkeypatch.setattr(inprocess, "run_task", failing)
    code, out, err = run_cli("run", "--scenarios", "scen", *TINY, "--skip", "explore")
    assert code == 1
    failed = next(r for r in runs(Path("reports")) if status(r)["state"] == "failed")
    assert (failed / "coverage.json").is_file()  # its own report
    assert {name: Path("reports", "latest", name).read_bytes() for name in latest} == latest
    assert "latest report left as it was: this run is failed" in out and "TASK FAILED" in out
