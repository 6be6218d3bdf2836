"""Test-suite wiring: Hypothesis profile (ci under CI=true), quiet runtime logs, the tiers, opt-in soak.

The suite is split by layer — ``tests/runtime`` (the runtime alone, on the real OS or fake
ports), ``tests/simulation`` (the simulator: engine, SimFS, oracles, drivers), ``tests/system``
(the command line, campaigns, the published DSH, the report in a browser) — and in two tiers:
``pytest -m "not slow"`` is the quick tier, plain ``pytest`` runs everything.  Both run on every
core (pytest-xdist, ``-n auto`` in pyproject.toml); ``-n 0`` runs in one process.
"""

from __future__ import annotations

import pytest

from dsh_sim.drivers import profiles
from dsh_sim.engine.logs import capture_runtime_logs

# The suite is deterministic for everyone (not only under CI=true): the "ci" profile unless
# DSH_PROFILE asks for another (dev, soak) on purpose.
PROFILE = profiles.load_default(fallback="ci")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--soak", action="store_true", help="run the long fuzzing tests (soak profile)")


# Shared fixtures that cost seconds to build (a corpus recorded by the real DSH, a fuzz run, a
# campaign): every test that uses one belongs to the full tier, whatever its own cost.
SLOW_FIXTURES = frozenset({"recorded", "corpus_diffs", "no_policy_run", "single"})

# The longest files, longest first (per-file totals of --durations, 2026-12-07): collected first,
# so xdist hands them out first (--dist loadfile --no-loadscope-reorder in pyproject.toml) and
# the workers end together instead of one running a long file alone at the end.  Only the order
# changes, never what runs: a file's tests stay together and in their own order.
LONGEST_FIRST = (
    "tests/simulation/test_explore_regressions.py",
    "tests/system/test_campaign_chaos.py",
    "tests/system/test_dsh_differential.py",
    "tests/system/test_dsh_against.py",
    "tests/simulation/test_fuzz_judges_the_stop.py",
    "tests/system/test_campaign_dask.py",
    "tests/system/test_campaign_chaos_embedded.py",
    "tests/system/test_campaign_run.py",
    "tests/simulation/test_fuzz_reproducible.py",
    "tests/system/test_dsh_route.py",
    "tests/system/test_campaign_signals.py",
    "tests/simulation/test_explore.py",
    "tests/simulation/test_machines.py",
    "tests/system/test_pytest_plugin.py",
    "tests/simulation/test_fuzz_memory.py",
    "tests/system/test_static_checks.py",
    "tests/simulation/test_hang.py",
    "tests/simulation/test_mutants.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest files first (``LONGEST_FIRST``); the quick tier (``-m "not slow"``) leaves out
    tests of a slow fixture and browser tests; soak tests run only with ``--soak``."""
    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable: the rest keep their order
    slow = pytest.mark.slow
    for item in items:
        if "browser" in item.keywords or SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(slow)
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
