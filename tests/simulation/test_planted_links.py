"""Symbolic links at session paths, planted the way the world plants them: between processes
(``plant_link``) or in the race between the runtime's checks and its open (the ``linked`` fault
at ``fs.open``).  The runtime refuses them; ``links_not_followed`` holds it to never reading or
writing through one, and the judges accept the refusal while the link is in place.

Before this, links at session paths were probed only by ``tests/test_session_path_refusals.py``:
dsh-sim's own methods (replay, explore, fuzz) never planted one, so a runtime that opened its
log without ``O_NOFOLLOW`` passed every one of them.
"""

from __future__ import annotations

import glob
import json
import os

import pytest

from dsh_sim.adapters.simfs import Disk
from dsh_sim.drivers.explore import explore
from dsh_sim.drivers.fuzz import fuzz
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.engine import links
from dsh_sim.engine.history import History
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.errors import InputError
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load, parse
from tests.support.paths import ROOT

REGRESSIONS = os.path.join(ROOT, "scenarios", "regressions")
LINK_SCENARIOS = sorted(glob.glob(os.path.join(REGRESSIONS, "link-*.json")))
# the runtime as it was before O_NOFOLLOW: a link at the final component is followed
FOLLOWS = Edit("runtime.persistence.safe_paths", "open_nofollow", "flags | OpenFlags.NOFOLLOW, mode)", "flags, mode)")


@pytest.mark.parametrize("path", LINK_SCENARIOS, ids=os.path.basename)
def test_each_planted_link_is_refused_and_never_followed(path):
    result, _ = run_scenario(load(path))
    assert result.violations == () and result.not_applicable is None
    assert any(o in {"refused:UnsafeSessionPathError", "error:UnsafeSessionPathError"} for o in result.outcomes), result.outcomes
    assert result.outcomes[-3:] == ("booted", "ok", "ok")  # the session goes on once the link is gone
    assert result.stats["checked"]["links_not_followed"] > 0


@pytest.mark.parametrize(
    ("name", "invariant"),
    [("link-raced-into-log-at-recovery", "links_not_followed"), ("link-raced-into-log-before-append", "errors_documented")],
)
def test_a_runtime_that_follows_the_link_is_caught(name, invariant):
    with capture_runtime_logs(), applied([FOLLOWS]):
        result, _ = run_scenario(load(os.path.join(REGRESSIONS, f"{name}.json")))
    assert [v.invariant for v in result.violations][:1] == [invariant], result.violations


@pytest.mark.slow
def test_the_storage_fuzz_finds_a_runtime_that_follows_links(tmp_path):
    """Followed, a link shows either in its target (written through: ``links_not_followed``) or
    in the recovery (the target's bytes read as the log and refused: ``recovery_succeeds``,
    where the runtime refuses the link itself); the found scenario holds without the bug."""
    with capture_runtime_logs(), applied([FOLLOWS]):
        run = fuzz("storage", budget=1e9, examples=300, seed=1, out_dir=str(tmp_path), minimize_budget=0.0, shrink_budget=2.0)
    assert run.found is not None and run.found.invariant in ("links_not_followed", "recovery_succeeds"), run.found
    found = load(run.found.path)
    assert any(step.op == "plant_link" or (step.op == "arm" and step.args.rule.action == "linked") for step in found.steps)
    with capture_runtime_logs():
        assert run_scenario(found)[0].violations == ()
        with applied([FOLLOWS]):
            assert run.found.invariant in {v.invariant for v in run_scenario(found)[0].violations}


def test_a_name_planted_twice_unwinds_in_order():
    disk, history = Disk(), History()
    disk.write_file_durable("/s/log", b"the log")
    first = links.plant(disk, history, "/s/log", directory=False)
    assert links.remove_all(disk, history) == 1 and disk.read_path("/s/log") == b"the log"
    second = links.plant(disk, history, "/s/log", directory=False)
    third = links.plant(disk, history, "/s/log", directory=False)  # over the second link: it is moved aside too
    assert {first.target, second.target, third.target} == {p.target for p in history.planted} and links.in_place(disk, history)
    assert links.remove_all(disk, history) == 2
    assert disk.read_path("/s/log") == b"the log" and not links.in_place(disk, history)


def test_links_are_planted_only_between_processes_and_at_known_sites(tmp_path):
    with open(os.path.join(REGRESSIONS, "link-planted-at-session-directory.json"), encoding="utf-8") as f:
        document = json.load(f)
    document["steps"][0]["args"]["at"] = "elsewhere"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(InputError) as refused:
        load(str(path))
    assert "at" in str(refused.value) and "elsewhere" in str(refused.value)
    document["steps"][0]["args"]["at"] = "session"
    document["steps"].insert(0, {"op": "boot", "args": {}})  # a process runs: the plant cannot
    path.write_text(json.dumps(document), encoding="utf-8")
    result, _ = run_scenario(load(str(path)))
    assert result.not_applicable is not None and "while no process runs" in result.not_applicable


def test_explore_does_not_blame_a_refused_boot_for_the_crash_s_leftovers():
    """Explore's recovery runs start from a crash image that may hold a temp name; a boot the
    planted link refuses is judged against that image's stray names, not against none."""
    result = explore(load(os.path.join(REGRESSIONS, "link-planted-at-lock-after-crash.json")), cache={})
    assert not result.violations and not result.record_violations
    assert len(result.states) > 100


def test_a_linked_fault_elsewhere_than_the_log_or_lock_cannot_run(tmp_path):
    document = {
        "format": "dsh-sim-scenario",
        "version": 1,
        "name": "linked-at-a-temp",
        "machine": "storage",
        "seed": 1,
        "config": {"approval_tools": []},
        "steps": [
            {"op": "seed_v0", "args": {"turns": 3}},
            {"op": "arm", "args": {"rule": {"point": "fs.open", "action": "linked", "hit": 3, "lifetime": 1}}},  # the migration's temp
            {"op": "boot", "args": {}},
        ],
        "expect": {"outcome": "pass"},
    }
    path = tmp_path / "linked.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    result, _ = run_scenario(load(str(path)))
    assert result.violations == () and "linked cannot run at the open of" in (result.not_applicable or "")


def test_a_refusal_for_a_link_does_not_excuse_the_recovery_after_it():
    """The crash is judged by the reference model at the first boot that gets past the link
    (its image is the disk the operator left), so a reader bug still shows."""
    with open(os.path.join(ROOT, "scenarios", "starter", "torn-zstd-checksum.json"), encoding="utf-8") as f:
        document = json.load(f)
    second_boot = [i for i, s in enumerate(document["steps"]) if s["op"] == "boot"][1]
    document["steps"][second_boot:second_boot] = [
        {"op": "plant_link", "args": {"at": "log"}},
        {"op": "boot", "args": {}},
        {"op": "remove_links", "args": {}},
    ]
    document.pop("trace_digest", None)
    document["mutants"] = ["read.drop_torn_recovered_records"]
    document["expect"] = {"outcome": "violation", "invariant": "reference_model"}
    result, _ = run_scenario(parse(document))
    assert {"reference_model", "recovery_maximal"} <= {v.invariant for v in result.violations}
