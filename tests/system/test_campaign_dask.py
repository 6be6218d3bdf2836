"""Campaigns on Dask: the embedded LocalCluster and a cluster started from the command line
(``dask scheduler`` + two ``dask worker``) produce one merged report whose counts are exactly
those of a single-process run of the same seeds; findings come back as files to the submitter.

Few and small on purpose (each starts a cluster): three scenarios plus one that explore finds
violations in, one crash state per point, three examples per fuzz shard, every mutant against
a three-scenario starter corpus, the reader differential on a small plan
(tests/support/small_readers_cli.py: the submitter, the embedded workers and the command-line
workers, by ``--preload``, all run it; a process that ran the full plan would count other
reader cases, and the counts below would differ).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from distributed import Client

from tests.support.campaign import SMALL_READERS_CLI, comparable, runs, small_corpus, status

# no DSH phase: it runs after the Dask tasks, in the submitting process (test_dsh_against.py)
ARGS = ["--scenarios", "scen", "--examples", "3", "--bound", "1", "--seed", "5", "--rechecks", "1", "--skip", "dsh"]


def _root(base: Path, name: str) -> Path:
    root = base / name
    scen = small_corpus(root, unsafe=True)
    starter = root / "scenarios" / "starter"  # the mutant self-test's corpus, small here
    starter.mkdir(parents=True)
    for path in scen.iterdir():
        if not path.name.startswith("unsafe"):
            shutil.copy(path, starter / path.name)
    return root


def _campaign(root: Path, *extra: str) -> tuple[dict[str, Any], list[str]]:
    done = subprocess.run([*SMALL_READERS_CLI, "run", *ARGS, *extra], cwd=root, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 1, done.stderr  # the unsafe scenario: violations found (and requirements unmet)
    assert "Traceback" not in done.stderr, done.stderr
    (run,) = runs(root / "reports")
    assert status(run)["state"] == "complete"
    found = sorted(os.listdir(root / "scenarios" / "found"))
    return comparable(run / "coverage.json"), found


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], list[str]]:
    counts, found = _campaign(_root(tmp_path_factory.mktemp("campaign"), "one"))
    assert counts["violations"] and found  # the comparison below covers findings too
    assert counts["kill_matrix"] and counts["cases"] > 0 and counts["determinism"]
    return counts, found


@pytest.mark.slow
def test_two_embedded_workers_merge_to_the_counts_of_one_process(tmp_path: Path, single: tuple[dict[str, Any], list[str]]) -> None:
    counts, found = _campaign(_root(tmp_path, "two"), "--workers", "2")
    assert counts == single[0]
    assert found == single[1]


def _wait_for_file(path: Path, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, "the dask scheduler exited"
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.1)


@pytest.mark.slow
def test_a_cluster_started_from_the_command_line_runs_the_same_campaign(tmp_path: Path, single: tuple[dict[str, Any], list[str]]) -> None:
    root = _root(tmp_path, "submitter")
    elsewhere = tmp_path / "workers"  # the workers' own directory: nothing may land there
    elsewhere.mkdir()
    info = tmp_path / "scheduler.json"
    dask = [sys.executable, "-m", "dask"]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": elsewhere}
    procs = [subprocess.Popen([*dask, "scheduler", "--port", "0", "--no-dashboard", "--scheduler-file", str(info)], **quiet)]  # type: ignore[call-overload]
    try:
        _wait_for_file(info, procs[0])
        for _ in range(2):
            worker = [
                *dask,
                "worker",
                "--scheduler-file",
                str(info),
                "--nthreads",
                "1",
                "--no-dashboard",
                "--local-directory",
                str(elsewhere),
                "--preload",
                SMALL_READERS_CLI[1],  # the submitter's reader plan (dask_setup)
            ]
            procs.append(subprocess.Popen(worker, **quiet))  # type: ignore[call-overload]
        address = json.loads(info.read_text())["address"]
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        counts, found = _campaign(root, "--scheduler", address)
        run = runs(root / "reports")[0]
        assert "2 worker(s)" in status(run)["executor"]
        workers = {json.loads(p.read_text())["meta"]["worker"] for p in (run / "results").iterdir()}
        assert len(workers) == 2  # both workers ran tasks
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # a dask worker may linger on SIGTERM, reconnecting
                proc.kill()
                proc.wait()
    assert counts == single[0]
    assert found == single[1]  # the findings came back to the submitter as files...
    assert not [p for p in elsewhere.rglob("*.json") if "found" in str(p) or p.parent.name == "found"]  # ...and only there
