"""Scenario files: a seed, a deployment config, a fault plan, steps, and what must happen.

The format is our own versioned JSON — not a Hypothesis blob, which is bound to one
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

``expect.require_fired`` (default true) makes replay fail loudly when a fault rule never
fired: the scenario no longer reaches its crash point.
"""

from __future__ import annotations

import json
import os
from typing import Any

import attrs

from dsh_sim.engine.config import SimConfig
from dsh_sim.engine.faults import FaultRule
from dsh_sim.outputs import write_new, write_replacing

FORMAT = "dsh-sim-scenario"
VERSION = 1
MACHINES = ("durability", "storage")


class ScenarioError(ValueError):
    """A scenario file cannot be used; the message names the file and the problem."""


@attrs.frozen
class Expectation:
    outcome: str = "pass"  # "pass" | "violation"
    invariant: str | None = None
    require_fired: bool = True

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"outcome": self.outcome}
        if self.invariant is not None:
            out["invariant"] = self.invariant
        if not self.require_fired:
            out["require_fired"] = False
        return out


@attrs.frozen
class Scenario:
    name: str
    seed: int
    steps: tuple[dict[str, Any], ...]
    config: dict[str, Any] = attrs.field(factory=dict)
    fault_plan: tuple[dict[str, Any], ...] = ()
    machine: str = "durability"
    description: str = ""
    expect: Expectation = Expectation()
    trace_digest: str | None = None
    mutants: tuple[str, ...] = ()  # durability bugs enabled for this run (self-test scenarios)
    origin: dict[str, Any] = attrs.field(factory=dict)  # how it was found (fuzz seed, shrink size...)

    @property
    def passes_clean(self) -> bool:
        """Expects a pass with no mutant switched on: coverage of the runtime as shipped,
        not a self-test of the harness (which expects a violation or enables a bug)."""
        return self.expect.outcome == "pass" and not self.mutants

    def sim_config(self) -> SimConfig:
        return SimConfig.from_json(self.config)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "name": self.name,
            "description": self.description,
            "machine": self.machine,
            "seed": self.seed,
            "config": self.config,
            "fault_plan": list(self.fault_plan),
            "steps": list(self.steps),
            "expect": self.expect.to_json(),
            "trace_digest": self.trace_digest,
        }
        if self.mutants:
            out["mutants"] = list(self.mutants)
        if self.origin:
            out["origin"] = self.origin
        return out


def parse(obj: Any, source: str = "<scenario>") -> Scenario:
    def bad(why: str) -> ScenarioError:
        return ScenarioError(f"{source}: {why}")

    if not isinstance(obj, dict):
        raise bad("not a JSON object")
    if obj.get("format") != FORMAT:
        raise bad(f'"format" must be "{FORMAT}"')
    version = obj.get("version")
    if not isinstance(version, int) or version < 1:
        raise bad('"version" must be a positive integer')
    if version > VERSION:
        raise bad(f"scenario format version {version} is newer than this dsh-sim reads (up to {VERSION}); upgrade dsh-sim")
    known = {
        "format",
        "version",
        "name",
        "description",
        "machine",
        "seed",
        "config",
        "fault_plan",
        "steps",
        "expect",
        "trace_digest",
        "mutants",
        "origin",
    }
    extra = sorted(set(obj) - known)
    if extra:
        raise bad(f"unknown keys {extra}")
    machine = obj.get("machine", "durability")
    if machine not in MACHINES:
        raise bad(f'"machine" must be one of {list(MACHINES)}, got {machine!r}')
    seed = obj.get("seed")
    if not isinstance(seed, int) or seed < 0:
        raise bad('"seed" must be a non-negative integer')
    steps = obj.get("steps")
    if not isinstance(steps, list) or not all(isinstance(s, dict) and isinstance(s.get("op"), str) for s in steps):
        raise bad('"steps" must be a list of {"op": ..., "args": {...}} objects')
    config = obj.get("config", {})
    try:
        SimConfig.from_json(config)
    except (TypeError, ValueError) as err:
        raise bad(f"invalid config: {err}") from None
    plan = obj.get("fault_plan", [])
    try:
        for rule in plan:
            FaultRule.from_json(rule)
    except (KeyError, TypeError, ValueError) as err:
        raise bad(f"invalid fault rule: {err}") from None
    expect_obj = obj.get("expect", {"outcome": "pass"})
    if not isinstance(expect_obj, dict) or expect_obj.get("outcome") not in ("pass", "violation"):
        raise bad('"expect.outcome" must be "pass" or "violation"')
    expect = Expectation(expect_obj["outcome"], expect_obj.get("invariant"), bool(expect_obj.get("require_fired", True)))
    digest = obj.get("trace_digest")
    if digest is not None and not (isinstance(digest, str) and len(digest) == 64):
        raise bad('"trace_digest" must be a sha256 hex string or null')
    return Scenario(
        name=str(obj.get("name") or os.path.splitext(os.path.basename(source))[0]),
        seed=seed,
        steps=tuple(steps),
        config=config,
        fault_plan=tuple(plan),
        machine=machine,
        description=str(obj.get("description", "")),
        expect=expect,
        trace_digest=digest,
        mutants=tuple(obj.get("mutants", ())),
        origin=dict(obj.get("origin", {})),
    )


def load(path: str) -> Scenario:
    try:
        with open(path, encoding="utf-8") as handle:
            obj = json.load(handle)
    except OSError as err:
        raise ScenarioError(f"{path}: cannot read: {err.strerror}") from None
    except ValueError as err:
        raise ScenarioError(f"{path}: not valid JSON: {err}") from None
    return parse(obj, path)


def dumps(scenario: Scenario) -> str:
    return json.dumps(scenario.to_json(), indent=2, sort_keys=False) + "\n"


def save(scenario: Scenario, path: str, *, overwrite: bool = False) -> str:
    """Write a scenario file; never overwrites an existing file unless asked, never writes
    through a symbolic link (:mod:`dsh_sim.outputs`)."""
    if overwrite:
        write_replacing(path, dumps(scenario))
    else:
        write_new(path, dumps(scenario))
    return path


def discover(root: str) -> list[str]:
    """Every ``*.json`` scenario under ``root``, sorted."""
    found = []
    for dirpath, _, files in os.walk(root):
        for name in files:
            if name.endswith(".json"):
                found.append(os.path.join(dirpath, name))
    return sorted(found)
