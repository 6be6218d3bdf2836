"""Each timing setting alone makes the named points take time (``SimConfig.points_take_time``).

``Simulation.point`` skips the timing step when the configuration gives points no time; the
three settings that do must each turn it on by themselves, or a slow disk configured alone
(``fsync_latency``) would silently be an instant one.
"""

from __future__ import annotations

import pytest

from dsh_sim.engine.config import SimConfig
from dsh_sim.engine.machine import Simulation
from dsh_sim.scenario.args import Step
from dsh_sim.scenario.steps import apply


def _session(config: SimConfig) -> Simulation:
    sim = Simulation(7, config, keep_trace=True)
    try:
        for op in ("boot", "prompt", "flush"):
            apply(sim, Step(op))
    finally:
        sim.shutdown()
    return sim


@pytest.mark.parametrize("field", ["io_latency", "fsync_latency"])
def test_a_latency_alone_makes_the_filesystem_take_virtual_time(field: str) -> None:
    instant = _session(SimConfig())
    slow = _session(SimConfig(**{field: 0.5}))
    assert SimConfig(**{field: 0.5}).points_take_time
    assert slow.now() >= instant.now() + 0.5, (field, instant.now(), slow.now())


def test_perturbation_alone_perturbs_the_points() -> None:
    assert not SimConfig().points_take_time
    sim = _session(SimConfig(perturb=1.0))
    assert sim.config.points_take_time
    assert any(record[0] == "perturb" for record in sim.trace.records)
