"""The quick tier reaches every module: one small, real use of each door the slow tests cover
at length (the Dask cluster, the reader differential's command, the DSH explore command's
refusal when DSH is missing, the mutation triage probe, ``python -m dsh_sim``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh_sim.campaign.cluster import DaskCluster
from dsh_sim.campaign.events import Finished
from dsh_sim.campaign.tasks import ReplayShard
from dsh_sim.cli.main import main
from dsh_sim.mutation import probe
from tests.support.paths import ROOT, STARTER

SCENARIO = os.path.join(STARTER, "torn-none-mid-line.json")


def test_one_replay_task_runs_on_an_embedded_dask_worker(tmp_path: Path) -> None:
    with open(SCENARIO, encoding="utf-8") as handle:
        corpus = {"torn-none-mid-line": handle.read()}
    cluster = DaskCluster(str(tmp_path), workers=1)
    events: list[Any] = []
    try:
        assert cluster.workers == 1
        cluster.bind("quick")
        cluster.run([ReplayShard("r0", ("torn-none-mid-line",))], corpus, events.append)
    finally:
        cluster.close()
    (finished,) = [e for e in events if isinstance(e, Finished)]
    assert finished.result.task == "r0" and finished.result.violations == 0
    assert finished.result.worker != "local"  # it ran on the worker, not in this process


def test_the_readers_command_compares_one_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["readers", "--sample", "--json", "--scenarios", SCENARIO]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["cases"] > 0 and doc["checks"] > 0 and doc["mismatches"] == []


def test_exploring_the_dsh_writer_without_dsh_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DSH_SIM_DSH_HOME", str(tmp_path / "no-dsh"))
    code = main(["explore", "--runtime", "dsh", "--bound", "1", SCENARIO])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "dsh" in err.lower()


def test_the_probe_refuses_to_run_outside_a_mutants_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert probe.main(["x"]) == 2
    assert "mutants/ directory" in capsys.readouterr().err


def test_the_probe_reports_a_name_that_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Outside mutmut's trampolines a mutant name switches nothing on: no scenario changes."""
    (tmp_path / "runtime").mkdir()
    (tmp_path / "mutmut-stats.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    one = [s for s in probe.harness.corpus(Path(ROOT)) if s.name == "torn-none-mid-line"]
    monkeypatch.setattr(probe.harness, "corpus", lambda: one)
    assert probe.main(["runtime.x__mutmut_1"]) == 0
    line = json.loads(capsys.readouterr().out)
    assert line == {"name": "runtime.x__mutmut_1", "changed": 0, "scenarios": [], "kinds": [], "error": None}


def test_python_dash_m_runs_the_command() -> None:
    done = subprocess.run([sys.executable, "-m", "dsh_sim", "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout.startswith("dsh-sim ")
