"""The ``replaced`` fault at ``fs.flock``: a lock file swapped between the writer's open and its
flock.  The writer as shipped notices (the locked inode is no longer the file at the path) and
locks the new file; a writer that skips that check holds a lock no name reaches, and a second
writer is let in — ``lock_exclusion`` must say so."""

from __future__ import annotations

from pathlib import Path

from dsh_sim.drivers.replay import run_scenario
from dsh_sim.mutation.patch import Edit, applied
from dsh_sim.scenario.files import load

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "regressions" / "lock-file-replaced-while-locking.json"
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


def test_a_writer_that_skips_the_inode_check_lets_a_second_writer_in():
    with applied([NO_INODE_CHECK]):
        result, _ = run_scenario(load(str(SCENARIO)))
    assert "lock_exclusion" in {v.invariant for v in result.violations}
