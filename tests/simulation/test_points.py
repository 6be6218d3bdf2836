"""The named-point registry cannot drift: every detail key a point is announced with is
declared (so ``match`` validation refuses exactly the keys a point never carries)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from dsh_sim.drivers.replay import run_steps, simulation_for
from dsh_sim.engine.lifetime import Lifetime
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.engine.observer import Observer
from dsh_sim.engine.points import POINTS
from dsh_sim.mutants import catalogue as mutants
from dsh_sim.scenario.files import corpus, load
from tests.support.paths import ROOT

ROOT = os.path.join(ROOT, "scenarios")


class KeyRecorder(Observer):
    def __init__(self) -> None:
        self.keys: dict[str, set[str]] = {}

    def on_point(self, life: Lifetime, name: str, details: dict[str, Any]) -> None:
        self.keys.setdefault(name, set()).update(k for k in details if not k.startswith("_"))


@pytest.mark.slow
def test_every_announced_detail_key_is_declared() -> None:
    recorder = KeyRecorder()
    files, _ = corpus(ROOT)
    with capture_runtime_logs():
        for path in files:
            scenario = load(path)
            sim, _ = simulation_for(scenario)
            sim.observers.append(recorder)
            with mutants.enabled(scenario.mutants):
                try:
                    run_steps(sim, scenario.steps)
                finally:
                    sim.shutdown()
    assert len(recorder.keys) >= 25, sorted(recorder.keys)  # the corpus reaches most points
    for name, keys in recorder.keys.items():
        undeclared = keys - set(POINTS[name].details)
        assert not undeclared, f"{name} is announced with {sorted(undeclared)}: declare them in dsh_sim/engine/points.py"
