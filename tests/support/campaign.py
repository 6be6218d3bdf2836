"""Shared by the campaign tests: a small corpus, the command line in a child, comparable counts."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.paths import ROOT, SUPPORT

STARTER = Path(ROOT) / "scenarios" / "starter"
SMALL = ("boundary-2-3-pay", "torn-none-mid-line", "two-writers-storage")
# a tiny campaign: three scenarios, one crash state per point, 3 examples per fuzz shard, no
# determinism re-check (two fresh interpreters per scenario: most of a tiny campaign's time) and
# no DSH phase (20-30 s where DSH is installed; tests/system/test_dsh_against.py runs it once)
TINY = ["--examples", "3", "--bound", "1", "--seed", "11", "--skip", "mutants", "--rechecks", "0", "--skip", "dsh"]


# the dsh-sim command with the replay shard's reader differential on a small plan (see the script)
SMALL_READERS_CLI = [sys.executable, os.path.join(SUPPORT, "small_readers_cli.py")]


def small_readers(monkeypatch: Any) -> None:
    """In this process, campaigns run the reader differential on the small plan of
    tests/support/small_readers_cli.py (tests of how a campaign runs, not of the differential)."""
    from dsh_sim.drivers import readers
    from tests.support.small_readers_cli import SMALL_READERS

    monkeypatch.setattr(readers, "FULL_PLAN", SMALL_READERS)


def small_corpus(root: Path, *, unsafe: bool = False) -> Path:
    """Copies of a few starter scenarios under ``root/scen``; with ``unsafe``, also a runtime
    without the checkpoint policy that is expected to pass: exploring it finds violations."""
    scen = root / "scen"
    scen.mkdir(parents=True, exist_ok=True)
    for name in SMALL:
        shutil.copy(STARTER / f"{name}.json", scen / f"{name}.json")
    if unsafe:
        doc = json.loads((STARTER / "no-checkpoint-policy-unsafe.json").read_text())
        doc["name"], doc["expect"] = "unsafe-expected-to-pass", {"outcome": "pass"}
        (scen / "unsafe-expected-to-pass.json").write_text(json.dumps(doc))
    return scen


def dsh(*args: str, cwd: Path, timeout: float = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dsh_sim", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def runs(out: Path) -> list[Path]:
    return sorted(Path(p).parent for p in glob.glob(str(out / "runs" / "*" / "campaign.json")))


def status(run: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((run / "status.json").read_text())
    return doc


TIMING = ("runs", "campaigns", "seconds", "cpu_seconds", "time_to_kill", "median_time_to_kill")


def comparable(coverage: Path) -> dict[str, Any]:
    """coverage.json without what depends on time or place (run metadata, durations):
    what must be identical between a campaign and a single-process run of the same seeds."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in TIMING}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    doc: dict[str, Any] = strip(json.loads(coverage.read_text()))
    return doc


def descendants_alive(pids: list[int]) -> list[int]:
    import psutil

    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def leftovers(*dirs: Path) -> list[str]:
    """Temp files (``.*.tmp``), dask scratch space or anything at all in a private TMPDIR."""
    found = []
    for directory in dirs:
        for dirpath, dirnames, filenames in os.walk(directory):
            found += [os.path.join(dirpath, n) for n in filenames if n.endswith(".tmp")]
            found += [os.path.join(dirpath, n) for n in dirnames if "dask" in n]
    return found


class QuietContext:
    """A task's context that never stops and keeps no progress (a phase called directly)."""

    worker = "local"

    def checkpoint(self) -> None:
        pass

    def progress(self, done: int, total: int | None, note: str) -> None:
        pass
