"""The simulation's seeded generators, made lazily, draw exactly what eager ones drew."""

from __future__ import annotations

import random

from dsh_sim.engine.determinism import derive_seed
from dsh_sim.engine.machine import Simulation


def test_lazy_generators_are_seeded_from_the_simulation_seed_and_made_once():
    for seed in (0, 7, 2**40):
        sim = Simulation(seed)
        assert "fault_rng" not in vars(sim) and "perturb_rng" not in vars(sim)  # not made before first use
        faults, perturb = sim.fault_rng, sim.perturb_rng
        assert faults is sim.fault_rng and perturb is sim.perturb_rng
        expected_faults = random.Random(derive_seed(seed, "faults"))
        expected_perturb = random.Random(derive_seed(seed, "perturb"))
        assert [faults.random() for _ in range(3)] == [expected_faults.random() for _ in range(3)]
        assert [perturb.random() for _ in range(3)] == [expected_perturb.random() for _ in range(3)]
        assert faults.getstate() != perturb.getstate()
