"""The state machines: the correct runtime survives them; a broken one is caught fast."""

from __future__ import annotations

import json
import subprocess
import sys

import attrs
import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from dsh_sim.drivers.fuzz import fuzz
from dsh_sim.drivers.machines.durability import DurabilityMachine
from dsh_sim.drivers.machines.storage import StorageMachine
from dsh_sim.drivers.minimize import _candidates, _fails
from dsh_sim.engine.config import SimConfig
from dsh_sim.scenario.files import load


def test_durability_machine_holds_on_the_correct_runtime():
    run_state_machine_as_test(DurabilityMachine, settings=settings())


def test_storage_machine_holds_on_the_correct_runtime():
    run_state_machine_as_test(StorageMachine, settings=settings())


@pytest.fixture(scope="module")
def no_policy_run(tmp_path_factory):
    """One fuzz run against a runtime without the checkpoint policy (shared by the tests below)."""
    return fuzz("durability", budget=90, seed=3, config=SimConfig(checkpoint_policy=False), out_dir=str(tmp_path_factory.mktemp("found")))


def test_without_the_checkpoint_policy_the_fuzzer_finds_an_unsafe_not_started(no_policy_run):
    run = no_policy_run
    found = run.found
    assert found is not None, f"nothing found in {run.examples} examples"
    assert found.invariant == "verdict_soundness"
    assert "TOOL_NOT_STARTED but the side effect happened" in found.message
    assert found.time_to_find < 60
    assert found.steps_after <= 6  # a few steps, 1-minimal
    # a new process replays the saved scenario: same violation, same digest
    done = subprocess.run([sys.executable, "-m", "dsh_sim", "replay", found.path, "--json"], capture_output=True, text=True, check=False)
    row = json.loads(done.stdout)[0]
    assert done.returncode == 0, done.stdout + done.stderr
    assert row["ok"] and row["invariant"] == "verdict_soundness"
    assert row["digest"] == found.digest


def test_a_saved_failure_is_one_minimal(no_policy_run):
    """Removing any single step, response, call or approval of the saved scenario loses the failure."""
    assert no_policy_run.found is not None
    scenario = load(no_policy_run.found.path)
    for steps in _candidates(scenario.steps):
        assert not _fails(attrs.evolve(scenario, steps=steps), "verdict_soundness")


@pytest.mark.soak
def test_soak_durability_machine():
    run_state_machine_as_test(DurabilityMachine, settings=settings.get_profile("soak"))
