"""Scenarios as typed values: a seed, a deployment config, a fault plan, steps, and what must happen.

The file format is our own versioned JSON — not a Hypothesis blob, which is bound to one
Hypothesis version and strategy — so a scenario stays replayable as the code evolves::

    {
      "format": "dsh-sim-scenario", "version": 1,
      "name": "pay-crash-between-2-and-3",
      "description": "power loss after the tool/call checkpoint, before the payment",
      "machine": "durability",
      "seed": 7,
      "config": {"compression": "zstd", "checkpoint_policy": true},
      "fault_plan": [{"point": "tools.execute.body", "action": "crash", "hit": 1,
                      "crash": {"kind": "power", "state": "drop"}}],
      "steps": [{"op": "boot", "args": {}}, {"op": "prompt", "args": {...}}],
      "expect": {"outcome": "pass"},          # or {"outcome": "violation", "invariant": "..."}
      "trace_digest": "sha256 hex of the run's trace"
    }

A file is parsed once (:mod:`dsh_sim.scenario.codec`, :mod:`dsh_sim.scenario.files`) into a
:class:`Scenario` holding typed steps, rules and config; every driver consumes these values.
``expect.require_fired`` (default true) makes replay fail loudly when a fault rule never
fired: the scenario no longer reaches its crash point.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from dsh_sim.engine.bounds import at_most, each, integer, member, optional, text
from dsh_sim.engine.config import SimConfig
from dsh_sim.engine.faults import FaultRule
from dsh_sim.engine.vocabulary import INVARIANT_NAMES, MACHINES
from dsh_sim.errors import FieldError, InputError
from dsh_sim.mutants.catalogue import CATALOGUE
from dsh_sim.scenario.args import Step

FORMAT = "dsh-sim-scenario"
VERSION = 1
OUTCOMES = ("pass", "violation")
MAX_STEPS = 10_000
_DIGEST = re.compile(r"[0-9a-f]{64}")


class ScenarioError(InputError, ValueError):
    """A scenario cannot be used; the message names the file, the JSON path and the problem.

    ``problems`` holds every problem found (the message shows the first)."""

    def __init__(self, message: str, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems or (message,)


def _digest(_inst: Any, attribute: Any, value: Any) -> None:
    if value is not None and not (isinstance(value, str) and _DIGEST.fullmatch(value)):
        raise FieldError(attribute.name, f"must be a sha256 hex string (64 lowercase hex digits) or null, got {value!r}")


@attrs.frozen
class Expectation:
    outcome: str = attrs.field(default="pass", validator=member(OUTCOMES, "outcome"), metadata={"doc": "pass, or violation (a self-test)"})
    invariant: str | None = attrs.field(
        default=None, validator=optional(member(INVARIANT_NAMES, "invariant")), metadata={"doc": "outcome violation: which invariant fails"}
    )
    require_fired: bool = attrs.field(default=True, metadata={"doc": "replay fails when a fault rule never fired"})

    def __attrs_post_init__(self) -> None:
        if self.outcome == "pass" and self.invariant is not None:
            raise FieldError("invariant", 'names the invariant a "violation" outcome expects; a "pass" has none')


@attrs.frozen
class Scenario:
    name: str = attrs.field(validator=text(200))
    seed: int = attrs.field(validator=integer(0, 2**64 - 1))
    steps: tuple[Step, ...] = attrs.field(validator=at_most(MAX_STEPS))
    config: SimConfig = attrs.field(factory=SimConfig)
    fault_plan: tuple[FaultRule, ...] = ()
    machine: str = attrs.field(default="durability", validator=member(MACHINES, "machine"))
    description: str = attrs.field(default="", validator=text(10_000))
    expect: Expectation = Expectation()
    trace_digest: str | None = attrs.field(default=None, validator=_digest)
    # durability bugs enabled for this run (self-test scenarios)
    mutants: tuple[str, ...] = attrs.field(default=(), validator=each(member(CATALOGUE, "mutant")))
    origin: dict[str, Any] = attrs.field(factory=dict, eq=False)  # how it was found (fuzz seed, shrink size...)

    @property
    def passes_clean(self) -> bool:
        """Expects a pass with no mutant switched on: coverage of the runtime as shipped,
        not a self-test of the harness (which expects a violation or enables a bug)."""
        return self.expect.outcome == "pass" and not self.mutants

    def sim_config(self) -> SimConfig:
        return self.config
