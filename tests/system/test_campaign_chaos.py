"""The campaign survives its own faults on a cluster started from the command line
(``dask scheduler`` + ``dask worker`` processes on loopback): kill a worker, a worker and its
nanny, every worker; restart the scheduler; SIGTERM and SIGKILL the client; two clients on one
cluster.  (The embedded cluster: ``test_campaign_chaos_embedded.py``.)

Each fault ends the run either **complete, with totals equal to an in-process run of the same
seeds**, or **incomplete with one line naming the reason**, after which ``--resume`` (in process
or on the cluster) finishes it with those totals.  No task's stop kills a worker process.  The
faults wait until the scheduler says a task of ours is processing, so they land mid-task.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh_sim.campaign.rundir import read_status
from tests.support.campaign import comparable, status
from tests.support.chaos import (
    PATIENCE,
    QUICK,
    SHORT_PATIENCE,
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
from tests.support.cluster import ExternalCluster, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return in_process_totals(tmp_path_factory.mktemp("single"))


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ExternalCluster]:
    (tmp_path / "cluster").mkdir()
    started = ExternalCluster(tmp_path / "cluster", workers=2)
    try:
        yield started
    finally:
        started.stop()


def _while_tasks_run(cluster: ExternalCluster) -> str:
    """Wait until a worker processes a task of ours; the address of one such worker."""
    wait_until("a task of ours runs", lambda: bool(cluster.busy()), timeout=120)
    return next(iter(cluster.busy()))


def test_a_killed_worker_is_named_and_its_task_runs_again(tmp_path: Path, cluster: ExternalCluster, single: dict[str, Any]) -> None:
    root = with_corpus(tmp_path / "run")
    proc = start(root, "--scheduler", cluster.address, *PATIENCE)
    cluster.kill_worker(_while_tasks_run(cluster))  # its nanny starts it again
    code, out, _ = ended(proc)
    assert "left the cluster" in out
    complete(root, code, out, single)


def test_a_worker_killed_with_its_nanny_leaves_its_task_to_the_others(
    tmp_path: Path, cluster: ExternalCluster, single: dict[str, Any]
) -> None:
    root = with_corpus(tmp_path / "run")
    proc = start(root, "--scheduler", cluster.address, *PATIENCE)
    cluster.kill_worker(_while_tasks_run(cluster), nanny=True)
    code, out, _ = ended(proc)
    complete(root, code, out, single)


def test_every_worker_killed_ends_incomplete_and_resume_on_new_workers_finishes(
    tmp_path: Path, cluster: ExternalCluster, single: dict[str, Any]
) -> None:
    root = with_corpus(tmp_path / "run")
    proc = start(root, "--scheduler", cluster.address, *SHORT_PATIENCE)
    _while_tasks_run(cluster)
    cluster.kill_all_workers()
    code, _, err = ended(proc)
    incomplete(root, code, err, "no Dask worker left")
    cluster.add_worker()
    cluster.add_worker()
    cluster.wait_for_workers(2)
    done = command(root, "run", "--resume", "latest", "--scheduler", cluster.address)
    complete(root, done.returncode, done.stdout, single)


def test_a_restarted_scheduler_gets_the_tasks_submitted_again(tmp_path: Path, cluster: ExternalCluster, single: dict[str, Any]) -> None:
    root = with_corpus(tmp_path / "run")
    proc = start(root, "--scheduler", cluster.address, *PATIENCE)
    _while_tasks_run(cluster)
    cluster.restart_scheduler()  # (its workers do not come back by themselves: an operator starts new ones)
    cluster.add_worker()
    cluster.add_worker()
    code, out, _ = ended(proc)
    assert "submitted again" in out and "the connection to the scheduler was lost" in out, out
    complete(root, code, out, single)


def test_sigterm_stops_promptly_without_ending_a_worker_and_resume_is_not_stopped(
    tmp_path: Path, cluster: ExternalCluster, single: dict[str, Any]
) -> None:
    root = with_corpus(tmp_path / "run")
    proc = start(root, "--scheduler", cluster.address, *PATIENCE)
    _while_tasks_run(cluster)
    pids = cluster.worker_pids()
    asked = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    code, _, err = ended(proc)
    assert time.monotonic() - asked <= STOP_MARGIN
    incomplete(root, code, err, "SIGTERM", expected_code=143)
    wait_until("the stopped tasks end", lambda: not cluster.busy(), timeout=60)
    assert cluster.worker_pids() == pids  # no task's stop took its worker's process down
    done = command(root, "run", "--resume", "latest", "--scheduler", cluster.address)  # (the old stop does not stop it)
    complete(root, done.returncode, done.stdout, single)


def test_a_client_killed_outright_is_never_left_running_and_resumes_in_process(
    tmp_path: Path, cluster: ExternalCluster, single: dict[str, Any]
) -> None:
    root = with_corpus(tmp_path / "run")
    proc = start(root, "--scheduler", cluster.address, *PATIENCE)
    _while_tasks_run(cluster)
    proc.kill()
    proc.wait()
    run = latest(root)
    assert status(run)["state"] == "running"  # (what the file said when the process died)...
    assert _record(run)["state"] == "running"  # (its record is written as it goes: it exists)
    seen = read_status(str(run))
    assert seen is not None and seen.state == "incomplete" and "its process died" in str(seen.stopped_by)  # ...is read as it is
    # the next run writes it down (any run does: it reads the runs' status first; fuzz alone is the cheapest)
    other = command(root, "run", "--scenarios", "scen", "--examples", "2", "--fuzz-shards", "1", "--skip", "replay", *QUICK)
    assert other.returncode in (0, 1), other.stderr
    assert status(run)["state"] == "incomplete" and "its process died" in str(status(run)["stopped_by"])
    assert _record(run)["state"] == "died" and [ex["state"] for ex in _record(run)["executions"]] == ["died"]
    done = command(root, "run", "--resume", run.name)
    assert status(run)["state"] == "complete", done.stdout
    assert comparable(run / "coverage.json") == single
    assert [ex["state"] for ex in _record(run)["executions"]] == ["died", "complete"]


def _record(run: Path) -> dict[str, Any]:
    """The campaign record of ``run`` (run.json)."""
    return dict(json.loads((run / "run.json").read_text())["campaign"])


def test_two_clients_on_one_cluster_each_get_their_own_totals(tmp_path: Path, cluster: ExternalCluster, single: dict[str, Any]) -> None:
    roots = [with_corpus(tmp_path / name) for name in ("one", "two")]
    procs = [start(root, "--scheduler", cluster.address, *PATIENCE) for root in roots]
    for root, proc in zip(roots, procs, strict=True):
        code, out, _ = ended(proc)
        complete(root, code, out, single)
