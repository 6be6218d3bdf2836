"""Hypothesis settings profiles: ``dev``, ``ci`` (deterministic, fixed budget) and ``soak``.

``ci`` is chosen automatically when the ``CI`` environment variable is set (as Hypothesis
itself does); ``DSH_PROFILE`` overrides.  The machines need no deadline (a step is a whole
simulated turn) and no health checks about data size or speed.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, Phase, settings

_COMMON: dict[str, Any] = {"deadline": None, "suppress_health_check": list(HealthCheck), "report_multiple_bugs": False}

settings.register_profile("dev", max_examples=30, stateful_step_count=15, **_COMMON)
settings.register_profile("ci", max_examples=60, stateful_step_count=20, derandomize=True, database=None, print_blob=True, **_COMMON)
settings.register_profile("soak", max_examples=2000, stateful_step_count=40, **_COMMON)
# 50 rules per example: ``benchmarks/bench_fuzz_find.py`` measured the CPU time until the fuzz
# driver finds each catalogue mutant at 12 and 50.  In total 50 never needed more (fewer boots,
# stops and Hypothesis set-ups per rule, longer histories before each crash) and missed fewer;
# single mutants vary both ways.  The figures are in benchmarks/README.md ("sixth pass").
# ``dsh-sim fuzz --steps`` sets another count; the mutation harness keeps 12.
settings.register_profile("fuzz", max_examples=25, stateful_step_count=50, database=None, phases=(Phase.generate, Phase.shrink), **_COMMON)


def default_profile(fallback: str = "dev") -> str:
    return os.environ.get("DSH_PROFILE") or ("ci" if os.environ.get("CI") else fallback)


def load_default(fallback: str = "dev") -> str:
    name = default_profile(fallback)
    settings.load_profile(name)
    return name


def fuzz_settings(steps: int | None = None) -> settings:
    """The base settings of ``dsh-sim fuzz`` (batches get their own example counts); ``steps``
    replaces the profile's rules per example."""
    profile = settings.get_profile("fuzz")
    return profile if steps is None else settings(profile, stateful_step_count=steps)
