"""The failure-path sweep follows a run whose course its fault changed, through a restart or a
kill, on to the recovery after it — and judges that recovery for what it is."""

from __future__ import annotations

import attrs
import pytest

from dsh_sim.drivers import faultsweep
from dsh_sim.drivers.replay import Stopped, run_scenario
from dsh_sim.evidence.invariants import recovery
from dsh_sim.scenario.args import Step
from dsh_sim.scenario.files import load
from dsh_sim.scenario.steps import KILL, RESTART

TORN = "scenarios/starter/torn-zstd-checksum.json"  # the second boot truncates a torn frame and re-appends what it held
PAY = "scenarios/starter/boundary-1-2-batch_pay.json"  # its own crash comes during the first pay


def _torn_tail_fault(action: str) -> faultsweep.Scenario:
    """The torn-tail rewrite of the second boot fails where it truncates."""
    scenario = load(TORN)
    position = next(
        p for p in faultsweep.positions(scenario) if p.lifetime == 2 and p.point == "fs.ftruncate" and p.sequence == "torn-tail rewrite"
    )
    return faultsweep.variant(scenario, position, action)


@pytest.mark.parametrize("action", ["error", "cancel"])
def test_a_boot_the_fault_failed_is_followed_by_a_restart_and_its_recovery(action):
    faulted = _torn_tail_fault(action)
    alone, _ = run_scenario(faulted)
    assert alone.not_applicable is not None and "no live process with an agent" in alone.not_applicable
    assert alone.stats["lifetimes"] == 2  # without the bridge, the recovery after the failure never runs

    result, repro = faultsweep.run_bridged(faulted)
    assert result.not_applicable is None and result.violations == ()
    assert len(repro.steps) == len(faulted.steps) + 1 and repro.steps[6] == RESTART
    assert "bridged: boot before step 6" in repro.description
    assert result.stats["lifetimes"] == 3 and [r["lifetime"] for r in result.stats["recoveries"]] == [1, 3]
    again, _ = run_scenario(repro)  # the repro is a scenario of its own: it replays the same run
    assert again.digest == result.digest


def test_a_process_that_outlives_its_scenarios_crash_is_killed_before_the_next_boot():
    scenario = load(PAY)
    position = next(p for p in faultsweep.positions(scenario) if p.lifetime == 1 and p.point == "fs.write")
    faulted = faultsweep.variant(scenario, position, "error")
    alone, _ = run_scenario(faulted)
    assert alone.not_applicable is not None and "a process is already running" in alone.not_applicable
    result, repro = faultsweep.run_bridged(faulted)
    assert KILL in repro.steps and result.not_applicable is None and result.violations == ()
    assert any(c["kind"] == "kill" and c["point"] is None for c in result.stats["crashes"])


def test_bridges_are_bounded(monkeypatch):
    """A step that keeps finding no process gets at most MAX_BRIDGES restarts."""
    calls = []
    real = faultsweep.run_scenario

    def never_applicable(scenario):
        result, sim = real(scenario)
        calls.append(len(scenario.steps))
        return faultsweep.attrs.evolve(
            result, stopped=Stopped(0, Step("boot"), "why", Step("boot")), not_applicable="step 0 cannot run"
        ), sim

    monkeypatch.setattr(faultsweep, "run_scenario", never_applicable)
    result, repro = faultsweep.run_bridged(load(PAY))
    assert len(calls) == faultsweep.MAX_BRIDGES + 1 and result.not_applicable == "step 0 cannot run"
    assert len(repro.steps) == len(load(PAY).steps) + faultsweep.MAX_BRIDGES


def test_maximality_is_judged_against_the_log_the_boot_opened(monkeypatch):
    """After a boot truncated a torn tail and failed to re-append it, the next recovery holds
    fewer records than the crash image did — the truncated, never acknowledged ones — and that
    is no loss a recovery made: it is judged against the log it opened.  Judged against the
    stale crash image it would be a violation."""
    result, _ = faultsweep.run_bridged(_torn_tail_fault("cancel"))
    assert result.violations == () and result.stats["checked"]["recovery_maximal"] == 1  # the restart's recovery

    def against_the_crash_image(obs, life, crash, stored):  # the rule before: the last crash's image
        from dsh_sim.adapters.simfs.disk import Disk

        life.log_at_boot = Disk.from_image(crash.image).read_path(obs.sim.config.log_path)
        real(obs, life, crash, stored)

    real = recovery.check_recovery_maximal
    monkeypatch.setattr(recovery, "check_recovery_maximal", against_the_crash_image)
    stale, _ = faultsweep.run_bridged(_torn_tail_fault("cancel"))
    assert [v.invariant for v in stale.violations] == ["recovery_maximal"]
    assert "medium holds 19 complete, contiguous records" in stale.violations[0].message


def test_a_bridged_recovery_is_still_judged_for_records_it_drops():
    """A boot the fault failed before it touched the log (the lock file's open), then a restart:
    a reader that drops a torn frame's whole records is caught at the restart's recovery (a rule
    that judged maximality only at the first recovery after a crash let it pass)."""
    scenario = load(TORN)
    lock = next(p for p in faultsweep.positions(scenario) if p.lifetime == 2 and p.point == "fs.open")
    faulted = attrs.evolve(faultsweep.variant(scenario, lock, "error"), mutants=("read.drop_torn_recovered_records",))
    clean, repro = faultsweep.run_bridged(attrs.evolve(faulted, mutants=()))
    assert clean.violations == () and RESTART in repro.steps
    result, _ = faultsweep.run_bridged(faulted)
    assert "recovery_maximal" in {v.invariant for v in result.violations}


@pytest.mark.slow
def test_the_whole_sweep_of_a_scenario_goes_on_past_its_faults():
    result = faultsweep.sweep(load(TORN))
    assert result.violations == ()
    assert result.bridged > result.runs // 2 and result.not_applicable < result.runs // 5
    assert result.replays > result.runs
