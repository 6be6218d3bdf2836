"""The reader differential as mutation-test items: every runtime read entry point against the
spec's reader (:mod:`dsh_sim.drivers.readers`), one item per group of cases, so a mutant of
the read path costs only the groups that reach it."""

from __future__ import annotations

import pytest

from dsh_sim.drivers.readers import GROUPS
from dsh_sim.mutation import harness

CORPUS = harness.corpus()


@pytest.mark.parametrize("group", GROUPS)
def test_readers(group):
    """Events, torn tails, refusals and their texts equal the spec reader's, for every case."""
    harness.check_readers(group, CORPUS)
