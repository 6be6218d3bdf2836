"""The ``dsh-sim`` command line: bad input, replay judgement, inspect and repair on real logs.

Each refusal is one line on stderr that names the file, exit status 2, and the input file
left byte-identical.  Each replay check is shown failing on a scenario broken on purpose.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

import pytest

from dsh_sim.cli.commands.common import EXIT_USAGE, EXIT_VIOLATION
from dsh_sim.cli.main import main
from dsh_sim.engine.points import POINTS
from runtime.persistence.log_format import decode_log
from tests.runtime.test_repair import assistant, step_start, tool_call, turn_start
from tests.support.paths import ROOT
from tests.support.persistence import backend, log_path, meta, read_bytes, run

STARTER = os.path.join(ROOT, "scenarios", "starter")
PASSING = os.path.join(STARTER, "boundary-2-3-pay.json")


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_refusal(err: str, path: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"dsh-sim: {path}: "), lines[0]


def edited_scenario(tmp_path: Any, edit: Any, source: str = PASSING) -> str:
    with open(source, encoding="utf-8") as handle:
        obj = json.load(handle)
    edit(obj)
    path = str(tmp_path / os.path.basename(source))
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(obj, handle)
    return path


# -- bad scenario files -------------------------------------------------------------------


@pytest.mark.parametrize(
    "content, problem",
    [
        ("{not json", "not valid JSON"),
        ("[]", "$: not a JSON object"),
        ('{"format": "other", "version": 1}', '"format" must be "dsh-sim-scenario"'),
        ('{"format": "dsh-sim-scenario", "version": 9, "seed": 1, "steps": []}', "newer than this dsh-sim reads"),
        ('{"format": "dsh-sim-scenario", "version": 1, "seed": 1, "steps": [], "stpes": []}', "unknown key 'stpes'; did you mean 'steps'?"),
        ('{"format": "dsh-sim-scenario", "version": 1, "seed": -1, "steps": []}', "$.seed: must be in [0, "),
        ('{"format": "dsh-sim-scenario", "version": 1, "seed": true, "steps": []}', "$.seed: must be an integer, got a boolean"),
        ('{"format": "dsh-sim-scenario", "version": 1, "seed": 1, "steps": [1]}', "$.steps[0]: must be a JSON object"),
        (
            '{"format": "dsh-sim-scenario", "version": 1, "seed": 1, "steps": [{"op": "bot"}]}',
            "$.steps[0].op: unknown step op 'bot'; did you mean 'boot'?",
        ),
        (
            '{"format": "dsh-sim-scenario", "version": 1, "seed": 1, "steps": [{"op": "advance", "args": {"secs": 1}}]}',
            "$.steps[0].args: unknown key 'secs'; did you mean 'seconds'?",
        ),
        (
            '{"format": "dsh-sim-scenario", "version": 1, "seed": 1, "steps": [{"op": "advance", "args": {"seconds": 1e308}}]}',
            "$.steps[0].args.seconds: must be a finite number in [0, 86400]",
        ),
        (
            '{"format": "dsh-sim-scenario", "version": 1, "seed": 1, "steps": [{"op": "append", "args": {"count": 100000000}}]}',
            "$.steps[0].args.count: must be in [1, 10000]",
        ),
        (
            '{"format": "dsh-sim-scenario", "version": 1, "seed": 1, "steps": [], "fault_plan": [{"point": "nowhere", "action": "crash"}]}',
            "$.fault_plan[0].point: unknown named point 'nowhere'",
        ),
        (
            '{"format": "dsh-sim-scenario", "version": 1, "seed": 1, "steps": [], "fault_plan": [{"point": "world.respond", "action": "crash", "match": {"calid": "c1"}}]}',
            "$.fault_plan[0].match: 'world.respond' is never announced with 'calid'; did you mean 'call_id'?",
        ),
        (
            '{"format": "dsh-sim-scenario", "version": 1, "seed": 1, "steps": [{"op": "prompt", "args": {"responses": [{"tool_calls": [{"id": "c1", "name": "pya"}]}]}}]}',
            "$.steps[0].args.responses[0].tool_calls[0].name: unknown tool 'pya'; did you mean 'pay'?",
        ),
        (
            '{"format": "dsh-sim-scenario", "version": 1, "seed": 1, "steps": [], "expect": {"outcome": "violation", "invariant": "verdict_sound"}}',
            "$.expect.invariant: unknown invariant 'verdict_sound'; did you mean 'verdict_soundness'?",
        ),
        ('{"format": "dsh-sim-scenario", "version": 1, "seed": 1, "steps": [], "mutants": ["nope"]}', "$.mutants: unknown mutant 'nope'"),
        ('{"format": "dsh-sim-scenario", "version": 1, "seed": 1, "steps": [], "config": {"compression": "lzma"}}', "$.config.compression"),
        ('{"format": "dsh-sim-scenario", "version": 1, "seed": 1, "steps": [], "expect": {"outcome": "maybe"}}', "$.expect.outcome"),
        ('{"format": "dsh-sim-scenario", "version": 1, "seed": 1, "steps": [], "trace_digest": "abc"}', "$.trace_digest: must be"),
        ('{"format": "dsh-sim-scenario", "version": 1, "seed": 1, "steps": [' + "[" * 5000 + "]" * 5000 + "]}", "nested more than"),
    ],
)
def test_a_bad_scenario_file_is_one_line_naming_it(tmp_path: Any, capsys: pytest.CaptureFixture[str], content: str, problem: str) -> None:
    path = str(tmp_path / "bad.json")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(content)
    code, out, err = cli(capsys, "replay", path)
    assert code == EXIT_USAGE and out == ""
    one_line_refusal(err, path)
    assert problem in err
    assert read_bytes(path) == content.encode()


def test_a_missing_scenario_path_is_one_line(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "nope.json")
    code, _, err = cli(capsys, "replay", missing)
    assert code == EXIT_USAGE
    one_line_refusal(err, missing)


@pytest.mark.parametrize(
    ("argv", "prefix", "problem"),
    [
        (["nosuchcmd"], "dsh-sim: ", "invalid choice: 'nosuchcmd'"),
        ([], "dsh-sim: ", "required: COMMAND"),
        (["replay"], "dsh-sim replay: ", "required: FILE"),
        (["replay", "x.json", "--bogus"], "dsh-sim: ", "unrecognized arguments: --bogus"),
    ],
)
def test_a_usage_error_is_one_line_naming_the_command_once(
    capsys: pytest.CaptureFixture[str], argv: list[str], prefix: str, problem: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out, err = capsys.readouterr()
    assert exited.value.code == EXIT_USAGE and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix) and problem in lines[0], err
    assert "dsh-sim: dsh-sim" not in err and "usage:" not in err


# -- replay judgement: each check fails on a scenario broken on purpose --------------------


def test_replay_passes_the_unbroken_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "replay", PASSING)
    assert code == 0 and out.startswith("PASS") and "1/1 scenarios hold" in out


def test_replay_fails_when_the_trace_digest_differs(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path = edited_scenario(tmp_path, lambda obj: obj.update(trace_digest="0" * 64))
    code, out, _ = cli(capsys, "replay", path)
    assert code == EXIT_VIOLATION and out.startswith("FAIL")
    assert "differs from the recorded 0000000000000000" in out


def test_replay_fails_when_the_crash_point_is_no_longer_reached(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    def retarget(obj: dict[str, Any]) -> None:
        obj["trace_digest"] = None
        obj["steps"][1]["args"]["rule"]["hit"] = 5  # the call reaches the world once, not five times

    code, out, _ = cli(capsys, "replay", edited_scenario(tmp_path, retarget))
    assert code == EXIT_VIOLATION
    assert "matched 1 time(s) in lifetime 1, fewer than hit 5: the scenario no longer reaches its crash point" in out


def test_a_match_on_a_call_no_prompt_emits_is_refused_at_load(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    def retarget(obj: dict[str, Any]) -> None:
        obj["steps"][1]["args"]["rule"]["match"] = {"root_call_id": "c9"}  # no such call

    path = edited_scenario(tmp_path, retarget)
    code, out, err = cli(capsys, "replay", path)
    assert code == EXIT_USAGE and out == ""
    one_line_refusal(err, path)
    assert "$.steps[1].args.rule.match.root_call_id: no prompt emits a call 'c9'" in err


def test_replay_fails_when_an_expected_violation_does_not_happen(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    unsafe = os.path.join(STARTER, "no-checkpoint-policy-unsafe.json")
    assert cli(capsys, "replay", unsafe)[0] == 0  # reproduces its violation as recorded

    def with_policy(obj: dict[str, Any]) -> None:
        obj["trace_digest"] = None
        obj["config"]["checkpoint_policy"] = True

    code, out, _ = cli(capsys, "replay", edited_scenario(tmp_path, with_policy, unsafe))
    assert code == EXIT_VIOLATION
    assert "but every invariant held" in out


def test_replay_fails_when_a_passing_scenario_violates_an_invariant(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    def seeded_bug(obj: dict[str, Any]) -> None:
        obj["trace_digest"] = None
        obj["mutants"] = ["repair.seq_gap"]

    code, out, _ = cli(capsys, "replay", edited_scenario(tmp_path, seeded_bug))
    assert code == EXIT_VIOLATION
    assert "invariant violated:" in out


# -- inspect and repair on real session logs ------------------------------------------------


@pytest.fixture(params=("zstd", "none"))
def interrupted(request: pytest.FixtureRequest, tmp_path: Any) -> tuple[str, str]:
    """A persistence root holding one session killed after a recorded, unanswered tool call."""
    root, mode = str(tmp_path / "root"), request.param

    async def write() -> None:
        handle = await backend(root, mode).create(meta("s1"))
        await handle.append([turn_start(0), step_start(1), assistant(2, ["c1", "c2"]), tool_call(3, "c1")])
        await handle.close()

    run(write)
    return root, log_path(root, "s1", mode)


def test_inspect_reports_events_and_verdicts_without_writing(interrupted: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    root, log = interrupted
    before = read_bytes(log)
    code, out, _ = cli(capsys, "inspect", root, "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == 1 and doc["path"] == log and doc["migration"] is None
    assert [e["seq"] for e in doc["events"]] == [0, 1, 2, 3]
    assert doc["verdicts"] == {"c1": "TOOL_OUTCOME_UNKNOWN", "c2": "TOOL_NOT_STARTED"}
    assert [e["seq"] for e in doc["closers"]] == list(range(4, 4 + len(doc["closers"])))
    assert read_bytes(log) == before


def test_repair_appends_the_closers_and_never_rewrites_committed_bytes(
    interrupted: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, log = interrupted
    before = read_bytes(log)
    planned = json.loads(cli(capsys, "inspect", root, "--json")[1])
    code, out, _ = cli(capsys, "repair", os.path.dirname(log), "--json")
    assert code == 0
    result = json.loads(out)
    assert result["appended"] == planned["closers"] and result["verdicts"] == planned["verdicts"]
    after = read_bytes(log)
    assert after[: len(before)] == before and len(after) > len(before)
    compression = "zstd" if log.endswith(".zstd") else "none"
    assert [e.seq for e in decode_log(after, compression).events] == list(range(4 + len(planned["closers"])))
    code, out, _ = cli(capsys, "repair", os.path.dirname(log))
    assert code == 0 and out.strip().endswith("balanced, nothing to repair")
    assert read_bytes(log) == after


def test_inspect_refuses_a_garbage_log_in_one_line(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    log = str(tmp_path / "session.jsonl")
    with open(log, "wb") as handle:
        handle.write(b"this is not a session log\n")
    code, out, err = cli(capsys, "inspect", log)
    assert code == EXIT_USAGE and out == ""
    one_line_refusal(err, log)
    assert "refused" in err
    assert read_bytes(log) == b"this is not a session log\n"


def test_inspect_of_a_missing_path_is_one_line(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "absent")
    code, _, err = cli(capsys, "inspect", missing)
    assert code == EXIT_USAGE
    one_line_refusal(err, missing)


def test_demo_writes_a_session_and_refuses_to_overwrite_it(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    root = str(tmp_path / "demo")
    code, out, _ = cli(capsys, "demo", "--root", root)
    assert code == 0 and "turn 1: completed" in out
    code, out, _ = cli(capsys, "inspect", root, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["closers"] == [] and doc["events"][-1]["type"] == "turn/end"
    log = doc["path"]
    before = read_bytes(log)
    code, _, err = cli(capsys, "demo", "--root", root)
    assert code == EXIT_USAGE and "use a fresh --root or another --session" in err
    one_line_refusal(err, os.path.abspath(root))
    assert read_bytes(log) == before
    shutil.rmtree(root)


def test_points_lists_every_named_point(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "points", "--json")
    assert code == 0
    listed = json.loads(out)
    assert [p["name"] for p in listed] == list(POINTS)
    assert {"tools.call.appended", "world.deliver", "tools.result.appended", "persist.batch.durable"} <= set(POINTS)
    code, out, _ = cli(capsys, "points")
    assert code == 0 and all(name in out for name in POINTS)
