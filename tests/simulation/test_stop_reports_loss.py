"""A graceful stop that met a fault may leave events unwritten, but never silently.

``eventually_durable`` used to step aside whenever a fault fired during the stop: a close that
swallowed its failed drain (teardown "must not fail") returned success with the buffered tail
gone, and every method passed it (a slip written apart from the harness, round 4).  Now a stop
that met a fault and returned success is held to the whole session on the medium; a stop that
raised has reported the loss (spec §10.2, §10.6).
"""

from __future__ import annotations

import os

import pytest

from dsh_sim.drivers.fuzz import fuzz
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load
from tests.support.paths import ROOT

DRAIN = os.path.join(ROOT, "scenarios", "regressions", "stop-reports-failed-drain.json")
SWALLOWED = Edit(
    "runtime.persistence.store",
    "SessionStore.release",
    "        try:\n            await self.flush(session, context.EXPLICIT_FLUSH)\n        finally:\n",
    "        try:\n            await self.flush(session, context.EXPLICIT_FLUSH)\n        except Exception:\n            pass\n        finally:\n",
)


def test_a_failed_drain_is_raised_and_judged():
    result, sim = run_scenario(load(DRAIN))
    assert result.violations == () and result.not_applicable is None
    (life,) = sim.lifetimes
    assert isinstance(life.exit_error, OSError)  # the stop said that it failed
    assert result.stats["checked"]["eventually_durable"] == 1  # and the judgement ran, not skipped


def test_a_stop_that_swallows_its_failed_drain_is_caught():
    with capture_runtime_logs(), applied([SWALLOWED]):
        result, _ = run_scenario(load(DRAIN))
    assert [v.invariant for v in result.violations] == ["eventually_durable"], result.violations
    assert "returned success" in result.violations[0].message


@pytest.mark.slow
def test_the_storage_fuzz_finds_it(tmp_path):
    with capture_runtime_logs(), applied([SWALLOWED]):
        run = fuzz("storage", budget=1e9, examples=100, seed=1, out_dir=str(tmp_path), minimize_budget=0.0, shrink_budget=2.0)
    assert run.found is not None and run.found.invariant == "eventually_durable", run.found
