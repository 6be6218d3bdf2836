"""Systematic exploration: every crash state of a bounded scenario, recovered and checked."""

from __future__ import annotations

import os

import attrs
import pytest

from dsh_sim.drivers.explore import explore, record
from dsh_sim.drivers.replay import judge, run_scenario
from dsh_sim.evidence.results import explore_document
from dsh_sim.scenario.files import load, save_found
from tests.support.paths import ROOT

STARTER = os.path.join(ROOT, "scenarios", "starter")


def scenario(name: str):
    return load(os.path.join(STARTER, f"{name}.json"))


@pytest.fixture(scope="module")
def pay_explored():
    """One exploration of boundary-2-3-pay (default model, its own cache), read by the two tests
    below: each asserts a different property of the same result, so it is computed once."""
    return explore(scenario("boundary-2-3-pay"))


@pytest.mark.slow
def test_exhaustive_under_the_prefix_model_and_clean_on_the_correct_runtime(pay_explored):
    result = pay_explored
    assert result.violations == [] and not result.record_violations
    assert sum(result.explored.values()) == sum(result.possible.values()) == len(result.states) > 300
    assert not result.sampled
    kinds = {s.kind for s in result.states}
    assert kinds == {"kill", "power"}
    # every cell's explored equals its possible, and the barrier cells count each state once
    cells = [c for row in result.cells["barrier"].values() for c in row.values()]
    assert sum(c["possible"] for c in cells) == len(result.states)
    assert all(c["explored"] == c["possible"] for c in cells)


@pytest.mark.slow
def test_recovery_starts_from_the_recorded_state_not_a_replayed_prefix(pay_explored):
    points, _, _, _ = record(scenario("boundary-2-3-pay"))
    result = pay_explored
    assert len(result.points) == len(points)
    distinct = sum(not s.shared for s in result.states)
    assert distinct < len(result.states)  # identical post-crash states are recovered once


@pytest.mark.slow
def test_above_the_bound_states_are_sampled_and_reported():
    result = explore(scenario("torn-zstd-checksum"), bound=2)
    assert result.sampled
    assert sum(result.explored.values()) < sum(result.possible.values())


@pytest.mark.slow
def test_every_violation_comes_with_a_scenario_that_replays_it(tmp_path):
    broken = attrs.evolve(scenario("boundary-2-3-pay"), mutants=("persist.skip_fsync_on_append",))
    result = explore(broken, on_violation=lambda repro: save_found(repro, str(tmp_path)))
    assert result.violations
    files = sorted(os.listdir(tmp_path))
    assert files and {s.repro for s, _ in result.violations} <= {str(tmp_path / f) for f in files}
    for name in files:
        repro = load(str(tmp_path / name))
        run, _ = run_scenario(repro)
        assert not judge(repro, run, check_digest=False), name


@pytest.mark.slow
def test_the_reorder_model_explores_subsets_of_unsynced_writes():
    prefix = explore(scenario("fsync-fail-on-append"), crash="power")
    reorder = explore(scenario("fsync-fail-on-append"), crash="power", model="reorder")
    assert reorder.violations == [] and sum(reorder.possible.values()) > 0
    assert sum(reorder.possible.values()) != sum(prefix.possible.values())


# A spread of the corpus, explored in full on every build (``dsh-sim run`` explores all of it):
# torn frames with partial records, fsync failures, recovery crashes, migration, two writers.
# (The regressions, explored in full too, are tests/simulation/test_explore_regressions.py.)
SPREAD = (
    "torn-zstd-multiblock-partial-records",
    "torn-none-mid-line",
    "fsync-fail-on-first-publication",
    "crash-during-recovery",
    "two-writers-storage",
    "cancel-while-tool-checkpoint-pending",
)


@pytest.mark.slow
@pytest.mark.parametrize("name", SPREAD)
def test_every_crash_state_of_the_spread_recovers_cleanly(name):
    result = explore(scenario(name))
    assert not result.violations, result.violations[0][1].describe()
    assert sum(result.explored.values()) == sum(result.possible.values()) > 0


def test_a_recovery_starts_from_the_post_crash_disk_of_its_state():
    """Explore starts a recovery from a copy of the state's post-crash image when it has it at
    hand (a point whose image no earlier point had), else cuts the recorded disk again: the
    copy is the recorded disk cut again, node for node, with nothing else carried over."""
    from dsh_sim.adapters.simfs.disk import Disk
    from dsh_sim.drivers.explore import _CrashLayouts, post_crash_disk

    points, recorded, _, _ = record(scenario("boundary-1-2-batch_pay"))
    layouts = _CrashLayouts("both", "prefix", recorded.config.log_path)
    powered = remembered = 0
    for cp in points:
        for _, cut, _, _, _, image in layouts.of(cp):
            if image is None:  # (options remembered from an earlier point with the same image)
                remembered += 1
                continue
            again, copy = post_crash_disk(cp, cut), Disk.from_image(image)
            assert copy.image() == again.image() and (copy.next_ino, copy.ops, copy.locks) == (again.next_ino, again.ops, again.locks)
            powered += cut is not None
    assert powered and remembered


@pytest.mark.slow
def test_a_step_that_cannot_run_stops_the_recording_and_is_reported(tmp_path, capsys):
    """Explore used to skip a step that cannot run and go on with the next ones, exploring a run
    the scenario does not describe; now the recording stops there, like replay, and says so."""
    import json

    from dsh_sim.cli.main import main

    with open(os.path.join(STARTER, "torn-none-before-newline.json")) as f:
        document = json.load(f)
    document["steps"][1]["args"]["rule"]["crash"]["cut"]["files"][0]["torn_bytes"] = 99999  # no such tear
    path = tmp_path / "bad-cut.json"
    path.write_text(json.dumps(document))
    result = explore(load(str(path)))
    assert result.not_applicable is not None and result.not_applicable.startswith("step 4 ")
    assert "is not a post-crash state of this disk" in result.not_applicable
    assert max(p.step_index for p in result.points) == 4  # nothing after the step that could not run
    assert main(["explore", str(path), "--found-dir", str(tmp_path / "found")]) == 1
    assert "NOT EXPLORED past step 4" in capsys.readouterr().out
    # and the results document says so too: a report or campaign that reads it sees the gap
    document = explore_document(result, str(path), result.seconds)
    gaps = [v for v in document.violations or () if v.source == "explore-record"]
    assert [v.invariant for v in gaps] == ["expectation"] and "NOT EXPLORED past step 4" in (gaps[0].message or "")


@pytest.mark.slow
def test_explore_tears_a_frame_one_byte_short_of_its_checksum():
    """Written apart from the harness: a torn-frame scanner whose checksum length check is off by
    one reads a frame missing its last checksum byte as whole (and refuses the log).  Only a tear
    one byte short of an element's end tells; explore cuts every element there."""
    from dsh_sim.mutants.patch import Edit, applied

    off_by_one = Edit(
        "runtime.persistence.zstd_frames", "frame_at", "    if checksum:\n        if n - o < 4:", "    if checksum:\n        if n - o < 3:"
    )
    assert explore(scenario("torn-zstd-checksum")).violations == []
    with applied([off_by_one]):
        result = explore(scenario("torn-zstd-checksum"), stop_on_violation=True)
    assert result.violations and result.violations[0][1].invariant in ("recovery_succeeds", "reference_model")


@pytest.mark.parametrize("command", ["replay", "explore", "sweep"])
@pytest.mark.parametrize("field, value", [("keep_ops", -1), ("ino", 0), ("torn_bytes", -3), ("subset", [0, -1])])
def test_a_cut_no_disk_can_have_is_bad_input(tmp_path, capsys, command, field, value):
    """One line naming the file and the field, exit 2, nothing written (a cut that could fit some
    disk but not this one is the scenario's problem instead: it cannot run, see above)."""
    import json

    from dsh_sim.cli.main import main

    with open(os.path.join(STARTER, "torn-none-before-newline.json")) as f:
        document = json.load(f)
    document["steps"][1]["args"]["rule"]["crash"]["cut"]["files"][0][field] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    found = tmp_path / "found"
    args = [command, str(path)] + ([] if command == "replay" else ["--found-dir", str(found)])
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and field in err[0]
    assert not found.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["bad.json"]
