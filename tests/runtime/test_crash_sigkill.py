"""A real child process killed with SIGKILL at a failpoint, recovered in the parent (spec §8.7).

The child (``tests/crash_child.py``) runs the production runtime: JSONL backend on the real
filesystem, the checkpoint policy, a model adapter ``crash`` and a tool ``crash_tool``.  The
marker file is created empty first, so readiness is its *content*, never its existence.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.adapters import production_ports
from runtime.agent.runtime import RuntimeConfig, open_runtime
from runtime.persistence.backend import JsonlBackend
from runtime.session.events import Event
from tests.support.agent import PartsModel, of_type, result_summary, types
from tests.support.paths import ROOT

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL and flock are POSIX")

REPO = Path(ROOT)
CHILD = Path(ROOT) / "tests" / "support" / "crash_child.py"
SESSION_ID = "semantic-checkpoint-crash"
POLL_SECONDS = 0.010
TIMEOUT_SECONDS = 30.0
EXPECTED_MARKER = {"request": "request-dispatched", "tool": "tool-side-effect"}


def wait_for_marker(marker: Path, expected: str, child: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while True:
        current = marker.read_text(encoding="utf-8")
        if current == expected or not expected.startswith(current):
            return current  # terminal: complete, or content that can never become the marker
        if child.poll() is not None:
            raise AssertionError(f"crash child exited with {child.returncode} before its failpoint")
        if time.monotonic() > deadline:
            raise AssertionError(f"crash child did not publish failpoint {expected!r} within {TIMEOUT_SECONDS} s")
        time.sleep(POLL_SECONDS)


def crash_at(mode: str, root: Path, marker: Path, compression: str) -> str:
    marker.write_text("", encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    child = subprocess.Popen(
        [sys.executable, str(CHILD), mode, str(root), str(marker), compression],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        text = wait_for_marker(marker, EXPECTED_MARKER[mode], child)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
        assert (child.returncode, -child.returncode) == (-signal.SIGKILL, signal.SIGKILL), "child must die by SIGKILL"
        return text
    except BaseException:
        child.kill()
        _, stderr = child.communicate(timeout=10)
        sys.stderr.write(stderr.decode(errors="replace"))
        raise
    finally:
        if child.stderr is not None:
            child.stderr.close()


async def recover(root: Path, compression: str) -> tuple[list[Event], tuple[Event, ...], dict[str, str]]:
    """Resume with a fresh runtime (repair appended durably), then read what is on disk."""
    config = RuntimeConfig(root=str(root), compression=compression)
    async with open_runtime(production_ports(), config, PartsModel([], provider="crash", model="crash")) as rt:
        agent, report = await rt.resume_agent(SESSION_ID)
        await rt.close_agent(agent)
    backend = JsonlBackend(str(root), production_ports(), compression=compression)
    handle = await backend.open(SESSION_ID, "read")
    try:
        return await handle.read(), report.closers, report.verdicts
    finally:
        await handle.close()


@pytest.mark.slow
@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_sigkill_at_request_dispatch_keeps_the_complete_request(tmp_path: Any, compression: str) -> None:
    root = tmp_path / "sessions"
    marker = tmp_path / "failpoint"
    assert crash_at("request", root, marker, compression) == "request-dispatched"
    events, closers, verdicts = trio.run(recover, root, compression)
    assert types(events) == [
        "turn/start",
        "step/start",
        "system/message",
        "user/message",
        "request/header",
        "request/context",
        "step/end",
        "turn/end",
        "session/end-seed",
    ]
    assert types(closers) == ["step/end", "turn/end"] and verdicts == {}
    assert events[-2].data == {"turn": 1, "reason": {"kind": "interrupted"}}
    assert events[3].data["content"] == [{"type": "text", "text": "exercise the crash boundary"}]
    assert events[4].data["reason"] == "initial"
    assert events[5].data == {"provider": "crash", "model": "crash"}


@pytest.mark.slow
@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_sigkill_inside_a_tool_body_repairs_the_result_as_outcome_unknown(tmp_path: Any, compression: str) -> None:
    root = tmp_path / "sessions"
    marker = tmp_path / "failpoint"
    assert crash_at("tool", root, marker, compression) == "tool-side-effect"
    events, closers, verdicts = trio.run(recover, root, compression)
    assert of_type(events, "assistant/message") and of_type(events, "tool/call")
    [call] = of_type(events, "tool/call")
    assert call.data == {"turn": 1, "step": 1, "callId": "crash-call", "name": "crash_tool", "arguments": "{}"}
    [result] = of_type(events, "tool/result")
    assert result.data["error"] == {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
    assert "Do not retry blindly." in result_summary(result)["text"]
    assert result.source_event_seqs == (call.seq,)
    assert verdicts == {"crash-call": "TOOL_OUTCOME_UNKNOWN"}
    assert types(closers) == ["tool/result", "step/end", "turn/end"]
    assert types(events)[-3:] == ["step/end", "turn/end", "session/end-seed"]
