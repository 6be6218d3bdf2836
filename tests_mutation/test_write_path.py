"""The write path's failure paths as mutation-test items (see :mod:`dsh_sim.drivers.faultsweep`).

Each item replays one scenario once per position of its durability sequences with an I/O error
(and a cancellation of the turn or the session open) added there; every run is judged by every invariant
and oracle — ``no_residue`` included: a descriptor left open or a temp name left behind by a
failure path is a violation.  The selection is ``harness.SWEEP_SET``.
"""

from __future__ import annotations

import pytest

from dsh_sim.mutation import harness

SWEPT = harness.sweep_set(harness.corpus())


@pytest.mark.parametrize("scenario", SWEPT, ids=[s.name for s in SWEPT])
def test_sweep(scenario):
    harness.check_sweep(scenario)
