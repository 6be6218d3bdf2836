"""The write path's failure paths: the failure-path sweep and the checks it relies on, each shown
failing on the bug it guards against (a runtime function edited for the test, see
:mod:`dsh_sim.mutants.patch`), and holding on the runtime as shipped."""

from __future__ import annotations

import os

import attrs
import pytest

from dsh_sim.drivers import faultsweep
from dsh_sim.drivers.explore import explore
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.engine.faults import FaultRule
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load
from tests.support.paths import ROOT

REGRESSIONS = os.path.join(ROOT, "scenarios", "regressions")
STARTER = os.path.join(ROOT, "scenarios", "starter")
WRITE_PATH = os.path.join(REGRESSIONS, "write-path-torn-tail-then-append.json")
PUBLICATION = os.path.join(REGRESSIONS, "write-path-publication-then-appends.json")
DURABLE = "runtime.persistence.durable"


def _holds_but_not_with(regression: str, edit: Edit, invariant: str, text: str) -> None:
    """The regression holds on the runtime as shipped, and ``edit`` (the bug it guards against)
    makes it violate ``invariant`` with ``text`` in the message."""
    scenario = load(os.path.join(REGRESSIONS, f"{regression}.json"))
    assert not run_scenario(scenario)[0].violations
    with applied([edit]):
        result, _ = run_scenario(scenario)
    assert any(v.invariant == invariant and text in v.message for v in result.violations)


def _invariants(result: faultsweep.SweepResult) -> set[str]:
    return {found.violation.invariant for found in result.violations}


@pytest.mark.slow
def test_the_shipped_write_path_survives_every_failure():
    result = faultsweep.sweep(load(WRITE_PATH))
    assert result.runs > len(result.positions) > 25  # every sequence of the scenario, errors and cancellations
    points = {p.point for p in result.positions}
    assert {"fs.mkdir", "fs.write", "fs.fsync", "fs.fsync_dir", "fs.link", "fs.ftruncate"} <= points
    sequences = {p.sequence for p in result.positions}
    assert {"first publication", "torn-tail rewrite", None} <= sequences  # None: make-durable at open
    assert result.violations == ()


def test_positions_tell_the_rollback_from_the_heal():
    """Same point, file and barrier, different code: both are swept."""
    scenario = load(os.path.join(REGRESSIONS, "append-rollback-fails-then-retry-heals.json"))
    callers = {p.caller for p in faultsweep.positions(scenario) if p.point == "fs.ftruncate"}
    assert {"runtime.ports.fs.write_fsync_in_steps", "runtime.persistence.durable.open_for_append"} <= callers


@pytest.mark.slow
@pytest.mark.parametrize(
    "edit",
    [
        Edit(DURABLE, "write_new_synced", "        await close_after_error(fs, fd)\n", "        await close_after_error(fs, None)\n"),
        Edit(DURABLE, "truncate_durable", "        await close_after_error(fs, fd)\n", "        pass\n"),
        Edit(DURABLE, "rewrite_synced", "        await close_after_error(fs, fd)\n", "        await close_after_error(None, fd)\n"),
        Edit(DURABLE, "close_after_error", "CancelScope(shield=True)", "CancelScope(shield=False)"),
        Edit(DURABLE, "close_shielded", "CancelScope(shield=True)", "CancelScope(shield=False)"),
    ],
    ids=["temp write fails", "torn-tail truncation fails", "make-durable at open fails", "cleanup close unshielded", "close unshielded"],
)
def test_the_sweep_finds_a_descriptor_a_failure_path_leaks(edit):
    scenario = load(PUBLICATION if edit.qualname == "write_new_synced" else WRITE_PATH)
    with applied([edit]):
        result = faultsweep.sweep(scenario, stop_on_violation=True)
    assert _invariants(result) == {"no_residue"}
    assert "descriptors still open" in result.violations[0].violation.message
    replayed, _ = run_scenario(result.violations[0].repro)  # the repro replays it
    assert not replayed.violations
    with applied([edit]):
        assert "no_residue" in {v.invariant for v in run_scenario(result.violations[0].repro)[0].violations}


@pytest.mark.parametrize(
    "edit",
    [
        Edit(DURABLE, "write_new_synced", "            await unlink_quietly(fs, path)\n", "            await unlink_quietly(fs, None)\n"),
        Edit(DURABLE, "publish_new_file", "            await unlink_quietly(fs, temp)\n        raise", "            pass\n        raise"),
    ],
    ids=["failed temp write keeps its temp", "failed link keeps the temp"],
)
def test_the_sweep_finds_a_temp_name_a_failure_path_leaves(edit):
    with applied([edit]):
        result = faultsweep.sweep(load(PUBLICATION), stop_on_violation=True)
    assert _invariants(result) == {"no_residue"}
    assert "in the session directory" in result.violations[0].violation.message


def test_stray_names_are_judged_after_a_fault_unless_it_struck_a_removal():
    """A failed link must still remove the temp file; a failed removal may leave it (by design)."""
    scenario = load(PUBLICATION)
    keeps_temp = Edit(
        DURABLE, "publish_new_file", "            await unlink_quietly(fs, temp)\n        raise", "            pass\n        raise"
    )
    link_fails = attrs.evolve(scenario, fault_plan=(FaultRule("fs.link", "error", lifetime=1),), trace_digest=None)
    unlink_fails = attrs.evolve(scenario, fault_plan=(FaultRule("fs.unlink", "error", lifetime=1),), trace_digest=None)
    assert not run_scenario(link_fails)[0].violations
    assert not run_scenario(unlink_fails)[0].violations
    with applied([keeps_temp]):
        assert "no_residue" in {v.invariant for v in run_scenario(link_fails)[0].violations}


def test_a_cancelled_open_releases_the_session():
    """Found by the sweep: WriteHandle.close stopped at its first checkpoint by the cancellation
    of the open it cleans up after, so the lock descriptor stayed open."""
    scenario = load(os.path.join(REGRESSIONS, "write-path-open-cancelled-during-repair-append.json"))
    assert not run_scenario(scenario)[0].violations
    unshielded = Edit("runtime.persistence.handles", "WriteHandle.close", "CancelScope(shield=True)", "CancelScope(shield=False)")
    with applied([unshielded]):
        result, _ = run_scenario(scenario)
    assert "no_residue" in {v.invariant for v in result.violations}
    assert "session.lock" in next(v for v in result.violations if v.invariant == "no_residue").message


def test_a_boot_failed_by_an_injected_fault_is_no_recovery_failure():
    """An I/O error injected into the open passes through (spec §3.6): not a refused log."""
    scenario = load(WRITE_PATH)
    eio_at_open = attrs.evolve(scenario, fault_plan=(FaultRule("fs.fsync", "error", hit=1, lifetime=2),), trace_digest=None)
    result, sim = run_scenario(eio_at_open)
    assert isinstance(sim.lifetimes[1].boot_error, OSError)
    assert not result.violations


@pytest.mark.parametrize(
    ("edit", "scenario"),
    [
        (Edit("runtime.agent.resume", "repair_and_seed", "    torn = handle.torn_tail\n", "    torn = None\n"), "torn-zstd-checksum"),
        (Edit("runtime.session.repair", "verdicts", "if code in (", "if code not in ("), "boundary-2-3-pay"),
    ],
    ids=["torn tail not reported", "verdicts of other codes"],
)
def test_the_recovery_report_agrees_with_the_spec_reader(edit, scenario):
    scenario = load(os.path.join(STARTER, f"{scenario}.json"))
    assert not run_scenario(scenario)[0].violations
    with applied([edit]):
        result, _ = run_scenario(scenario)
    assert any(v.invariant == "reference_model" and "recovery report" in v.message for v in result.violations)


def test_an_acknowledgement_names_its_batch():
    scenario = load(PUBLICATION)
    unnamed = Edit(
        "runtime.persistence.handles", "WriteHandle._acknowledged", "            first_seq=batch[0].seq if batch else self._next_seq,\n", ""
    )
    with applied([unnamed]):
        result, _ = run_scenario(scenario)
    assert any(v.invariant == "durable_when_acknowledged" and "first_seq=None" in v.message for v in result.violations)


@pytest.mark.parametrize(
    "edit",
    [
        Edit(DURABLE, "ensure_dir_durable", "        if not await exists(fs, ancestor):", "        if False:"),
        Edit(DURABLE, "ensure_dir_durable", "        await fs.fsync_dir(posixpath.dirname(directory))\n", "        pass\n"),
    ],
    ids=["missing ancestors not created", "new directories not fsynced"],
)
def test_a_fresh_machine_gets_its_whole_directory_chain_durably(edit):
    scenario = load(os.path.join(REGRESSIONS, "write-path-fresh-machine-root-created-then-power-loss.json"))
    assert not run_scenario(scenario)[0].violations
    with applied([edit]):
        result, _ = run_scenario(scenario)
    assert result.violations


@pytest.mark.slow
def test_an_ancestor_a_killed_run_created_is_fsynced_by_the_next_run():
    """Found by the failure-path work: a run killed between creating an ancestor of the root
    and fsyncing its parent left a name only in the page cache; the next run found it, left it
    alone (spec §3.6 fsyncs only the root's parent) and acknowledged batches a power cut would
    take away.  Explore of the fresh-machine scenario crashes at every point of that window."""
    scenario = load(os.path.join(REGRESSIONS, "write-path-fresh-machine-root-created-then-power-loss.json"))
    assert not explore(scenario).violations
    only_when_created = Edit(
        DURABLE,
        "ensure_dir_durable",
        "        try:\n            await fs.fsync_dir(posixpath.dirname(ancestor))\n",
        "        try:\n            if created:\n                await fs.fsync_dir(posixpath.dirname(ancestor))\n",
    )
    with applied([only_when_created]):
        result = explore(scenario)
    assert "durable_when_acknowledged" in {v.invariant for _, v in result.violations}


@pytest.mark.parametrize(
    "edit",
    [
        Edit(
            "runtime.persistence.handles",
            "WriteHandle.close",
            "                self._closed = True\n",
            "                self._closed = None\n",
        ),
        Edit(
            "runtime.persistence.handles",
            "WriteHandle.append",
            'see the module\'s docstring)."""\n        self._check_open("append")',
            'see the module\'s docstring)."""\n        self._check_open(None)',
        ),
        Edit(
            "runtime.persistence.handles",
            "WriteHandle.flush",
            '(header only)."""\n        self._check_open("flush")',
            '(header only)."""\n        self._check_open("FLUSH")',
        ),
    ],
    ids=["close forgotten", "append refusal names no op", "flush refusal names another op"],
)
def test_a_closed_handle_refuses_with_the_spec_error(edit):
    scenario = load(PUBLICATION)
    result, _ = run_scenario(scenario)
    assert result.stats["checked"]["closed_handle_refuses"] == 1 and not result.violations
    with applied([edit]):
        result, _ = run_scenario(scenario)
    assert {v.invariant for v in result.violations} == {"closed_handle_refuses"}


@pytest.mark.parametrize(
    "edit",
    [
        Edit("runtime.persistence.handles", "WriteHandle.flush", '                await self._backend._materialize(self, b"")\n', ""),
        Edit("runtime.persistence.handles", "WriteHandle.__init__", "        self._observed = 0\n", "        self._observed = 1\n"),
    ],
    ids=["empty flush publishes nothing", "a fresh handle has seen an event"],
)
def test_an_empty_session_is_published_by_its_flush_and_reopened(edit):
    scenario = load(os.path.join(REGRESSIONS, "write-path-empty-session-flushed-then-power-loss.json"))
    assert not run_scenario(scenario)[0].violations
    with applied([edit]):
        result, _ = run_scenario(scenario)
    assert result.violations


def test_the_sweep_command_saves_each_violation_as_a_scenario(tmp_path, capsys):
    from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION
    from dsh_sim.cli.main import main

    found = str(tmp_path / "found")
    assert main(["sweep", PUBLICATION, "--found-dir", found]) == EXIT_OK
    leak = Edit(DURABLE, "write_new_synced", "        await close_after_error(fs, fd)\n", "        pass\n")
    with applied([leak]):
        assert main(["sweep", PUBLICATION, "--found-dir", found]) == EXIT_VIOLATION
        saved = os.listdir(found)
        assert saved and "VIOLATION no_residue" in capsys.readouterr().out
        assert run_scenario(load(os.path.join(found, saved[0])))[0].violations


def test_an_os_error_no_injected_fault_explains_is_a_bug():
    """The heal of a failed rollback truncates through a descriptor it does not hold (EBADF):
    every later flush fails with an OSError, and no injected fault has that errno."""
    scenario = load(os.path.join(REGRESSIONS, "append-rollback-fails-then-retry-heals.json"))
    assert not run_scenario(scenario)[0].violations  # its injected EIO faults pass through, explained
    bad_fd = Edit(
        DURABLE,
        "open_for_append",
        "            await fs.ftruncate(fd, expected_size)",
        "            await fs.ftruncate(None, expected_size)",
    )
    with applied([bad_fd]):
        result, _ = run_scenario(scenario)
    assert any(v.invariant == "errors_documented" and "errno 9" in v.message for v in result.violations)


def test_a_migration_cancelled_after_it_published_removes_its_stage():
    """Found by the sweep: the stage's final removal was not shielded, so a cancelled open left a
    second hard link to the freshly published log."""
    unshielded = Edit(
        "runtime.persistence.publication",
        "publish",
        "    with trio.CancelScope(shield=True):\n        # Not best effort",
        "    if True:\n        # Not best effort",
    )
    _holds_but_not_with("write-path-migration-cancelled-after-publication", unshielded, "no_residue", "session.migration.")


def test_a_flush_whose_own_write_failed_says_so():
    scenario = load(PUBLICATION)
    swallowed = Edit(
        "runtime.persistence.write_behind",
        "WriteBehind.flush",
        "await self._write(batch, background=False)",
        "await self._write(batch, background=True)",
    )
    with applied([swallowed]):
        result = faultsweep.sweep(scenario, stop_on_violation=True)
    assert result.violations and "its own write failed" in result.violations[0].violation.message


def test_a_stage_the_migration_cannot_remove_fails_the_open_with_its_own_error():
    """Found by sweeping the whole corpus: a best-effort removal of the stage after the
    publication left a second hard link, and the same open then refused its own log as unsafe."""
    best_effort = Edit(
        "runtime.persistence.publication",
        "publish",
        "        try:\n            await fs.unlink(stage)\n        except FileNotFoundError:\n            pass\n",
        "        await unlink_quietly(fs, stage)\n",
    )
    _holds_but_not_with("write-path-migration-stage-removal-fails", best_effort, "recovery_succeeds", "2 hard links")


PARALLEL_GROUP = os.path.join(REGRESSIONS, "tools-parallel-group-mixed-outcomes.json")
SETTLED_AS_SUCCESS = Edit(
    "runtime.persistence.write_behind", "_Barrier.settle", "        self._error = error\n", "        self._error = None\n"
)


@pytest.mark.slow
def test_the_sweep_fails_a_flush_that_other_flushes_wait_on():
    """A failed flush that settles its barrier as a success lets the parallel calls waiting on
    it run their bodies before their tool/call is durable.  Only a failure of that very barrier
    shows it, so every barrier is a position of its own."""
    scenario = load(PARALLEL_GROUP)
    assert faultsweep.sweep(scenario).violations == ()
    with applied([SETTLED_AS_SUCCESS]):
        result = faultsweep.sweep(scenario, stop_on_violation=True)
    assert result.violations and result.violations[0].violation.invariant == "checkpoint_before_effect"
    assert result.violations[0].position.sequence == "tools/execute"


def test_barriers_swept_once_per_lifetime_miss_it(monkeypatch):
    def once_per_lifetime(self):
        sequence = "barrier" if self.sequence in faultsweep._BARRIERS else self.sequence
        return (self.lifetime, self.point, self.path, sequence, self.caller)

    monkeypatch.setattr(faultsweep.Position, "key", once_per_lifetime)
    with applied([SETTLED_AS_SUCCESS]):
        assert faultsweep.sweep(load(PARALLEL_GROUP), stop_on_violation=True).violations == ()


UNSAFE = os.path.join(STARTER, "no-checkpoint-policy-unsafe.json")


@pytest.mark.slow
def test_a_scenario_that_expects_a_violation_is_swept_for_new_ones():
    """no-checkpoint-policy-unsafe breaks verdict_soundness and world_agreement on purpose: those
    violations (same message, same call) are not the sweep's findings; a new one of the same
    invariant is (a result that loses its error info, written apart from the harness)."""
    result = faultsweep.sweep(load(UNSAFE))
    assert result.runs > 30 and result.violations == () and result.baseline == ()
    error_dropped = Edit(
        "runtime.tools.scheduler", "StepTools._commit", '        if info is not None:\n            data["error"] = info\n', ""
    )
    with applied([error_dropped]):
        result = faultsweep.sweep(load(UNSAFE), stop_on_violation=True)
    assert result.violations and "carries error None" in result.violations[0].violation.message


def test_a_scenario_that_does_not_hold_is_reported_not_swept(tmp_path, capsys):
    """A runtime whose repair misses the first turn no longer shows the scenario's expected
    violation: comparing the faulted runs with that run would find nothing."""
    from dsh_sim.cli.main import main

    first_turn_missed = Edit(
        "runtime.session.repair", "_open_turn_start", "range(len(events) - 1, -1, -1)", "range(len(events) - 1, 0, -1)"
    )
    with applied([first_turn_missed]):
        result = faultsweep.sweep(load(UNSAFE))
        assert result.baseline and "expected a violation of verdict_soundness" in result.baseline[0]
        assert main(["sweep", UNSAFE, "--found-dir", str(tmp_path)]) == 1
    assert "NOT SWEPT: the scenario itself does not hold" in capsys.readouterr().out


def test_a_recorded_power_cut_met_by_the_final_stop_is_reported(tmp_path):
    """The final stop of a run flushes and may meet a crash rule too: a cut that does not fit
    there used to become a kill nobody reported (the scenario passed)."""
    import json

    document = {
        "format": "dsh-sim-scenario",
        "version": 1,
        "name": "unfit-at-the-final-stop",
        "machine": "storage",
        "seed": 7,
        "fault_plan": [
            {
                "point": "fs.fsync",
                "action": "crash",
                "hit": 1,
                "lifetime": 1,
                "crash": {"kind": "power", "state": "cut", "cut": {"files": [{"ino": 99, "keep_ops": 0}], "entries": []}},
            }
        ],
        "steps": [{"op": "boot", "args": {}}, {"op": "append", "args": {"count": 2}}],
        "expect": {"outcome": "pass"},
    }
    path = tmp_path / "unfit.json"
    path.write_text(json.dumps(document))
    result, _ = run_scenario(load(str(path)))
    assert result.not_applicable is not None and "the final stop cannot run" in result.not_applicable
    assert "ino 99 is not a file" in result.not_applicable
    assert explore(load(str(path))).not_applicable == result.not_applicable


@pytest.mark.slow
def test_a_recorded_power_cut_that_no_longer_fits_cannot_run_as_written():
    """The sweep's extra write error leaves a truncation where the scenario recorded a tear of
    a write: applying the cut would invent a state (it used to fail an assertion inside the
    runtime's cleanup); now the step reports that it cannot run, and the sweep counts it."""
    scenario = load(os.path.join(STARTER, "torn-none-before-newline.json"))
    position = next(p for p in faultsweep.positions(scenario) if p.point == "fs.write" and p.hit == 9)
    result, _ = run_scenario(faultsweep.variant(scenario, position, "error"))
    assert result.not_applicable is not None
    assert "is not a post-crash state of this disk" in result.not_applicable
    assert "a truncation, not a write to tear" in result.not_applicable
    swept = faultsweep.sweep(scenario)
    assert 0 < swept.not_applicable < swept.runs and swept.violations == ()
