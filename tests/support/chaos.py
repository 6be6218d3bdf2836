"""What the campaign chaos suites share: the campaign they run (two fuzz shards of a few
seconds each, the part of a campaign long enough to be struck mid-task), how they start and read
it, and the totals of the same seeds run in process that every fault must end with."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.campaign import comparable, runs, small_corpus, status

CAMPAIGN = [
    *("--scenarios", "scen", "--examples", "10", "--fuzz-shards", "2", "--seed", "7", "--rechecks", "0"),
    *("--skip", "replay", "--skip", "explore", "--skip", "mutants", "--skip", "dsh"),
]
QUICK = ["--rechecks", "0", "--skip", "explore", "--skip", "mutants", "--skip", "dsh"]
# A stop answers within 2 s (measured by benchmarks/bench_stop.py); here a margin a loaded machine
# cannot cross (the run still ends incomplete: the stop did not wait for its tasks).
STOP_MARGIN = 10.0
# how long a run waits for a lost cluster (default 20 s): long where the cluster comes back (a
# nanny restarting its worker may take seconds on a loaded machine), short where it never does
PATIENCE = ["--cluster-patience", "120"]
SHORT_PATIENCE = ["--cluster-patience", "4"]


def with_corpus(base: Path) -> Path:
    """``base`` holding the small scenario corpus the campaign runs (in ``scen``)."""
    small_corpus(base)
    return base


def start(root: Path, *extra: str) -> subprocess.Popen[str]:
    """The campaign started in ``root`` (``extra``: where it runs and how patient it is)."""
    return subprocess.Popen(
        [sys.executable, "-m", "dsh_sim", "run", *CAMPAIGN, *extra],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def command(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dsh_sim", *args], cwd=root, capture_output=True, text=True, timeout=300, check=False)


def ended(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=300)
    assert "Traceback" not in err, err
    return proc.returncode, out, err


def latest(root: Path) -> Path:
    return runs(root / "reports")[-1]


def complete(root: Path, code: int, out: str, single: dict[str, Any]) -> None:
    """The run ended complete, with the totals of the in-process run (exit 1: the tiny corpus leaves
    coverage requirements unmet, as in process)."""
    assert code == 1, out
    run = latest(root)
    assert status(run)["state"] == "complete", (status(run), out)
    assert comparable(run / "coverage.json") == single


def incomplete(root: Path, code: int, err: str, reason: str, expected_code: int = 1) -> Path:
    """The run ended incomplete in one line naming ``reason``."""
    assert code == expected_code, err
    lines = [line for line in err.splitlines() if line.startswith("dsh-sim:")]
    assert len(lines) == 1 and reason in lines[0] and "is incomplete" in lines[0] and "--resume" in lines[0], err
    run = latest(root)
    assert status(run)["state"] == "incomplete" and reason in str(status(run)["stopped_by"])
    return run


def in_process_totals(base: Path) -> dict[str, Any]:
    """The campaign run in process, undisturbed: the totals every fault must end with."""
    root = with_corpus(base)
    code, out, _ = ended(start(root))
    assert code == 1 and status(latest(root))["state"] == "complete", out
    return comparable(latest(root) / "coverage.json")
