"""``inspect --json`` streams a long log: the same JSON value as the indented document, one
event per line, written in chunks of about a megabyte (a 73 MB log once took 64 s and ~12 million
writes; ``benchmarks/README.md``, stop 30)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from dsh_sim import api
from dsh_sim.cli.commands import common
from dsh_sim.cli.main import main
from runtime.persistence.layout import SessionPaths
from runtime.session.events import Event
from tests.support.persistence import backend, meta, one_turn_log, run


def _long_log(root: str, messages: int) -> str:
    async def write() -> None:
        handle = await backend(root, "none").create(meta("long"))
        events = one_turn_log()
        seq = len(events)
        for n in range(messages):
            text = f'message {n} ünïcödé \u2028 "quoted"'
            message = {"id": f"m{n}", "role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": "user"}}
            events.append(Event("user/message", seq, 7, message, surface_op="append"))
            seq += 1
        await handle.append(events)
        await handle.close()

    run(write)
    return SessionPaths.of(root, None, "long", "none").session_dir


class _Counting(io.StringIO):
    writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def test_the_streamed_document_is_the_same_json_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session_dir = _long_log(str(tmp_path), 50)
    assert main(["inspect", session_dir, "--json"]) == 0
    streamed = capsys.readouterr().out
    assert json.loads(streamed) == json.loads(json.dumps(api.inspect(session_dir).document))
    lines = streamed.splitlines()
    assert lines[0] == "{" and lines[-1] == "}"
    assert sum(1 for line in lines if line.startswith('    {"type": ')) == 56  # one event per line


def test_a_long_log_leaves_in_a_few_large_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session_dir = _long_log(str(tmp_path), 20_000)
    out = _Counting()
    monkeypatch.setattr(common.sys, "stdout", out)
    document: dict[str, Any] = api.inspect(session_dir).document
    common.emit_json_lines(document, listed="events")
    assert len(out.getvalue()) > 2 * common.CHUNK
    assert out.writes <= len(out.getvalue()) // common.CHUNK + 1  # the indenting encoder made one write per token
    assert json.loads(out.getvalue()) == json.loads(json.dumps(document))


def test_an_empty_list_and_nested_values_keep_their_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _Counting()
    monkeypatch.setattr(common.sys, "stdout", out)
    document = {"events": [], "header": {"id": "x", "nested": {"a": [1, 2]}}, "torn": None}
    common.emit_json_lines(document, listed="events")
    assert json.loads(out.getvalue()) == document
