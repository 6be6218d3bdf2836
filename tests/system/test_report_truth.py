"""The report tells the truth about the run (issue 33, item 5).

Its time is the run's wall and CPU per phase (not the task documents' seconds added up); it
names the run id, the campaign seed and the submitting command; it has a section for every
phase (the reader differential, the failure-path sweep, DSH — or why DSH was skipped, with
``dsh_agrees`` "not run" rather than 0 checks); its subtitle counts result documents and
campaign runs, not tasks as runs; its determinism words are the terminal's; a task document's
``argv`` is the submitter's command, not a Dask worker's; and the page reads at 1,400 px, the
long tables folded under <details>.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from dsh_sim.campaign import timing
from dsh_sim.campaign.events import Finished, Started
from dsh_sim.campaign.rundir import RUN_DOCUMENT, RunDir, new_status, resolve_inputs
from dsh_sim.campaign.runner import _Session
from dsh_sim.campaign.summary import totals
from dsh_sim.campaign.tasks import Campaign, ExploreShard, FuzzShard, Options, ReplayShard
from dsh_sim.campaign.work import TaskResult
from dsh_sim.evidence import results
from dsh_sim.evidence.coverage import aggregate
from dsh_sim.evidence.document import structure, unstructure
from dsh_sim.report import write_report
from dsh_sim.report.sample import sample_view
from tests.system.test_report import Elements, chromium, headline_value

RUN = "20261207-120000-abcd"
ARGV = ["run", "--seed", "7", "--examples", "5", "--skip", "mutants"]
CAMPAIGN = Campaign(
    Options(seed=7, budget=60.0, examples=5, workers=1, fuzz_shards=1, bound=None, skip=("mutants",), rechecks=1),
    (ReplayShard("replay-0", ("a.json",), ("a.json",), readers=True), ExploreShard("explore-0", ("a.json",)), FuzzShard("fuzz-0", "durability", 5, 60.0, 5)),
    {},
)  # fmt: skip


def meta(kind: str, **extra: Any) -> dict[str, Any]:
    """A new document's meta, as JSON (the documents here are written as a worker returns them)."""
    return dict(unstructure(results.meta(kind, **extra)))


class FakeClock(timing.Clock):
    """A clock whose time the test sets."""

    at = 0.0

    def now(self) -> float:
        return self.at


def result(task: str, kind: str, seconds: float, cpu: float, doc: dict[str, Any] | None = None) -> TaskResult:
    document = structure(doc or {"meta": meta(kind, task=task, seconds=seconds)})
    return TaskResult(task, kind, document, worker="w1", seconds=seconds, cpu_seconds=cpu)


def task_docs() -> list[dict[str, Any]]:
    """A replay shard (130 recorded digests and 1 fresh re-check, the reader differential and a
    sweep of two scenarios), an explore shard and a fuzz shard: 3 documents of one run whose
    own seconds add up to 15.9 s."""
    determinism = [
        {"scenario": f"s{i}.json", "digest_a": "d", "digest_b": "d", "same": True, "how": "recorded vs this process"} for i in range(130)
    ]
    determinism.append(
        {"scenario": "s0.json", "digest_a": "d", "digest_b": "d", "same": True, "how": "two fresh processes, PYTHONHASHSEED 1 and 2"}
    )
    replay = {
        "meta": {**meta("replay", scenarios=131, seconds=5.0, task="replay-0"), "run": RUN},
        "determinism": determinism,
        "readers": {"scenarios": ["reader-a"], "cases": 1234, "checks": 56789, "mismatches": 0, "seconds": 20.5},
        "sweep": [
            {"scenario": "sweep-a", "positions": 40, "runs": 80, "bridged": 3, "not_applicable": 1, "violations": 0, "seconds": 7.25},
            {"scenario": "sweep-b", "positions": 10, "runs": 20, "bridged": 0, "not_applicable": 0, "violations": 0, "seconds": 1.5},
        ],
    }
    explore = {"meta": {**meta("explore", scenarios=1, states=10, seconds=6.4, task="explore-0"), "run": RUN}}
    fuzz = {"meta": {**meta("fuzz", machine="durability", seed=5, examples=5, seconds=4.5, task="fuzz-0"), "run": RUN}}
    return [replay, explore, fuzz]  # fmt: skip


def campaign_doc(skipped: dict[str, str] | None = None) -> dict[str, Any]:
    clock = FakeClock({"replay-0": "replay", "explore-0": "explore", "fuzz-0": "fuzz"})
    for at, event in (
        (0.5, Started("replay-0", "w1")),
        (30.0, Finished(result("replay-0", "replay", 29.5, 31.0))),
        (30.1, Started("explore-0", "w1")),
        (40.0, Finished(result("explore-0", "explore", 9.9, 9.0))),
        (40.1, Started("fuzz-0", "w1")),
        (47.0, Finished(result("fuzz-0", "fuzz", 6.9, 6.5))),
    ):
        clock.at = at
        clock.see(event)
    clock.at = 48.0
    execution = clock.execution(ARGV, "in process (1 worker)", "complete")
    return timing.document(RUN, CAMPAIGN, execution, None, skipped if skipped is not None else timing.skipped_phases(CAMPAIGN)).to_json()


def dsh_skipped_doc() -> dict[str, Any]:
    return {"meta": {**meta("dsh-skipped"), "run": RUN}, "dsh_skipped": "not installed (run 'dsh-sim dsh setup')"}


def render(tmp_path: Path, docs: list[dict[str, Any]]) -> tuple[str, str, dict[str, Any]]:
    paths = write_report(aggregate(docs), str(tmp_path / "out"))
    return Path(paths["md"]).read_text(), Path(paths["html"]).read_text(), json.loads(Path(paths["json"]).read_text())


# -- the campaign's own document ----------------------------------------------------------------


def test_the_campaign_document_times_each_phase_from_first_start_to_last_finish() -> None:
    doc = campaign_doc()["campaign"]
    assert (doc["run"], doc["seed"], doc["argv"]) == (RUN, 7, ARGV)
    assert doc["command"] == "dsh-sim run --seed 7 --examples 5 --skip mutants" and doc["resume"] == f"dsh-sim run --resume {RUN}"
    assert doc["wall_seconds"] == 48.0 and doc["cpu_seconds"] == 46.5
    assert doc["phases"]["replay"] == {"wall_seconds": 29.5, "cpu_seconds": 31.0, "tasks": 1}
    assert doc["phases"]["explore"]["wall_seconds"] == pytest.approx(9.9) and doc["phases"]["fuzz"]["tasks"] == 1
    assert doc["skipped"] == {"mutants": "--skip mutants"}


def test_a_resumed_run_adds_its_execution_to_the_ones_before() -> None:
    first = campaign_doc()
    clock = FakeClock({"fuzz-0": "fuzz"})
    clock.at = 12.0
    clock.see(Finished(result("fuzz-0", "fuzz", 10.0, 9.5)))
    clock.at = 13.0
    again = timing.document(RUN, CAMPAIGN, clock.execution(["run", "--resume", RUN], "in process (1 worker)", "complete"), first, {})
    body = unstructure(again.campaign)
    assert [e["argv"] for e in body["executions"]] == [ARGV, ["run", "--resume", RUN]]
    assert body["argv"] == ARGV  # the command that planned the run; the resume is said apart
    assert body["wall_seconds"] == 61.0 and body["cpu_seconds"] == 56.0
    assert body["phases"]["fuzz"] == {"wall_seconds": 16.9, "cpu_seconds": 16.0, "tasks": 2}


def test_a_task_document_records_the_submitters_command_not_the_workers(tmp_path: Path) -> None:
    run = RunDir.create(str(tmp_path / "reports"))
    run.write_campaign(CAMPAIGN)
    try:
        session = _Session(run, CAMPAIGN, new_status(run, "dask", 3, ARGV), str(tmp_path / "found"), ARGV)
        worker_meta = {**meta("fuzz", task="fuzz-0"), "argv": ["/usr/bin/dask", "worker", "tcp://scheduler:8786"]}
        session.persist(result("fuzz-0", "fuzz", 1.0, 0.5, {"meta": worker_meta}))
        written = json.loads(Path(run.result_path("fuzz-0")).read_text())["meta"]
        assert written["argv"] == ARGV and written["worker"] == "w1" and written["cpu_seconds"] == 0.5
        assert written["worker_argv"] == ["/usr/bin/dask", "worker", "tcp://scheduler:8786"]
        session.write_timing("complete")
        assert json.loads((Path(run.path) / RUN_DOCUMENT).read_text())["meta"]["kind"] == "campaign"
        assert str(Path(run.path) / RUN_DOCUMENT) in resolve_inputs([run.path], str(tmp_path / "reports"))  # report --from reads it
    finally:
        run.release()


# -- the report ---------------------------------------------------------------------------------


def test_time_spent_is_the_runs_wall_and_cpu_not_the_documents_seconds(tmp_path: Path) -> None:
    md, html, doc = render(tmp_path, [campaign_doc(), *task_docs()])
    page = Elements(html)
    assert headline_value(page, "seconds") == "48.0 s"  # was 15.9 s: 5.0 + 6.4 + 4.5
    assert "CPU 46.5 s" in page.by_id("headline-seconds")["text"]
    assert doc["summary"]["seconds"] == 48.0 and doc["summary"]["cpu_seconds"] == 46.5
    phases = {e["attrs"]["data-phase"]: e["text"] for e in page.all if e["tag"] == "tr" and "data-phase" in e["attrs"]}
    assert phases["replay"].startswith("replay29.5 s31.0 s1") and "skipped: --skip mutants" in phases["mutants"]
    assert "**time spent**: 48.0 s" in md and "| replay | 29.5 s | 31.0 s | 1 |" in md


def test_without_a_campaign_record_the_time_says_what_it_is(tmp_path: Path) -> None:
    md, html, _ = render(tmp_path, task_docs())
    assert headline_value(Elements(html), "seconds") == "15.9 s"
    assert "not the wall time of a run" in md


def test_the_report_names_the_run_seed_and_commands(tmp_path: Path) -> None:
    md, html, _ = render(tmp_path, [campaign_doc(), *task_docs()])
    text = Elements(html).by_id("campaigns")["text"]
    for needed in (RUN, "7", "dsh-sim run --seed 7 --examples 5 --skip mutants", f"dsh-sim run --resume {RUN}", "in process (1 worker)"):
        assert needed in text and needed in md, needed


def test_the_subtitle_counts_documents_and_campaign_runs_not_tasks_as_runs(tmp_path: Path) -> None:
    md, html, doc = render(tmp_path, [campaign_doc(), *task_docs()])
    header = re.search(r'<header class="top">.*?<p>(.*?)</p>', html)
    assert header is not None and header.group(1).startswith("0 crash cases from 3 result document(s) of 1 campaign run(s)")
    assert "from 3 result document(s) of 1 campaign run(s)" in md
    assert doc["summary"]["result_documents"] == 3 and doc["summary"]["campaign_runs"] == 1


def test_the_reader_differential_and_the_sweep_have_their_sections(tmp_path: Path) -> None:
    md, html, _ = render(tmp_path, [campaign_doc(), *task_docs()])
    page = Elements(html)
    readers = page.by_id("readers")["text"]
    assert "1,234" in readers and "56,789" in readers
    assert page.by_id("sweep-summary")["text"].startswith("2 scenario(s) swept: 50 positions, 100 runs, 0 violation(s)")
    assert {e["attrs"].get("id") for e in page.all if e["tag"] == "details"} >= {"sweep-details", "determinism-details"}
    assert "## Reader differential" in md and "| 1234 | 56789 | 0 | 20.5 s |" in md and "2 scenario(s) swept: 100 runs" in md


def test_a_skipped_dsh_phase_is_said_and_its_invariants_are_not_run(tmp_path: Path) -> None:
    md, html, _ = render(tmp_path, [campaign_doc({"dsh": "not installed (run 'dsh-sim dsh setup')"}), *task_docs(), dsh_skipped_doc()])
    page = Elements(html)
    assert "Skipped: not installed" in page.by_id("sec-dsh")["text"]
    row = next(e for e in page.all if e["tag"] == "tr" and e["attrs"].get("data-invariant") == "dsh_agrees")
    assert "not run: DSH phase skipped" in row["text"] and "dsh_agrees00" not in row["text"].replace(" ", "")
    assert re.search(r"\| dsh_agrees \| not run: DSH phase skipped[^|]*\| — \|", md)
    # --skip dsh: no skipped document, the campaign's record says it
    md, html, _ = render(tmp_path / "b", [campaign_doc({"dsh": "--skip dsh"}), *task_docs()])
    assert "Skipped: --skip dsh" in Elements(html).by_id("sec-dsh")["text"] and "Skipped: --skip dsh" in md


def test_determinism_reads_as_the_terminal_says_it(tmp_path: Path) -> None:
    md, html, doc = render(tmp_path, [campaign_doc(), *task_docs()])
    (terminal,) = [line for line in totals([structure(d) for d in task_docs()], CAMPAIGN) if "determinism" in line]
    words = "130/130 recorded digest(s) reproduced, 1/1 re-checked in two fresh processes the same, 0 difference(s)"
    assert terminal.endswith(f"determinism: {words}")
    page = Elements(html)
    assert page.by_id("determinism-summary")["text"] == f"{words}." and words in page.by_id("headline-determinism")["text"]
    assert headline_value(page, "determinism") == "all same"
    assert words in md and doc["summary"]["determinism_recorded"] == 130 and doc["summary"]["determinism_rechecked"] == 1


def test_long_tables_are_folded_and_matrices_scroll_in_their_own_box(tmp_path: Path) -> None:
    _, html, _ = render(tmp_path, [campaign_doc(), *task_docs()])
    page = Elements(html)
    table = page.by_id("determinism")
    assert any(a["tag"] == "details" and not a["attrs"].get("open") for a in table["ancestors"]), "the digest table is folded"
    paths = write_report(sample_view(), str(tmp_path / "sample"))
    page = Elements(Path(paths["html"]).read_text())
    for id_ in ("coverage-matrix", "barrier-matrix"):
        assert "scroll" in page.by_id(id_)["ancestors"][-1]["classes"], id_
    css = (Path(__file__).parents[2] / "dsh_sim/report/style.css").read_text()
    assert re.search(r"\.scroll \{ overflow-x: auto;", css)


@pytest.mark.browser
def test_the_page_reads_at_1400_px_without_sideways_cut_off(tmp_path: Path) -> None:
    """Chromium at 1,400 px: the page never scrolls sideways, and both matrices and the kill
    matrix (three methods, long invariant names) fit their box."""
    binary = chromium()
    if binary is None:
        pytest.skip("no chromium binary")
    paths = write_report(sample_view(), str(tmp_path / "out"))
    probe = (
        "<script>addEventListener('load', () => { const out = [document.documentElement.scrollWidth];"
        "for (const id of ['coverage-matrix', 'barrier-matrix', 'kill-matrix']) { const t = document.getElementById(id);"
        "out.push(Math.ceil(t.getBoundingClientRect().width) - t.parentElement.clientWidth); }"
        "document.body.setAttribute('data-probe', out.join(',')); });</script>"
    )
    page = tmp_path / "probe.html"
    page.write_text(Path(paths["html"]).read_text().replace("</body>", probe + "</body>"))
    with tempfile.TemporaryDirectory() as profile:
        cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1",
               f"--user-data-dir={profile}", "--window-size=1400,900", "--virtual-time-budget=3000", "--dump-dom", page.as_uri()]  # fmt: skip
        dom = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False).stdout
    found = re.search(r'data-probe="(\d+),(-?\d+),(-?\d+),(-?\d+)"', dom)
    assert found is not None, dom[-2000:]
    width, coverage_over, barrier_over, kills_over = map(int, found.groups())
    assert width <= 1400, f"the page scrolls sideways: {width}px"
    assert coverage_over <= 0 and barrier_over <= 0, f"a matrix is cut off on the right: {coverage_over}px, {barrier_over}px"
    assert kills_over <= 0, f"the kill matrix scrolls in its box: {kills_over}px"


def test_the_dsh_phase_is_not_counted_as_tasks() -> None:
    """(Its row said "0 tasks": the submitter runs the DSH phase itself.)"""
    from dsh_sim.report.runs import PhaseRow, phase_tasks

    assert phase_tasks(PhaseRow(phase="dsh", wall_seconds=1.0, cpu_seconds=0.5, tasks=0)) == "— (the submitter)"
    assert phase_tasks(PhaseRow(phase="replay", wall_seconds=1.0, cpu_seconds=0.5, tasks=8)) == "8"


@pytest.mark.parametrize(
    ("text", "a_results_document"),
    [
        ('{"meta": {"format": "dsh-sim-results", "kind": "campaign"}, "campaign": {"executions": "x"}}', False),
        ('{"meta": {"format": "dsh-sim-results", "kind": "campaign"}}', True),  # (a document, but no run record)
        ("[1, 2", False),
    ],
)
def test_a_damaged_run_record_is_refused_in_one_line_naming_it(tmp_path: Path, text: str, a_results_document: bool) -> None:
    """(A resume once read ``executions: "x"`` and ended in a traceback; a report took it as a record.)"""
    from dsh_sim.errors import InputError
    from dsh_sim.operations.results import read_results

    (tmp_path / RUN_DOCUMENT).write_text(text)
    readers = [lambda: timing.read_before(str(tmp_path))]
    if not a_results_document:
        readers.append(lambda: read_results([str(tmp_path / RUN_DOCUMENT)]))
    for read in readers:
        with pytest.raises(InputError) as refused:
            read()
        assert str(tmp_path / RUN_DOCUMENT) in str(refused.value) and "\n" not in str(refused.value)
