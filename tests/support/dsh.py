"""Shared fixture of the differential tests: the pinned DSH install, or a skip saying why."""

from __future__ import annotations

import os

import pytest

from dsh_sim.dsh.install import Installation, InstallError, setup
from dsh_sim.dsh.node import NodeMissing


@pytest.fixture(scope="session")
def dsh_install() -> Installation:
    """Installs the pinned set once (from the npm registry) into the cache; later runs reuse it.

    Without Node or the packages the tests skip with the reason — except in CI (``CI=true``),
    whose .ci/run installs both: there a skip would hide that the differential never ran."""
    try:
        install, _ = setup()
    except (NodeMissing, InstallError) as err:
        what = "differential mode needs Node" if isinstance(err, NodeMissing) else "the pinned DSH packages could not be installed"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{what} (CI installs it with .ci/run): {err}")
        pytest.skip(f"{what}: {err}")
    return install
