"""The ``replaced`` fault at ``fs.flock``: a lock file swapped between the writer's open and its
flock.  The writer as shipped notices (the locked inode is no longer the file at the path) and
locks the new file; a writer that skips that check holds a lock no name reaches, and a second
writer is let in — ``lock_exclusion`` must say so."""

from __future__ import annotations

from pathlib import Path

import attrs

from dsh_sim.drivers.replay import run_scenario
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load
from dsh_sim.scenario.model import Expectation
from tests.support.paths import ROOT

SCENARIO = Path(ROOT) / "scenarios" / "regressions" / "lock-file-replaced-while-locking.json"
NO_INODE_CHECK = Edit(
    "runtime.persistence.lease",
    "acquire_lock",
    "        if at_path is not None and (at_path.dev, at_path.ino) == (held.dev, held.ino):",
    "        if True:",
)


def test_replaced_lock_file_is_noticed_by_the_shipped_writer():
    result, _ = run_scenario(load(str(SCENARIO)))
    assert not result.violations
    assert result.unfired == (), "the fault never fired"


def until(scenario, invariant):
    """Run on until ``invariant`` fails (an earlier check may fail first on the same slip)."""
    return attrs.evolve(scenario, expect=Expectation("violation", invariant))


def test_a_writer_that_skips_the_inode_check_lets_a_second_writer_in():
    with applied([NO_INODE_CHECK]):
        result, _ = run_scenario(until(load(str(SCENARIO)), "lock_exclusion"))
    # the writer writes under a lock on a file no name reaches: lease_held says so at its first write
    assert {"lock_exclusion", "lease_held"} <= {v.invariant for v in result.violations}


# ``removed``: the stale-lock cleaner leaves the name free.  Written apart from the harness
# (round 3): a lock file that vanished before the identity check taken as "nothing to compare".
REMOVED = SCENARIO.with_name("lock-file-removed-while-locking.json")
VANISHED_ACCEPTED = Edit(
    "runtime.persistence.lease",
    "acquire_lock",
    "        if at_path is not None and (at_path.dev, at_path.ino) == (held.dev, held.ino):",
    "        if at_path is None or (at_path.dev, at_path.ino) == (held.dev, held.ino):",
)


def test_a_removed_lock_file_is_noticed_by_the_shipped_writer():
    result, sim = run_scenario(load(str(REMOVED)))
    assert not result.violations and result.unfired == ()
    assert sim.disk.resolve(sim.config.log_path.rsplit("/", 1)[0] + "/session.lock") is not None  # locked again at the path


def test_a_writer_that_accepts_a_vanished_lock_file_lets_a_second_writer_in():
    with applied([VANISHED_ACCEPTED]):
        result, _ = run_scenario(until(load(str(REMOVED)), "lock_exclusion"))
        replaced, _ = run_scenario(load(str(SCENARIO)))
    assert {"lock_exclusion", "lease_held"} <= {v.invariant for v in result.violations}
    assert not replaced.violations  # the replaced file leaves a name at the path: only removal shows this slip
