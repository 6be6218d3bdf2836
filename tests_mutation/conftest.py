"""Wiring of the mutation test command: quiet runtime logs, cheap checks first.

The items run in the order replay → DSH reference, readers → fuzz → sweep → explore whatever order a mutation tool passes
them in (mutmut hands over the tests that reach a mutated function as an unordered set), so
with ``-x`` a mutant costs no more than the cheapest check that notices it.
"""

from __future__ import annotations

import pytest

from dsh_sim.engine.logs import capture_runtime_logs

_RANK = {"test_replay": 0, "test_dsh_reference": 1, "test_readers": 1, "test_fuzz": 2, "test_sweep": 3, "test_explore": 4}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: _RANK.get(getattr(item, "originalname", item.name), 4))


@pytest.fixture(autouse=True)
def _quiet_runtime_logs():
    with capture_runtime_logs():
        yield
