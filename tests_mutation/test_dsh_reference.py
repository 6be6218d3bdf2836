"""The differential against the real DSH as mutation-test items, without Node: the runtime's v0
reader and migration read every log of the corpus the real DSH wrote and damaged (malformed
headers, packed rows and event envelopes included) as DSH read it when the corpus was recorded
(:mod:`dsh_sim.dsh.reference`), or differ only by a listed finding.  One item per family, so a
mutant costs only the families that reach it.  Skipped when no reference was recorded (the
pinned DSH is not installed: ``dsh-sim dsh setup``)."""

from __future__ import annotations

import pytest

from dsh_sim.dsh.reference import FAMILIES
from dsh_sim.mutation import harness


@pytest.mark.parametrize("family", FAMILIES)
def test_dsh_reference(family):
    if not harness.dsh_reference_path().exists():
        pytest.skip(f"no recorded DSH reference at {harness.dsh_reference_path()} (dsh-sim mutants --tool records one)")
    harness.check_dsh_reference(family)
