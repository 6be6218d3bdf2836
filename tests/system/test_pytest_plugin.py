"""The pytest plugin (``dsh_sim.pytest_plugin``, a ``pytest11`` entry point): a project's scenario
folder replayed as test items with one line of configuration, the invariant named on failure."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.support.paths import STARTER

pytest_plugins = ["pytester"]

PASSING = ("torn-none-mid-line", "boundary-2-3-pay")
UNSAFE = "no-checkpoint-policy-unsafe"  # expects a verdict_soundness violation (a self-test)


def _project(pytester: pytest.Pytester, ini: str) -> Path:
    folder = pytester.path / "scenarios" / "regressions"
    folder.mkdir(parents=True)
    for name in PASSING:
        shutil.copy(os.path.join(STARTER, name + ".json"), folder)
    pytester.makefile(".toml", pyproject=ini)
    tests = pytester.mkdir("tests")
    (tests / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    return folder


def test_one_line_of_configuration_makes_each_scenario_a_test(pytester: pytest.Pytester) -> None:
    _project(pytester, '[tool.pytest.ini_options]\ntestpaths = ["tests"]\ndsh_sim_scenarios = ["scenarios/regressions"]\n')
    result = pytester.runpytest_subprocess("-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        ["*boundary-2-3-pay.json::boundary-2-3-pay PASSED*", "*torn-none-mid-line.json::torn-none-mid-line PASSED*"]
    )


def test_a_violated_invariant_is_named(pytester: pytest.Pytester) -> None:
    folder = _project(pytester, '[tool.pytest.ini_options]\ndsh_sim_scenarios = ["scenarios/regressions"]\n')
    with open(os.path.join(STARTER, UNSAFE + ".json"), encoding="utf-8") as handle:
        doc = json.load(handle)
    doc["expect"] = {"outcome": "pass"}  # the runtime without the checkpoint policy is unsafe: it must fail
    (folder / "unsafe.json").write_text(json.dumps(doc))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*scenario no-checkpoint-policy-unsafe (*unsafe.json): invariants verdict_soundness, world_agreement violated",
            "*verdict_soundness [[]call c2]: repair said TOOL_NOT_STARTED but the side effect happened*",
        ]
    )


def test_a_moved_digest_and_a_bad_file_fail_in_one_line_each(pytester: pytest.Pytester) -> None:
    folder = _project(pytester, '[tool.pytest.ini_options]\ndsh_sim_scenarios = ["scenarios/regressions"]\n')
    path = folder / (PASSING[0] + ".json")
    doc = json.loads(path.read_text())
    doc["trace_digest"] = "0" * 64
    path.write_text(json.dumps(doc))
    (folder / "broken.json").write_text('{"format": "dsh-sim-scenario"')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "not a scenario: *broken.json: not valid JSON*",
            "*scenario torn-none-mid-line*: judgement failed",
            "*trace digest * differs from the recorded 0000*",
        ]
    )


@pytest.mark.slow
def test_explicit_paths_and_the_command_line_option(pytester: pytest.Pytester) -> None:
    folder = _project(pytester, "[tool.pytest.ini_options]\n")
    assert pytester.runpytest_subprocess("-p", "no:cacheprovider", "tests").ret == 0
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--dsh-sim-scenarios", str(folder), "-q")
    result.assert_outcomes(passed=3)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "tests")  # no folder configured: scenarios are not tests
    result.assert_outcomes(passed=1)
