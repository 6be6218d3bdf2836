"""Production process runner: ``trio.run_process`` with captured output."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

import trio

from runtime.ports.process import ProcessResult


class SubprocessRunner:
    def __init__(self, timeout: float = 120.0) -> None:
        self._timeout = timeout

    async def run(self, argv: Sequence[str], *, cwd: str, call_id: str | None = None) -> ProcessResult:
        with trio.fail_after(self._timeout):
            done = await trio.run_process(
                list(argv), cwd=cwd, capture_stdout=True, capture_stderr=True, check=False, stdin=subprocess.DEVNULL
            )
        return ProcessResult(done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"))
