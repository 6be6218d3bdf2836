"""The command line refuses links planted where it reads session logs or writes its outputs.

Each refusal is one line on stderr, exit status 2, no traceback, and the link's target left
untouched.  Where the old code is simple to restate (``open(path, "x")`` after
``os.makedirs``), the probe is shown escaping through it first.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh_sim.cli.commands.common import EXIT_USAGE
from dsh_sim.cli.main import main
from dsh_sim.errors import InputError
from dsh_sim.evidence.coverage import aggregate
from dsh_sim.evidence.results import write
from dsh_sim.outputs import check_output_dir, write_new, write_replacing
from dsh_sim.report import write_coverage
from dsh_sim.scenario.files import load, save
from runtime.persistence.layout import SessionPaths
from runtime.session.events import Event
from tests.support.persistence import backend, meta, run
from tests.system.test_cli import PASSING

SID = "victim"


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str, *needles: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dsh-sim: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture
def victim(tmp_path: Path) -> tuple[str, str, bytes]:
    """Root A holds a session with an open turn (repair would append closers); returns
    (root B whose log is a link to A's log, A's log, A's bytes)."""
    a, b = str(tmp_path / "a"), str(tmp_path / "b")

    async def main_() -> None:
        handle = await backend(a, "none").create(meta(SID))
        await handle.append([Event("turn/start", 0, 1, {"turn": 1})])
        await handle.close()

    run(main_)
    log_a = SessionPaths.of(a, None, SID, "none").log
    link = SessionPaths.of(b, None, SID, "none")
    os.makedirs(link.session_dir)
    os.symlink(log_a, link.log)
    return b, log_a, Path(log_a).read_bytes()


@pytest.mark.parametrize("what", ["root", "session_dir", "log"])
def test_repair_refuses_a_linked_log(victim: tuple[str, str, bytes], capsys: pytest.CaptureFixture[str], what: str) -> None:
    root_b, log_a, before = victim
    paths = SessionPaths.of(root_b, None, SID, "none")
    target = {"root": root_b, "session_dir": paths.session_dir, "log": paths.log}[what]
    code, _, err = cli(capsys, "repair", target)
    assert code == EXIT_USAGE
    one_line(err, "symbolic link")
    assert Path(log_a).read_bytes() == before


def test_repair_refuses_a_linked_session_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = str(tmp_path / "a")

    async def main_() -> None:
        handle = await backend(a, "none").create(meta(SID))
        await handle.append([Event("turn/start", 0, 1, {"turn": 1})])
        await handle.close()

    run(main_)
    real = SessionPaths.of(a, None, SID, "none")
    linked = SessionPaths.of(str(tmp_path / "b"), None, SID, "none")
    os.makedirs(os.path.dirname(linked.session_dir))
    os.symlink(real.session_dir, linked.session_dir)
    before = Path(real.log).read_bytes()
    code, _, err = cli(capsys, "repair", linked.session_dir)
    assert code == EXIT_USAGE
    one_line(err, "symbolic link")
    assert Path(real.log).read_bytes() == before


# --------------------------------------------------------------------- found scenarios


def _old_save(text: str, path: str) -> None:
    """What ``save`` did before: makedirs + open(path, "x"), both following links."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "x", encoding="utf-8") as handle:
        handle.write(text)


def test_a_linked_found_directory_sends_findings_elsewhere_no_more(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    found = tmp_path / "scenarios" / "found"
    found.parent.mkdir()
    found.symlink_to(elsewhere)
    _old_save("{}", str(found / "old.json"))
    assert (elsewhere / "old.json").exists()  # the probe escapes through the old code
    with pytest.raises(InputError, match="symbolic link"):
        save(load(PASSING), str(found / "new.json"))
    assert sorted(os.listdir(elsewhere)) == ["old.json"]


def test_a_linked_scenario_file_is_not_written_through(tmp_path: Path) -> None:
    target = tmp_path / "target.txt"
    target.write_text("keep\n")
    (tmp_path / "found").mkdir()
    link = tmp_path / "found" / "x.json"
    link.symlink_to(target)
    for overwrite in (False, True):
        with pytest.raises(InputError, match="symbolic link"):
            save(load(PASSING), str(link), overwrite=overwrite)
    assert target.read_text() == "keep\n" and link.is_symlink()


@pytest.mark.parametrize("command", ["fuzz", "explore"])
def test_fuzz_and_explore_refuse_a_linked_found_dir_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    os.makedirs("scenarios")
    os.symlink(tmp_path / "elsewhere", "scenarios/found")
    extra = ["--budget", "1"] if command == "fuzz" else [PASSING]
    code, _, err = cli(capsys, command, *extra)
    assert code == EXIT_USAGE
    one_line(err, "scenarios/found", "symbolic link")
    assert os.listdir(tmp_path / "elsewhere") == []


# ------------------------------------------------------------------------- reports


def test_report_outputs_are_not_written_through_links(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "reports").symlink_to(elsewhere)
    code, _, err = cli(capsys, "report", "--out", str(tmp_path / "reports"))
    assert code == EXIT_USAGE
    one_line(err, "symbolic link")
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.html"
    victim.write_text("keep\n")
    (out / "coverage.html").symlink_to(victim)
    with pytest.raises(InputError, match="symbolic link"):
        write_coverage(aggregate([]), str(out))
    with pytest.raises(InputError, match="symbolic link"):
        write({"meta": {}}, str(out / "coverage.html"))
    assert victim.read_text() == "keep\n"


def test_demo_refuses_a_linked_root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "root").symlink_to(tmp_path / "elsewhere")
    code, _, err = cli(capsys, "demo", "--root", str(tmp_path / "root"))
    assert code == EXIT_USAGE
    one_line(err, "symbolic link")
    assert os.listdir(tmp_path / "elsewhere") == []


def test_output_helpers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_new("a/b/new.txt", "x")
    with pytest.raises(FileExistsError):
        write_new("a/b/new.txt", "y")
    write_replacing("a/b/new.txt", "z")
    assert Path("a/b/new.txt").read_text() == "z" and sorted(os.listdir("a/b")) == ["new.txt"]
    os.symlink(tmp_path / "a", "l")
    with pytest.raises(InputError, match="l: refusing"):
        check_output_dir("l/b")  # a relative path: every component is checked
    Path("f").write_text("")
    with pytest.raises(InputError, match="not a directory"):
        check_output_dir("f")
    check_output_dir(str(tmp_path / "l" / "b"))  # absolute: the user's path above the last component
    with pytest.raises(InputError):
        check_output_dir(str(tmp_path / "l"))


@pytest.mark.parametrize("planted", ["symlink", "fifo"])
def test_trace_out_swapped_during_the_replay_is_replaced_not_followed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, planted: str
) -> None:
    """``--trace-out`` is checked before the replay, but was opened with a plain ``open`` after
    it: a link planted at the name meanwhile was written through, and a FIFO blocked the
    command forever.  The trace is now written by renaming a temp file over the name."""
    from dsh_sim import api

    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    trace = tmp_path / "trace.jsonl"
    real_replay = api.replay

    def replay_then_plant(*args: object, **kwargs: object) -> object:
        result = real_replay(*args, **kwargs)  # type: ignore[arg-type]
        if not os.path.lexists(trace):
            if planted == "symlink":
                trace.symlink_to(victim)
            else:
                os.mkfifo(trace)
        return result

    monkeypatch.setattr(api, "replay", replay_then_plant)
    code, _, err = cli(capsys, "replay", str(PASSING), "--trace-out", str(trace))
    assert victim.read_text() == "keep\n"
    if planted == "symlink":  # refused in one line, the link's target untouched
        assert code == EXIT_USAGE, err
        one_line(err, str(trace))
    else:  # the FIFO is replaced by the trace
        assert code == 0, err
        assert trace.is_file() and trace.read_text().startswith("[")


def test_run_outside_a_clone_refuses_before_it_replays_or_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held-out probe: ``run --scenarios FILE`` in a directory without ``scenarios/starter``
    replayed, explored and wrote ``reports/results/`` before the mutant self-test found no corpus
    and exited 2.  The corpus it needs is now checked with the other inputs, first."""
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, "run", "--budget", "0", "--scenarios", os.path.abspath(PASSING))
    assert code == EXIT_USAGE
    one_line(err, "scenarios/starter")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("workspace", ["/", "/etc/dsh-probe-never", "{root}", "{tmp}"])
def test_demo_refuses_an_unsafe_workspace_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, workspace: str
) -> None:
    """Held-out probe: ``demo --workspace /`` wrote ``/notes.txt`` and ``--workspace /etc/x``
    created ``/etc/x/notes.txt`` (the file tools write there unconfined); a workspace holding the
    persistence root let the confined shell command rewrite the session's own log.  The
    sandbox's own workspace rule now applies, and the root must lie outside the workspace."""
    root = tmp_path / "root"
    target = workspace.format(root=root, tmp=tmp_path)
    monkeypatch.chdir(tmp_path)
    before = set(os.listdir("/"))
    code, _, err = cli(capsys, "demo", "--root", str(root), "--workspace", target)
    assert code == EXIT_USAGE
    one_line(err, "--workspace")
    assert set(os.listdir("/")) == before and not os.path.exists("/etc/dsh-probe-never")
    assert not root.exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--root", "/dev/null/x"],  # lstat raised NotADirectoryError: a traceback
        ["dsh", "generate", "/etc/passwd"],  # os.listdir of a file: a traceback
        ["fuzz", "--budget", "0", "--results", "/sys/dsh-probe.json"],  # os.access said yes to root; the write failed after the run
        ["replay", "--update-digest", "--check-determinism", str(PASSING)],  # --update-digest silently ignored
        ["mutants", "--report-only"],  # ignored without --tool: the whole kill matrix ran
        ["mutants", "--list", "--tool"],
    ],
)
def test_held_out_flag_probes_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, *argv)
    assert code == EXIT_USAGE, err
    one_line(err)
    assert list(tmp_path.iterdir()) == []


def test_a_file_name_with_a_line_break_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Held-out probe: the name was printed raw, so the refusal took two lines (and a name with
    ``\\r`` or a terminal escape could forge a line of its own)."""
    for name in ("a\nb.json", "x\rdsh-sim: fake.json", "\x1b[2Jc.json"):
        path = tmp_path / name
        path.write_text("{}")
        code, _, err = cli(capsys, "replay", str(path))
        assert code == EXIT_USAGE
        one_line(err)
        assert "\r" not in err and "\x1b" not in err
