"""``inspect --json`` streams a long log: the same JSON value as the indented document, one
event per line, written in chunks of about a megabyte (a 73 MB log once took 64 s and ~12 million
writes; ``benchmarks/README.md``, stop 30)."""

from __future__ import annotations

import io
import json
import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from dsh_sim import api
from dsh_sim.cli.commands import common
from dsh_sim.cli.main import main
from runtime.persistence.layout import SessionPaths
from runtime.persistence.zstd_frames import compress_frame
from runtime.session.events import Event
from tests.support.persistence import backend, line, lines, meta, one_turn_log, open_turn, run, torn_frame


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


def _session(root: str, compression: str, events: list[Event]) -> str:
    async def write() -> None:
        handle = await backend(root, compression).create(meta("s"))
        await handle.append(events)
        await handle.close()

    run(write)
    return SessionPaths.of(root, None, "s", compression).session_dir


def _log_file(session_dir: str) -> str:
    (name,) = [n for n in os.listdir(session_dir) if n.startswith("session.v")]
    return os.path.join(session_dir, name)


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_a_streamed_log_with_a_torn_tail_reads_as_the_in_memory_document(
    tmp_path: Path, compression: str, capsys: pytest.CaptureFixture[str]
) -> None:
    session_dir = _session(str(tmp_path), compression, one_turn_log() + open_turn())
    log = _log_file(session_dir)
    with open(log, "ab") as f:  # a torn final record (raw) or frame (zstd), with a complete record inside
        recovered = lines([Event("step/end", 8, 9, {"turn": 2, "step": 1}), Event("step/start", 9, 9, {"turn": 2, "step": 2})])
        f.write(torn_frame(recovered, len(compress_frame(recovered)) - 2) if compression == "zstd" else b'{"type":"turn/st')
    assert main(["inspect", session_dir, "--json"]) == 0
    streamed = json.loads(capsys.readouterr().out)
    assert streamed == json.loads(json.dumps(api.inspect(session_dir).document))
    assert streamed["torn"] is not None and streamed["closers"]
    if compression == "zstd":
        assert streamed["torn"]["recovered_records"] == 2 and streamed["events"][-1]["seq"] == 9
    assert main(["inspect", session_dir]) == 0
    plain = capsys.readouterr().out
    assert "torn tail:" in plain and "a resume would append:" in plain and plain.count("turn/start") >= 2


def test_damage_found_late_prints_nothing_but_the_refusal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The events stream by while the log is read, yet a turn/end after an unparsable line far
    into the log (past the first megabyte read) refuses the whole log: no partial document."""
    session_dir = _long_log(str(tmp_path), 20_000)
    log = _log_file(session_dir)
    assert os.path.getsize(log) > 2 * (1 << 20)
    with open(log, "ab") as f:
        f.write(b"{unparsable\n" + line(Event("turn/end", 20_006, 7, {"turn": 1, "reason": {"kind": "completed"}})))
    for argv in (["inspect", session_dir, "--json"], ["inspect", session_dir]):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err.count("\n") == 1 and "refused: corrupt session log: unparsable committed event at line" in err


def test_a_large_log_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """Traced allocations while a log streams through: a few read buffers, never the log (the
    whole-file read held the bytes, every event and the document: ~10x the file)."""
    session_dir = _long_log(str(tmp_path), 40_000)
    size = os.path.getsize(_log_file(session_dir))
    assert size > 4 * (1 << 20)
    count = 0

    def sink(event: Event) -> None:
        nonlocal count
        count += 1

    tracemalloc.start()
    try:
        scan = api.scan_log(session_dir, sink)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == scan.event_count == 40_006
    assert peak < size // 2, f"peak {peak} bytes while reading a {size}-byte log"


def test_an_unreadable_event_of_the_open_turn_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session_dir = _session(str(tmp_path), "none", one_turn_log())
    with open(_log_file(session_dir), "ab") as f:
        f.write(b'{"type":"turn/start","seq":6,"time":0,"data":{}}\n')
    before = {name: (Path(session_dir) / name).read_bytes() for name in os.listdir(session_dir)}
    for argv in (["inspect", session_dir], ["inspect", session_dir, "--json"], ["repair", session_dir]):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1
        assert "turn/start at seq 6 has data repair cannot read (KeyError: 'turn')" in err
        assert {name: (Path(session_dir) / name).read_bytes() for name in os.listdir(session_dir)} == before  # nothing written
