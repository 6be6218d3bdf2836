"""A graceful stop after media corruption: the damage is the medium's, the rest the writer's.

``eventually_durable`` reads back the log a clean stop leaves.  When bit rot was injected into
that log, the damaged frame cannot read back whatever the writer does, so the judge reads
only what lies before the first damaged byte — and that must still be exactly what the
writer stored.  (Found when fuzz began judging each example's stop: the whole-log read called
the medium's damage a lost session.)
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import attrs

from dsh_sim.adapters.simfs.frames import layouts
from dsh_sim.drivers.replay import run_scenario, run_steps, simulation_for
from dsh_sim.engine.history import Corruption
from dsh_sim.evidence.invariants.storage import undamaged_end
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load
from tests.support.paths import ROOT

SCENARIO = os.path.join(ROOT, "scenarios", "regressions", "corrupt-then-clean-stop.json")
WHOLE_LOG_JUDGED = Edit(
    "dsh_sim.evidence.invariants.storage", "check_eventually_durable", "        data = data[:damaged]\n", "        pass\n"
)


def _caught(result) -> set[str]:  # type: ignore[no-untyped-def]
    return {v.invariant for v in result.violations}


def test_the_damaged_log_of_a_clean_stop_is_not_a_lost_session() -> None:
    result, _ = run_scenario(load(SCENARIO))
    assert _caught(result) == set(), [v.describe() for v in result.violations]
    assert result.stats["checked"]["eventually_durable"] >= 1


def test_judging_the_whole_damaged_log_calls_it_lost() -> None:
    with applied([WHOLE_LOG_JUDGED]):
        result, _ = run_scenario(load(SCENARIO))
    assert "eventually_durable" in _caught(result)


def test_a_frame_lost_before_the_damage_is_still_found() -> None:
    scenario = load(SCENARIO)
    sim, checker = simulation_for(scenario)
    run_steps(sim, list(scenario.steps))
    path = sim.config.log_path
    ino = sim.disk.resolve(path)
    assert ino is not None
    node = sim.disk.file(ino)
    first_damage = min(c.offset for c in sim.history.corruptions if c.path == path)
    frames = [f for f in layouts(node.durable) if f.end <= first_damage]
    assert len(frames) >= 3, "the scenario damages the log after a few frames"
    lost = frames[1]  # the first batch after the header: a writer that dropped it
    data = node.durable[: lost.start] + node.durable[lost.end :]
    sim.disk.nodes[ino] = attrs.evolve(node, durable=data, volatile=data)
    sim.shutdown()
    assert "eventually_durable" in {v.invariant for v in checker.violations}


def test_the_undamaged_part_ends_at_the_last_frame_before_the_first_damaged_byte() -> None:
    scenario = load(SCENARIO)
    sim, _ = simulation_for(scenario)
    run_steps(sim, list(scenario.steps))
    data = sim.disk.read_path(sim.config.log_path)
    assert data is not None
    frames = layouts(data)
    assert len(frames) >= 4
    path = sim.config.log_path

    def end_with_damage_at(*offsets: int) -> int | None:
        judge = SimpleNamespace(sim=sim, corruptions=[Corruption(path, o, True) for o in offsets])
        return undamaged_end(judge, data)  # type: ignore[arg-type]

    third = frames[2]
    assert end_with_damage_at(third.end) == third.end  # the damage starts right after it: the frame is whole
    assert end_with_damage_at(third.end - 1) == frames[1].end  # its last byte damaged: it is not
    assert end_with_damage_at(third.end + 5, third.end - 1) == frames[1].end  # the first damaged byte counts
    assert end_with_damage_at() is None
    other = SimpleNamespace(sim=sim, corruptions=[Corruption(path + ".other", 0, True)])
    assert undamaged_end(other, data) is None  # type: ignore[arg-type]  # damage elsewhere is not the log's
