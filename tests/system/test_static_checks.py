"""ruff (lint and format) and mypy over the whole tree, as part of the test suite: CI runs only
the README's test command, so this is how the static checks run in CI (issue 12)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.paths import ROOT


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *argv], check=False, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [("ruff", "check", "."), ("ruff", "format", "--check", "."), ("mypy",)],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_static_check_passes(argv):
    result = run(*argv)
    assert result.returncode == 0, f"{' '.join(argv)} failed:\n{result.stdout[-4000:]}\n{result.stderr[-2000:]}"
