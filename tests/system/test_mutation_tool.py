"""The mutation-testing job's plumbing (the job itself is slow and not part of this suite).

Checked here: the mutmut configuration the job writes, verdict names, the kill-rate arithmetic
and the survivor report, and that the test command's selection still names real scenarios.
"""

from __future__ import annotations

import json
import tomllib
from collections import Counter
from pathlib import Path

import pytest

from dsh_sim.mutation import harness, tool, tool_report
from dsh_sim.mutation.tool import Mutant
from tests.support.paths import ROOT

ROOT = Path(ROOT)


def test_config_names_the_modules_and_the_harness():
    config = tomllib.loads(tool.config_text(tool.PRIORITY))["tool"]["mutmut"]
    assert config["only_mutate"] == list(tool.PRIORITY)
    assert config["source_paths"] == ["runtime"]
    assert config["pytest_add_cli_args_test_selection"] == ["tests_mutation"]
    assert set(config["also_copy"]) == {"dsh_sim", "scenarios", "tests_mutation"}


def test_module_lists_exist_and_do_not_overlap():
    for module in tool.PRIORITY + tool.REST:
        assert (ROOT / module).is_file(), module
    assert not set(tool.PRIORITY) & set(tool.REST)


def test_default_suite_does_not_collect_the_mutation_command():
    testpaths = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["testpaths"]
    assert "tests_mutation" not in testpaths


def test_explore_set_is_in_the_corpus():
    scenarios = harness.corpus(ROOT)
    assert len(harness.explore_set(scenarios)) == len(harness.EXPLORE_SET)
    assert all(s.passes_clean for s in scenarios)


@pytest.mark.parametrize(
    ("code", "status"), [(0, "survived"), (1, "killed"), (33, "no tests"), (-24, "timeout"), (None, "not checked"), (99, "suspicious")]
)
def test_status_of_exit_codes(code, status):
    assert tool.status_of(code) == status


def test_kill_rate_leaves_out_equivalents_and_counts_timeouts():
    counts = Counter({"total": 10, "killed": 6, "timeout": 1, "survived": 3, "equivalent": 2})
    assert tool_report.kill_rate(counts) == round(7 / 8, 4)
    assert tool_report.kill_rate(Counter()) is None


def _mutants() -> list[Mutant]:
    diff = "--- a\n+++ a\n@@ -2,3 +2,3 @@\n-    x = 1\n+    x = 2\n"
    return [
        Mutant("runtime.m.x_f__mutmut_1", "runtime/m.py", "f", "killed"),
        Mutant("runtime.m.x_f__mutmut_2", "runtime/m.py", "f", "survived", diff, 3),
        Mutant("runtime.m.x_f__mutmut_3", "runtime/m.py", "f", "survived", diff, 3),
        Mutant("runtime.m.x_f__mutmut_4", "runtime/m.py", "f", "no tests", diff, 3),
    ]


def test_report_joins_the_triage():
    triage = {
        "runtime.m.x_f__mutmut_2": {"class": "equivalent", "reason": "x is never read"},
        "runtime.m.x_f__mutmut_3": {"class": "gap", "reason": "needs a torn-tail scenario"},
    }
    doc = tool_report.document(_mutants(), triage, {"started": "now"})
    assert doc["totals"]["equivalent"] == 1 and doc["totals"]["gap"] == 1 and doc["totals"]["untriaged"] == 1
    assert doc["kill_rate"] == round(1 / 3, 4)
    text = tool_report.markdown(doc)
    assert "x is never read" in text and "`x_f__mutmut_4` — untriaged" in text and "+    x = 2" in text
    json.dumps(doc)


def test_unknown_triage_class_is_refused():
    with pytest.raises(ValueError, match="unknown class"):
        tool_report.document(_mutants(), {"runtime.m.x_f__mutmut_2": {"class": "maybe"}}, {})


def test_function_lines_use_mutmut_names():
    lines = tool._function_lines("def f():\n    pass\nclass C:\n    async def g(self):\n        pass\n")
    assert lines == {"x_f": 1, "xǁCǁg": 4}


def test_replay_check_notices_a_runtime_that_does_nothing():
    """Without a recorded reference: a pipeline that refuses every call breaks no safety rule,
    and the script-derived turn_progress oracle still notices."""
    from dsh_sim.mutants.patch import Edit, applied

    scenario = next(s for s in harness.corpus(ROOT) if s.name == "two-writers")
    harness.check_replay(scenario)
    deny_all = Edit(
        "runtime.tools.registry",
        "ToolRegistry._default_decision",
        "        if tool is not None and tool.requires_approval:",
        "        if tool is not None:",
    )
    with applied([deny_all]), pytest.raises(harness.MutantNoticed, match="turn_progress"):
        harness.check_replay(scenario)


def _workdir(tmp_path: Path) -> Path:
    meta = tmp_path / "mutants" / "runtime" / "m.py.meta"
    meta.parent.mkdir(parents=True)
    codes = {f"runtime.m.x_f__mutmut_{i}": 1 for i in range(1, 11)} | {f"runtime.n.x_g__mutmut_{i}": 0 for i in range(1, 31)}
    meta.write_text(json.dumps({"exit_code_by_key": codes, "durations_by_key": {}}))
    return tmp_path


def test_sample_is_stratified_and_stable(tmp_path):
    workdir = _workdir(tmp_path)
    first = tool.choose_sample(workdir, 8, seed=3)
    assert len(first) == 8
    assert sum(n.startswith("runtime.m.") for n in first) == 2
    assert tool.choose_sample(workdir, 8, seed=3) == first
    assert tool.sample_names(workdir) == set(first)


def test_changed_test_command_resets_verdicts(tmp_path):
    workdir = _workdir(tmp_path)
    (workdir / "harness.sha").write_text("something else\n")
    assert tool.reset_if_harness_changed(ROOT, workdir)
    assert set(tool.all_mutants(workdir).values()) == {None}
    assert not tool.reset_if_harness_changed(ROOT, workdir)


def test_a_changed_simulator_recollects_which_test_reaches_what_but_keeps_verdicts(tmp_path):
    """A new reader case reaches runtime functions the old stats never saw it reach: mutmut would
    re-test a survivor only against the old items (found: eight survivors of the rest modules
    that the new cases kill came back "survived" and "no tests")."""
    workdir = _workdir(tmp_path)
    stats = workdir / "mutants" / "mutmut-stats.json"
    stats.parent.mkdir(parents=True, exist_ok=True)
    before = tool.all_mutants(workdir)
    (workdir / "reach.sha").write_text("an older simulator\n")
    stats.write_text("{}")
    assert tool.refresh_reach_if_changed(ROOT, workdir)
    assert not stats.exists()
    assert tool.all_mutants(workdir) == before  # verdicts stand
    stats.write_text("{}")
    assert not tool.refresh_reach_if_changed(ROOT, workdir)  # same code: the stats stay
    assert stats.exists()
