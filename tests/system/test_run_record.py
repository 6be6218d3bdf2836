"""A run's own record (``run.json``) is written as the run goes, so a run killed outright (SIGKILL,
power loss) leaves one too: ``running`` while nothing knows better, ``died`` once a later run or
a resume finds its process gone, and a resume adds its own execution after it."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import attrs
import pytest

from dsh_sim.campaign.rundir import as_died, mark_dead_runs
from dsh_sim.evidence.document import ResultsDocument
from dsh_sim.evidence.records import CampaignRecord, Execution
from tests.support.campaign import status
from tests.support.chaos import command, latest, start, with_corpus
from tests.support.cluster import wait_until


def _execution(state: str) -> Execution:
    return Execution(argv=("run",), command="dsh-sim run", executor="in process", state=state, wall_seconds=1.0, cpu_seconds=1.0, phases={})


def _record(*states: str) -> ResultsDocument:
    executions = tuple(_execution(s) for s in states)
    campaign = CampaignRecord(
        run="r", seed=1, argv=("run",), command="dsh-sim run", resume="dsh-sim run --resume r", executor="in process",
        state=states[-1], tasks=2, wall_seconds=2.0, cpu_seconds=2.0, phases={}, skipped={}, executions=executions,
    )  # fmt: skip
    return ResultsDocument(campaign=campaign)


def test_a_record_still_running_after_its_process_died_says_died() -> None:
    died = as_died(_record("incomplete", "running"))
    assert died.campaign is not None
    assert [ex.state for ex in died.campaign.executions] == ["incomplete", "died"] and died.campaign.state == "died"
    finished = _record("incomplete", "complete")
    assert as_died(finished) is finished
    assert attrs.evolve(finished) == as_died(finished)


def _campaign(run: Path) -> dict[str, Any]:
    return dict(json.loads((run / "run.json").read_text())["campaign"])


@pytest.mark.slow
def test_a_run_killed_outright_leaves_its_record_and_a_resume_adds_to_it(tmp_path: Path) -> None:
    root = with_corpus(tmp_path / "run")
    proc = start(root)
    wait_until("a task finished", lambda: bool(list((root / "reports" / "runs").glob("*/results/*.json"))), timeout=120)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    run = latest(root)
    assert _campaign(run)["state"] == "running" and [ex["state"] for ex in _campaign(run)["executions"]] == ["running"]
    assert mark_dead_runs(str(root / "reports")) == [run.name]
    assert _campaign(run)["state"] == "died" and [ex["state"] for ex in _campaign(run)["executions"]] == ["died"]
    done = command(root, "run", "--resume", run.name)
    assert status(run)["state"] == "complete", done.stdout + done.stderr
    assert [ex["state"] for ex in _campaign(run)["executions"]] == ["died", "complete"]
    assert _campaign(run)["state"] == "complete"
