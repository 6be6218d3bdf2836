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


@pytest.mark.slow
def test_durability_machine_holds_on_the_correct_runtime():
    run_state_machine_as_test(DurabilityMachine, settings=settings())


@pytest.mark.slow
def test_storage_machine_holds_on_the_correct_runtime():
    run_state_machine_as_test(StorageMachine, settings=settings())


@pytest.fixture(scope="module")
def no_policy_run(tmp_path_factory):
    """One fuzz run against a runtime without the checkpoint policy (shared by the tests below).
    Seed 1: its first find is the unsafe TOOL_NOT_STARTED of a payment (at seed 3 the draw of
    this stop finds a read's TOOL_NOT_STARTED first, a world_agreement violation)."""
    return fuzz("durability", budget=90, seed=1, config=SimConfig(checkpoint_policy=False), out_dir=str(tmp_path_factory.mktemp("found")))


@pytest.mark.slow
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


def _machine_runs(record_trace: bool) -> list[tuple]:
    """Eight seeded examples of the durability machine: per example its steps, the checks it
    judged, the named points reached and the virtual time at the end."""
    from hypothesis import Phase

    from dsh_sim.drivers import profiles
    from dsh_sim.drivers.constants import fixed_constants
    from dsh_sim.scenario.codec import describe_step

    runs: list[tuple] = []

    def teardown(self) -> None:
        DurabilityMachine.teardown(self)
        if self.sim is not None:
            runs.append(
                (
                    [describe_step(s) for s in self.steps],
                    sorted(self.checker.checked.items()),
                    sorted(self.sim.point_hits.items()),
                    self.sim.now(),
                )
            )

    namespace = {"teardown": teardown, "last": None, "record_trace": record_trace, "_hypothesis_internal_use_seed": 5}
    machine = type("TracedOrNot", (DurabilityMachine,), namespace)
    with fixed_constants():
        run_state_machine_as_test(machine, settings=settings(profiles.fuzz_settings(), max_examples=8, phases=(Phase.generate,)))
    return runs


@pytest.mark.slow
def test_the_machines_record_no_trace_and_run_the_same_without_it():
    """The machines skip the trace digest (nobody reads it; a found scenario's digest comes from
    its replay): a run with it and one without are the same examples to the same outcomes."""
    assert DurabilityMachine.record_trace is False and StorageMachine.record_trace is False
    with_trace = _machine_runs(record_trace=True)
    assert len(with_trace) >= 8
    assert _machine_runs(record_trace=False) == with_trace


@pytest.mark.slow
def test_the_comparison_sees_a_run_that_changes_without_its_trace(monkeypatch):
    """The comparison above fails if a simulation behaved differently without its trace (here:
    one whose clock starts later when the trace is off)."""
    from dsh_sim.drivers.machines import durability
    from dsh_sim.engine.machine import Simulation

    def simulation(seed, config, *, trace):
        sim = Simulation(seed, config, trace=trace)
        if not trace:
            sim.clock.jump(1.0)
        return sim

    monkeypatch.setattr(durability, "Simulation", simulation)
    assert _machine_runs(record_trace=False) != _machine_runs(record_trace=True)
