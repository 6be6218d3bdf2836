"""Every crash state of every regression scenario, explored in full and recovered cleanly.

(Split from test_explore.py: this is most of the exploration time of the suite, and one file
runs on one xdist worker, so alone it balances the workers.)  The explorations share one
recovery cache, as ``dsh-sim run`` shares one per explore shard: a crash state whose
post-crash disk, ledger, acknowledgements and configuration are identical to one already
recovered (explore's key, :func:`dsh_sim.drivers.explore.explore`) takes that recovery's
verdicts and violations instead of recovering again.  Every state of every scenario is still
enumerated and counted, and a violation is reported whether its recovery ran here or in an
earlier scenario; the check is the one the campaign makes, without the repeated work.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from dsh_sim.drivers.explore import explore
from dsh_sim.scenario.files import load
from tests.support.paths import REGRESSIONS


@pytest.fixture(scope="module")
def recoveries() -> dict[str, Any]:
    """The recovery cache the regressions' explorations share (see the module's docstring)."""
    return {}


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(n for n in os.listdir(REGRESSIONS) if n.endswith(".json")))
def test_every_crash_state_of_the_regressions_recovers_cleanly(path: str, recoveries: dict[str, Any]) -> None:
    result = explore(load(os.path.join(REGRESSIONS, path)), cache=recoveries)
    assert not result.violations, result.violations[0][1].describe()
