"""Interleavings: I/O that takes virtual time, seeded perturbation, and the bugs only they show.

On an instant disk a background window write runs to its end before any host step can start,
so a barrier, an append or a failure never meets a write in flight.  ``io_latency`` /
``fsync_latency`` keep it in flight; ``perturb`` lets other tasks go first at named points.
Each bug below passes every check on the instant disk and is caught on the slow one.
"""

from __future__ import annotations

import os

import attrs
import pytest

from dsh_sim.adapters.simfs.frames import damage_detectable, layouts
from dsh_sim.drivers.machines import typed
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.engine.config import SimConfig
from dsh_sim.errors import FieldError
from dsh_sim.evidence import checker as checker_module
from dsh_sim.evidence.invariants import recovery, storage
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load
from dsh_sim.scenario.model import Scenario
from tests.support.paths import REGRESSIONS, STARTER

FLUSH_MEETS_WRITE = os.path.join(STARTER, "interleave-flush-meets-write-in-flight.json")
APPEND_DURING_FAILURE = os.path.join(STARTER, "interleave-append-during-failed-window-write.json")
PERTURBED = os.path.join(STARTER, "interleave-perturbed-parallel-turns.json")

FLUSH_SKIPS_WRITE_IN_FLIGHT = Edit(
    "runtime.persistence.write_behind",
    "WriteBehind.flush",
    "            while self._active:\n                await self._changed.wait()\n",
    "",
)
FAILED_BATCH_TO_THE_BACK = Edit(
    "runtime.persistence.write_behind",
    "WriteBehind._write",
    "            self._pending[:0] = batch\n",
    "            self._pending.extend(batch)\n",
)


def failing_in_flight(scenario: Scenario) -> Scenario:
    """``scenario`` with the window write that a flush meets failing its fsync (an ``arm``
    step before the advance that expires the window, as in ``APPEND_DURING_FAILURE``)."""
    at = next(i for i, step in enumerate(scenario.steps) if step.op == "advance")
    arm = typed.arm({"point": "fs.fsync", "action": "fsync_fail", "hit": 1, "lifetime": 1})
    return attrs.evolve(scenario, steps=(*scenario.steps[:at], arm, *scenario.steps[at:]))


def instant(scenario: Scenario) -> Scenario:
    return attrs.evolve(scenario, config=attrs.evolve(scenario.config, io_latency=0.0, fsync_latency=0.0, perturb=0.0))


def violations(scenario: Scenario, *edits: Edit) -> set[str]:
    with applied(list(edits)):
        result, _ = run_scenario(scenario)
    return {v.invariant for v in result.violations}


def points(scenario: Scenario) -> list[tuple[str, dict]]:
    _, sim = run_scenario(scenario, keep_trace=True)
    return [(r[2], r[3]) for r in sim.trace.records if r[0] == "point"]


def barriers_meeting_a_write(scenario: Scenario) -> int:
    """How many flush barriers started while a write of the log was in flight (written or
    fsynced, not yet acknowledged)."""
    in_flight, met = False, 0
    for name, details in points(scenario):
        if name in ("fs.write", "fs.fsync") and ".jsonl" in str(details.get("path", "")):
            in_flight = True
        elif name == "persist.batch.durable":
            in_flight = False
        elif name == "session.flush" and in_flight:
            met += 1
    return met


def test_a_slow_fsync_keeps_the_window_write_in_flight_when_the_barrier_arrives():
    scenario = load(FLUSH_MEETS_WRITE)
    assert barriers_meeting_a_write(scenario) >= 1
    assert barriers_meeting_a_write(instant(scenario)) == 0  # never on the instant disk


@pytest.mark.parametrize(
    ("path", "variant", "edit", "caught"),
    [
        (FLUSH_MEETS_WRITE, failing_in_flight, FLUSH_SKIPS_WRITE_IN_FLIGHT, "eventually_durable"),
        (APPEND_DURING_FAILURE, None, FAILED_BATCH_TO_THE_BACK, "eventually_durable"),
    ],
    ids=["flush-skips-the-write-in-flight", "failed-batch-goes-behind-newer-events"],
)
def test_a_write_behind_bug_is_caught_on_the_slow_disk_and_invisible_on_the_instant_one(path, variant, edit, caught):
    """Each bug passes on the instant disk and is caught on the slow one.  A flush that does not
    wait for the write in flight appends beside it, and the write handle commits the two in
    order (the second continues the first: group commit); so that bug shows where the write
    in flight fails: the barrier's batch fails with it, and what the retry writes goes wrong."""
    scenario = load(path) if variant is None else variant(load(path))
    assert violations(scenario) == set()
    assert caught in violations(scenario, edit)
    assert violations(instant(scenario), edit) == set()  # why latency is needed at all


def test_perturbation_is_seeded_and_changes_the_order():
    scenario = load(PERTURBED)
    first, _ = run_scenario(scenario)
    again, _ = run_scenario(scenario)
    assert first.digest == again.digest
    calm, _ = run_scenario(attrs.evolve(scenario, config=attrs.evolve(scenario.config, perturb=0.0)))
    reseeded, _ = run_scenario(attrs.evolve(scenario, seed=scenario.seed + 1))
    assert calm.digest != first.digest
    assert reseeded.digest != first.digest
    assert not first.violations and not calm.violations and not reseeded.violations


def test_timing_fields_are_validated():
    for field, value in (("perturb", 1.5), ("fsync_latency", -1.0), ("io_latency", float("nan"))):
        with pytest.raises(FieldError) as refused:
            SimConfig(**{field: value})
        assert refused.value.field == field


def test_a_paused_process_is_not_blamed_for_its_window(monkeypatch):
    """The simulator runs one process at a time: while second writers run on a slow disk the
    first one stands still.  Without Checker.paused_until this is a false violation."""
    scenario = load(os.path.join(STARTER, "interleave-second-writer-on-slow-disk.json"))
    assert violations(scenario) == set()
    monkeypatch.setattr(checker_module.Checker, "paused_until", property(lambda self: float("-inf")))
    assert violations(scenario) == {"write_behind_timely", "write_behind_window"}


@pytest.mark.parametrize(
    "name",
    [
        "heal-truncate-fails-after-failed-rollback",  # the heal itself fails
        "heal-open-fails-after-failed-rollback",  # the flush fails before it reaches the heal
        "publication-cleanup-unlink-fails",  # a first publication's name cannot be removed
    ],
)
def test_what_a_failed_removal_left_is_not_a_failed_rollback(monkeypatch, name):
    scenario = load(os.path.join(REGRESSIONS, f"{name}.json"))
    assert violations(scenario) == set()
    monkeypatch.setattr(storage, "left_by_failed_removal", lambda obs, log: False)
    assert "failed_append_rolled_back" in violations(scenario)


def test_a_failed_removal_of_another_file_excuses_nothing():
    """Written apart from the harness: a first publication that removes its link only after the
    directory fsync succeeded leaves it when that fsync fails.  The scenario's unlink fault then
    strikes the temp name, not the log: the log's unacknowledged records are judged."""
    link_flag_late = Edit(
        "runtime.persistence.durable",
        "publish_new_file",
        "        await fs.link(temp, final)\n        linked = True\n        await fs.fsync_dir(posixpath.dirname(final))\n",
        "        await fs.link(temp, final)\n        await fs.fsync_dir(posixpath.dirname(final))\n        linked = True\n",
    )
    with applied([link_flag_late]):
        assert "failed_append_rolled_back" in violations(load(os.path.join(REGRESSIONS, "publication-cleanup-unlink-fails.json")))


def test_only_the_bytes_a_failed_removal_left_are_excused():
    """The excuse is exact: one byte written since the removal failed, and the flush is judged."""
    _, sim = run_scenario(load(os.path.join(REGRESSIONS, "heal-open-fails-after-failed-rollback.json")), keep_trace=False)
    log = sim.disk.read_path(sim.config.log_path)
    assert log is not None

    class Judge:
        history = attrs.evolve(sim.history, unhealed=log)
        corruptions = sim.history.corruptions

    Judge.sim = sim  # type: ignore[attr-defined]
    assert storage.left_by_failed_removal(Judge, log)
    assert not storage.left_by_failed_removal(Judge, log + b"x")
    assert not storage.left_by_failed_removal(Judge, log[:-1])
    Judge.history = attrs.evolve(sim.history, unhealed=None)
    assert not storage.left_by_failed_removal(Judge, log)


def test_bit_rot_that_reads_as_a_tear_protects_only_what_lies_before_it(monkeypatch):
    scenario = load(os.path.join(REGRESSIONS, "corrupt-block-size-reads-as-torn.json"))
    assert violations(scenario) == set()
    _, sim = run_scenario(scenario)
    (damage,) = sim.history.corruptions
    assert not damage.complete_frame  # a reader cannot tell it from a torn tail
    monkeypatch.setattr(recovery, "undamaged_prefix", lambda obs: None)
    assert violations(scenario) == {"acked_events_survive"}


def test_damage_is_detectable_only_where_a_reader_can_tell():
    import zstandard

    header = zstandard.ZstdCompressor(write_checksum=True).compress(b'{"format":"x"}\n')
    batch = zstandard.ZstdCompressor(write_checksum=True).compress(b'{"seq":0,"type":"a"}\n' * 3)
    data = header + batch
    (_, frame) = layouts(data)

    def flipped(offset: int, mask: int = 0x40) -> bytes:
        return data[:offset] + bytes([data[offset] ^ mask]) + data[offset + 1 :]

    assert damage_detectable(data, flipped(frame.checksum_start))  # content checksum no longer matches
    assert damage_detectable(data, flipped(frame.blocks[0][0] + 3))  # a payload byte changes the content
    block = frame.blocks[0][0]
    assert not damage_detectable(data, flipped(block + 2, 0x40))  # block size past EOF: reads as a torn tail
    assert not damage_detectable(data, data)
