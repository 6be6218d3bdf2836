"""Two application tasks flush at once and the first is cancelled while it holds the barrier.

A waiter on a barrier whose owner was cancelled must run the barrier itself: the owner's
cancellation is not the waiter's outcome (``WriteBehind.flush``).  Before the racing flush step
existed no scenario or machine rule interleaved two flushes with a cancellation, and a waiter
that took the cancelled barrier for a success (a checkpoint that is not durable) survived
mutation testing (``_Barrier.wait``, benchmarks/mutation-survivors.md).
"""

from __future__ import annotations

import json
import os

import pytest

from dsh_sim.drivers.fuzz import fuzz
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.errors import InputError
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load
from tests.support.paths import ROOT

RACE = os.path.join(ROOT, "scenarios", "regressions", "flush-waiter-outlives-cancelled-owner.json")
# the survivor mutmut left: a waiter takes a cancelled owner's barrier for a success
CANCELLED_IS_SUCCESS = Edit(
    "runtime.persistence.write_behind",
    "_Barrier.wait",
    "            raise self._error\n        return False\n",
    "            raise self._error\n        return True\n",
)


def test_the_waiter_runs_the_barrier_itself():
    result, _ = run_scenario(load(RACE))
    assert result.violations == () and result.not_applicable is None
    assert [f[2] for f in result.stats["faults"]] == ["delay"]


def test_a_waiter_that_takes_the_cancelled_barrier_for_a_success_is_caught():
    with capture_runtime_logs(), applied([CANCELLED_IS_SUCCESS]):
        result, _ = run_scenario(load(RACE))
    assert [v.invariant for v in result.violations][:1] == ["durable_when_acknowledged"], result.violations
    assert "a flush barrier returned" in result.violations[0].message


@pytest.mark.slow
def test_the_storage_fuzz_finds_it(tmp_path):
    with capture_runtime_logs(), applied([CANCELLED_IS_SUCCESS]):
        run = fuzz("storage", budget=1e9, examples=100, seed=1, out_dir=str(tmp_path), minimize_budget=0.0, shrink_budget=2.0)
    assert run.found is not None and run.found.invariant == "durable_when_acknowledged", run.found


@pytest.mark.parametrize("value", [-1, "soon", 1e9])
def test_a_bad_cancel_time_is_refused_naming_the_field(tmp_path, value):
    with open(RACE, encoding="utf-8") as f:
        document = json.load(f)
    document["steps"][7]["args"]["cancel_first_after"] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(InputError) as refused:
        load(str(path))
    assert "cancel_first_after" in str(refused.value) and "\n" not in str(refused.value)
