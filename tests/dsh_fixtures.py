"""Shared fixture of the differential tests: the pinned DSH install, or a skip saying why."""

from __future__ import annotations

import pytest

from dsh_sim.dsh.install import Installation, InstallError, setup
from dsh_sim.dsh.node import NodeMissing


@pytest.fixture(scope="session")
def dsh_install() -> Installation:
    """Installs the pinned set once (from the npm registry) into the cache; later runs reuse it."""
    try:
        install, _ = setup()
    except NodeMissing as err:
        pytest.skip(f"differential mode needs Node: {err}")
    except InstallError as err:
        pytest.skip(f"the pinned DSH packages could not be installed: {err}")
    return install
