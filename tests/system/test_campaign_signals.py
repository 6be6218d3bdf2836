"""SIGTERM and SIGINT stop ``dsh-sim run`` cleanly: every child ends, no file is left behind,
the finished part stays a valid result set marked incomplete, one line, exit 143 / 130.

Before: SIGTERM killed the parent only — the determinism re-check child went on replaying
and its trace file stayed in the temp directory — and nothing was printed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from dsh_sim.evidence.results import read
from tests.support.campaign import SMALL_READERS_CLI, TINY, descendants_alive, leftovers, runs, small_corpus, status


def _start(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], Path]:
    small_corpus(tmp_path)
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(private_tmp)}
    # the reader differential on a small plan (the re-checks the stops wait for come after it)
    argv = [*SMALL_READERS_CLI, "run", "--scenarios", "scen", *TINY, *extra]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, private_tmp


def _wait_for_descendant(proc: subprocess.Popen[str], marker: str, timeout: float = 120) -> list[int]:
    parent = psutil.Process(proc.pid)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            kids = parent.children(recursive=True)
            if any(marker in " ".join(k.cmdline()) for k in kids):
                return [k.pid for k in kids]
        except psutil.Error:
            pass
        time.sleep(0.05)
    raise AssertionError(f"no {marker} process appeared")


def _check_stopped(tmp_path: Path, proc: subprocess.Popen[str], pids: list[int], private_tmp: Path, name: str, code: int) -> None:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"dsh-sim: stopped by {name}"), err
    time.sleep(0.5)
    assert descendants_alive(pids) == []
    assert list(private_tmp.iterdir()) == []
    assert leftovers(tmp_path / "reports") == []
    (run,) = runs(tmp_path / "reports")
    state = status(run)
    assert state["state"] == "incomplete" and state["stopped_by"] == name
    assert len(read([str(run / "results")])) == len(state["done"])  # what finished is whole and valid


@pytest.mark.slow
def test_sigterm_during_the_determinism_recheck_ends_the_child_and_removes_everything(tmp_path: Path) -> None:
    proc, private_tmp = _start(tmp_path, "--rechecks", "2")
    pids = _wait_for_descendant(proc, "dsh_sim.drivers.recheck")
    proc.send_signal(signal.SIGTERM)
    _check_stopped(tmp_path, proc, pids, private_tmp, "SIGTERM", 143)


@pytest.mark.slow
def test_sigint_while_fuzzing_stops_in_process(tmp_path: Path) -> None:
    proc, private_tmp = _start(tmp_path, "--skip", "replay", "--skip", "explore", "--examples", "100000")
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("dsh-sim run ")  # the header: the campaign has started
    time.sleep(3)  # inside the first fuzz shard (it has a 15 s budget)
    proc.send_signal(signal.SIGINT)
    _check_stopped(tmp_path, proc, [], private_tmp, "SIGINT", 130)


@pytest.mark.slow
def test_sigterm_stops_every_worker_of_the_embedded_cluster(tmp_path: Path) -> None:
    proc, private_tmp = _start(tmp_path, "--workers", "2", "--rechecks", "2")
    pids = _wait_for_descendant(proc, "dsh_sim.drivers.recheck")
    assert len(pids) >= 3  # two workers (and dask's helpers) and a re-check child
    proc.send_signal(signal.SIGTERM)
    _check_stopped(tmp_path, proc, pids, private_tmp, "SIGTERM", 143)
