"""Failure paths and damaged logs: the fault sweep and the reader differential.

Here because both go past what a scenario states — an I/O error and a cancellation at every
position of every durability sequence; every runtime read entry point on logs cut, damaged
and moved under the reader — and report where the runtime's handling differs from the model.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import attrs

from dsh_sim.drivers import readers as readers_driver
from dsh_sim.drivers.faultsweep import SweepResult
from dsh_sim.drivers.faultsweep import sweep as sweep_driver
from dsh_sim.drivers.readers import ReaderRun
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.operations.scenarios import Target, expand, load, scenario_of
from dsh_sim.outputs import check_output_dir
from dsh_sim.scenario.files import save_found

__all__ = ["ReaderRun", "Sweep", "SweepResult", "readers", "sweep"]


@attrs.frozen
class Sweep:
    """One scenario swept: the driver's result and, per violation, the scenario file that
    replays it (``None``: not saved)."""

    result: SweepResult
    saved: tuple[str | None, ...] = ()

    @property
    def failed(self) -> bool:
        """A violation was found, or the scenario itself does not hold (nothing was swept)."""
        return bool(self.result.violations or self.result.baseline)

    def row(self) -> dict[str, Any]:
        """The JSON object ``dsh-sim sweep --json`` prints for this scenario."""
        result = self.result
        return {
            "scenario": result.scenario,
            "positions": len(result.positions),
            "runs": result.runs,
            "not_applicable": result.not_applicable,
            "bridged": result.bridged,
            "replays": result.replays,
            "baseline": list(result.baseline),
            "violations": [
                {
                    "invariant": found.violation.invariant,
                    "action": found.action,
                    "position": found.position.describe(),
                    "message": found.violation.describe(),
                    "scenario": self.saved[index] if index < len(self.saved) else None,
                }
                for index, found in enumerate(result.violations)
            ],
            "seconds": round(result.seconds, 3),
        }


def sweep(target: Target, *, found_dir: str | None = "scenarios/found") -> Sweep:
    """Replay one scenario once per position of every durability sequence and per action (an
    I/O error, a cancellation) with that fault added, every run judged; each violation is
    saved as a replayable scenario under ``found_dir`` (``None``: not saved)."""
    scenario, _ = scenario_of(target)
    if found_dir is not None:
        check_output_dir(found_dir, "found directory")
    with capture_runtime_logs():
        result = sweep_driver(scenario)
    saved = tuple(save_found(found.repro, found_dir) if found_dir is not None else None for found in result.violations)
    return Sweep(result, saved)


def readers(*, seed: int = 1, sample: bool = False, scenarios: Sequence[str] | None = None) -> ReaderRun:
    """The reader differential: every runtime read entry point over logs cut at every byte of
    their last frame or line, damaged, bloated and moved under the reader, compared exactly
    with the spec's reader.  ``sample``: the seeded sample the mutation test command runs;
    ``scenarios``: files whose logs join the cases (default: two of the committed corpus)."""
    from dsh_sim.mutation import harness

    plan = harness.READER_PLAN if sample else readers_driver.FULL_PLAN
    plan = readers_driver.Plan(seed, plan.tear_limit, plan.flips, plan.bomb_limit)
    if scenarios is None:
        loaded = harness.named(harness.corpus(), readers_driver.READER_SCENARIOS, "reader set")
    else:
        loaded = [load(path) for path in expand(scenarios)]
    started = time.perf_counter()
    run = readers_driver.differential(readers_driver.default_sources(seed), readers_driver.corpus_originals(loaded), plan)
    return attrs.evolve(run, seconds=time.perf_counter() - started)
