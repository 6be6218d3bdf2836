"""The lease and other processes' files: ``lease_held`` and ``foreign_files_kept`` fail on the
slips they guard against, and the races and conflicts the fuzzers now draw (``contended`` at
the lock, ``target_exists`` at a publication) are judged, not blamed on the runtime."""

from __future__ import annotations

import glob
import os

import pytest

from dsh_sim.drivers.replay import run_scenario
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load, parse
from tests.support.paths import REGRESSIONS

LOCK_SCENARIOS = sorted(glob.glob(os.path.join(REGRESSIONS, "lock-file-*.json")))
B = "runtime.persistence.backend"


def storage(name: str, rule: dict, *, seed_v0: bool = False) -> object:
    steps = [{"op": "arm", "args": {"rule": rule}}, {"op": "boot"}, {"op": "append", "args": {"count": 2}}, {"op": "flush"}]
    if seed_v0:
        steps = [{"op": "seed_v0", "args": {"turns": 1}}, *steps]
    return parse(
        {
            "format": "dsh-sim-scenario",
            "version": 1,
            "name": name,
            "machine": "storage",
            "seed": 1,
            "steps": steps + [{"op": "crash_now"}, {"op": "boot"}, {"op": "append"}, {"op": "flush"}],
        }
    )


def invariants(scenario: object) -> set[str]:
    result, _ = run_scenario(scenario)  # type: ignore[arg-type]
    return {v.invariant for v in result.violations}


def test_a_lock_on_a_file_removed_or_replaced_under_it_is_no_lease() -> None:
    """A careless lease that skips its recheck that the locked file is still the one at the path."""
    skip_recheck = Edit(
        "runtime.persistence.lease",
        "acquire_lock",
        "        if at_path is not None and (at_path.dev, at_path.ino) == (held.dev, held.ino):\n",
        "        if True:\n",
    )
    for path in LOCK_SCENARIOS:
        assert invariants(load(path)) == set(), path
        with applied([skip_recheck]):
            assert "lease_held" in invariants(load(path)), path


def test_a_publication_before_the_lock_is_written_without_the_lease() -> None:
    """A first publication that takes the lock only after linking the log."""
    late_lock = Edit(
        B,
        "JsonlBackend._materialize",
        "            if handle.lock_fd is None:\n                handle._set_lock(await acquire_lock(self.fs, paths.lock, handle.session_id))\n",
        "",
    )
    scenario = load(os.path.join(REGRESSIONS, "write-path-publication-then-appends.json"))
    assert invariants(scenario) == set()
    with applied([late_lock]):
        assert "lease_held" in invariants(scenario)


@pytest.mark.parametrize("lifetime", [1, 2])
def test_a_process_that_loses_the_race_to_open_stays_out(lifetime: int) -> None:
    rule = {"point": "fs.flock", "action": "contended", "hit": 1, "lifetime": lifetime}
    result, _ = run_scenario(storage("contended", rule))  # type: ignore[arg-type]
    assert [v.describe() for v in result.violations] == []
    assert "SessionAlreadyOwnedError" in " ".join(result.outcomes)


@pytest.mark.parametrize("seed_v0", [False, True], ids=["first-publication", "migration"])
def test_another_process_file_at_the_published_name_is_kept(seed_v0: bool) -> None:
    rule = {"point": "fs.link", "action": "target_exists", "hit": 1, "lifetime": 1}
    scenario = storage("target-exists", rule, seed_v0=seed_v0)
    result, sim = run_scenario(scenario)  # type: ignore[arg-type]
    assert [v.describe() for v in result.violations] == []
    assert result.stats["checked"]["foreign_files_kept"] > 0
    # a failed publication's cleanup that removes the name whether or not it linked it
    cleans_up = Edit(
        "runtime.persistence.durable",
        "publish_new_file",
        "            if linked:\n                await unlink_quietly(fs, final)\n",
        "            await unlink_quietly(fs, final)\n",
    )
    if not seed_v0:
        with applied([cleans_up]):
            assert "foreign_files_kept" in invariants(scenario)


def test_a_second_writers_refusal_in_other_words_is_found() -> None:
    """The refusal of a second writer is the spec's text (§10.2), not only its class: a lock
    refusal that always appends a detail (found by mutmut over the rest modules) is named."""
    two_writers = load(os.path.join(os.path.dirname(REGRESSIONS), "starter", "two-writers.json"))
    assert invariants(two_writers) == set()
    wordy = Edit(
        "runtime.persistence.lease",
        "acquire_lock",
        "raise SessionAlreadyOwnedError(session_id) from None",
        'raise SessionAlreadyOwnedError(session_id, "held") from None',
    )
    with applied([wordy]):
        assert invariants(two_writers) == {"lock_exclusion"}


def test_a_foreign_file_taken_for_the_migrated_generation_is_found() -> None:
    """A publication that accepts whatever file holds its target without verifying it (round 5's
    existing-target-accepted-unverified) fails the next read, not with a crash: migration_atomic
    asks that boot for the conflict refusal.  (A process killed at that link is excused:
    migration-killed-at-a-planted-target; an excuse once given to every failed boot.)"""
    scenario = load(os.path.join(REGRESSIONS, "lease-foreign-file-at-migration.json"))
    assert invariants(scenario) == set()
    unverified = Edit(
        "runtime.persistence.publication",
        "publish",
        "            except FileExistsError:\n                await _accept_existing(fs, target, data)\n",
        "            except FileExistsError:\n                pass\n",
    )
    with applied([unverified]):
        assert "migration_atomic" in invariants(scenario)
    assert invariants(load(os.path.join(REGRESSIONS, "migration-killed-at-a-planted-target.json"))) == set()
