"""The process-runner port: how the shell tool starts a command."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import attrs


@attrs.frozen
class ProcessResult:
    exit_code: int
    stdout: str
    stderr: str


class ProcessRunner(Protocol):
    async def run(self, argv: Sequence[str], *, cwd: str, call_id: str | None = None) -> ProcessResult:
        """Run ``argv``; ``call_id`` names the tool call that asked (for attribution)."""
        ...
