"""The campaign survives its own faults on the embedded cluster (``dsh-sim run --workers N``):
a worker process killed mid-task, every worker killed, SIGTERM on the run.  Each ends complete
with the totals of an in-process run of the same seeds, or incomplete in one line after which
``--resume`` in process finishes it.  (A cluster started from the command line:
``test_campaign_chaos.py``.)  The faults wait until the run has started and its worker processes
spend CPU on tasks.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.support.chaos import (
    PATIENCE,
    STOP_MARGIN,
    command,
    complete,
    ended,
    in_process_totals,
    incomplete,
    latest,
    start,
    with_corpus,
)
from tests.support.cluster import wait_until

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return in_process_totals(tmp_path_factory.mktemp("single"))


def _embedded_workers(root: Path, proc: subprocess.Popen[str], n: int) -> list[psutil.Process]:
    """The embedded cluster's worker processes (children of the run started by multiprocessing),
    once the run has started (its directory exists) and ``n`` of them have spent half a CPU-second
    since: they run tasks."""
    parent = psutil.Process(proc.pid)

    def workers() -> list[psutil.Process]:
        found = []
        for child in parent.children(recursive=True):
            try:
                line = " ".join(child.cmdline())
                if "spawn_main" in line or line.startswith("dask worker"):  # (dask retitles its processes)
                    found.append(child)
            except psutil.Error:
                pass
        return found

    def cpu(worker: psutil.Process) -> float:
        try:
            return float(sum(worker.cpu_times()[:2]))
        except psutil.Error:
            return 0.0

    wait_until("the run starts", lambda: any((root / "reports" / "runs").glob("*/status.json")), timeout=120)
    before = {w.pid: cpu(w) for w in workers()}
    wait_until(
        "the embedded workers run tasks", lambda: len([w for w in workers() if cpu(w) > before.get(w.pid, 0.0) + 0.5]) >= n, timeout=120
    )
    return workers()


def test_embedded_a_killed_worker_is_started_again_and_the_run_completes(tmp_path: Path, single: dict[str, Any]) -> None:
    root = with_corpus(tmp_path / "run")
    proc = start(root, "--workers", "2", *PATIENCE)
    _embedded_workers(root, proc, 1)[0].kill()
    code, out, _ = ended(proc)
    assert "left the cluster" in out
    complete(root, code, out, single)


def test_embedded_every_worker_killed_loses_no_input(tmp_path: Path, single: dict[str, Any]) -> None:
    """(The corpus used to be scattered to the workers: killing them all lost it, the cancelled
    tasks were skipped and the run failed with no reason.)"""
    root = with_corpus(tmp_path / "run")
    proc = start(root, "--workers", "2", *PATIENCE)
    for worker in _embedded_workers(root, proc, 2):
        worker.kill()
    code, out, _ = ended(proc)
    complete(root, code, out, single)


def test_embedded_sigterm_stops_promptly_and_resume_in_process_finishes(tmp_path: Path, single: dict[str, Any]) -> None:
    root = with_corpus(tmp_path / "run")
    proc = start(root, "--workers", "2", *PATIENCE)
    workers = _embedded_workers(root, proc, 1)
    asked = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    code, _, err = ended(proc)
    assert time.monotonic() - asked <= STOP_MARGIN
    incomplete(root, code, err, "SIGTERM", expected_code=143)
    assert not [w for w in workers if w.is_running() and w.status() != psutil.STATUS_ZOMBIE]  # the embedded workers ended
    done = command(root, "run", "--resume", "latest")
    complete(root, done.returncode, done.stdout, single)
    assert json.loads((latest(root) / "status.json").read_text())["executor"].startswith("in process")
