"""The session-log commands refuse what the runtime's own open refuses, in its words.

``inspect``, ``migrate`` and ``repair`` once disagreed: a session directory whose header id names
another session (``other``, or ``../../../../pwn``) was refused by ``repair`` but inspected and
migrated with exit 0, and each command worded a newer log format its own way.  Now each refuses
in one line (exit 2) with the spec's texts (§3.7: the header's id and cwd must identify the
directory the log was found in; §3.9: a newer format asks to upgrade the harness), and nothing
under the root changes.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh_sim.cli.commands.common import EXIT_USAGE
from dsh_sim.cli.main import main
from dsh_sim.scenario.v0_writer import encode_v0
from runtime.persistence.layout import SessionPaths, generation_filename
from runtime.persistence.v0_format import V0Event, V0Header
from tests.support.persistence import backend, header_record, meta, one_turn_log, run, with_header

SID = "victim"
COMMANDS = (("inspect",), ("inspect", "--json"), ("migrate",), ("repair",))


def _v3(root: str, header_id: str, version: int = 3) -> str:
    async def write() -> None:
        handle = await backend(root, "none").create(meta(SID))
        await handle.append(one_turn_log())
        await handle.close()

    run(write)
    paths = SessionPaths.of(root, None, SID, "none")
    data = Path(paths.log).read_bytes()
    header = header_record(data, "none")
    header.update(id=header_id, version=version)
    Path(paths.log).write_bytes(with_header(data, "none", header))
    return paths.session_dir


def _v0(root: str, header_id: str) -> str:
    session_dir = SessionPaths.of(root, None, SID, "none").session_dir
    os.makedirs(session_dir)
    events = [V0Event("turn/start", 0, 1, {"turn": 1}), V0Event("turn/end", 1, 2, {"turn": 1, "reason": {"kind": "completed"}})]
    Path(session_dir, generation_filename(0, "none")).write_bytes(encode_v0(V0Header(header_id, 1000), [events], "none"))
    return session_dir


def _tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == EXIT_USAGE, (code, out, err)
    assert len(lines) == 1 and lines[0].startswith("dsh-sim: ") and "Traceback" not in err, err
    assert out == ""
    return lines[0]


@pytest.mark.parametrize("header_id", ["other", "../../../../pwn"])
@pytest.mark.parametrize("generation", ["v3", "v0"])
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_header_naming_another_session_is_refused_by_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], header_id: str, generation: str, command: tuple[str, ...]
) -> None:
    session_dir = (_v3 if generation == "v3" else _v0)(str(tmp_path / "root"), header_id)
    before = _tree(tmp_path)
    line = _refused(capsys, [command[0], session_dir, *command[1:]])
    if generation == "v0" and command == ("repair",):
        assert "a v0 log is historical" in line and "dsh-sim migrate" in line
    else:
        assert f'header id "{header_id}" and cwd identify' in line, line
    assert _tree(tmp_path) == before
    assert not any("pwn" in name for name in os.listdir(tmp_path))


def test_the_sessions_own_directory_is_still_inspected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The check is the identity, not a refusal of everything: the header's own session reads."""
    session_dir = _v3(str(tmp_path / "root"), SID)
    assert main(["inspect", session_dir, "--json"]) == 0
    assert '"id": "victim"' in capsys.readouterr().out


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_newer_log_format_is_refused_in_the_specs_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...]
) -> None:
    session_dir = _v3(str(tmp_path / "root"), SID, version=99)
    before = _tree(tmp_path)
    line = _refused(capsys, [command[0], session_dir, *command[1:]])
    assert 'session "victim" uses log format v99, but this harness reads only v3: the log was written by a newer harness' in line, line
    assert "upgrade the harness to open it" in line
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_file_named_for_a_newer_format_is_refused_in_the_specs_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...]
) -> None:
    session_dir = _v3(str(tmp_path / "root"), SID)
    newer = Path(session_dir, "session.v7.jsonl")
    os.rename(Path(session_dir, "session.v3.jsonl"), newer)
    line = _refused(capsys, [command[0], str(newer), *command[1:]])
    assert "uses log format v7, but this harness reads only v3" in line and "upgrade the harness to open it" in line, line
