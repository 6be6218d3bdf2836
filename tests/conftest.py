"""Test-suite wiring: Hypothesis profile (ci under CI=true), quiet runtime logs, opt-in soak."""

from __future__ import annotations

import pytest

from dsh_sim.drivers import profiles
from dsh_sim.engine.logs import capture_runtime_logs

# The suite is deterministic for everyone (not only under CI=true): the "ci" profile unless
# DSH_PROFILE asks for another (dev, soak) on purpose.
PROFILE = profiles.load_default(fallback="ci")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--soak", action="store_true", help="run the long fuzzing tests (soak profile)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--soak"):
        return
    skip = pytest.mark.skip(reason="soak test: run with --soak")
    for item in items:
        if "soak" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _quiet_runtime_logs():
    with capture_runtime_logs():
        yield
