"""Every committed scenario (scenarios/starter, scenarios/regressions) is a regression test:
outcome, fired faults and digest.  Untracked findings under scenarios/found are replayed with
``dsh-sim replay scenarios/found``, not swept into the suite."""

from __future__ import annotations

import os

import pytest

from dsh_sim.drivers.replay import judge, run_scenario
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.scenario.files import corpus, load
from tests.support.paths import ROOT

ROOT = os.path.join(ROOT, "scenarios")
FILES, SKIPPED = corpus(ROOT)  # the committed corpus; untracked findings (scenarios/found) are not swept in


def test_the_corpus_is_not_empty():
    assert len(FILES) >= 40


@pytest.mark.slow
@pytest.mark.parametrize("path", FILES, ids=[os.path.relpath(p, ROOT) for p in FILES])
def test_scenario_holds(path):
    scenario = load(path)
    with capture_runtime_logs():
        result, _ = run_scenario(scenario)
    problems = judge(scenario, result)
    assert not problems, "\n".join(problems)
