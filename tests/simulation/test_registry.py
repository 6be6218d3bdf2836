"""The invariant registry is the one list, and the checker runs exactly what it holds.

Each invariant is one object (name, description, its checks at the hooks it listens to) listed
once in ``dsh_sim/evidence/invariants/registry.py``; the checker loops over it.  These tests
pin both halves: the registry is complete and well formed, and an invariant's checks run at
their hooks with no line of the checker naming them.
"""

from __future__ import annotations

import os
import typing
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from dsh_sim.drivers.replay import run_scenario
from dsh_sim.engine.points import POINTS
from dsh_sim.engine.vocabulary import INVARIANT_NAMES
from dsh_sim.evidence.invariants import base, moments, registry
from dsh_sim.evidence.invariants.base import Invariant, fail
from dsh_sim.scenario.files import load
from tests.support.paths import ROOT

HOOKS = frozenset(typing.get_args(base.Hook))


def test_the_registry_holds_the_scenario_languages_names_once_in_their_order() -> None:
    assert tuple(invariant.name for invariant in registry.REGISTRY) == INVARIANT_NAMES
    assert list(registry.INVARIANTS) == list(INVARIANT_NAMES)
    assert all(registry.BY_NAME[name].description == registry.INVARIANTS[name] for name in INVARIANT_NAMES)


@pytest.mark.parametrize("invariant", registry.REGISTRY, ids=lambda i: i.name)
def test_each_invariant_says_what_must_hold_and_where_it_is_judged(invariant: Invariant) -> None:
    assert len(invariant.description) > 40, "what must hold, in a sentence"
    assert set(invariant.checks) <= HOOKS
    assert all(callable(check) for check in invariant.checks.values())
    if invariant.judged_by is not None:  # judged outside a simulation's checker: the module that does it exists
        __import__(invariant.judged_by)
    for point in invariant.points or ():
        assert point in POINTS, f"{invariant.name} listens to an undeclared point {point}"


def test_an_invariant_is_either_checked_at_hooks_or_judged_elsewhere() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        Invariant("x", "y")
    with pytest.raises(ValueError, match="exactly one"):
        Invariant("x", "y", checks={"step": lambda obs, m: None}, judged_by="somewhere")
    with pytest.raises(ValueError, match="point hook"):
        Invariant("x", "y", checks={"step": lambda obs, m: None}, points=frozenset({"llm.request"}))


def test_a_point_reaches_exactly_the_invariants_listening_to_it() -> None:
    at_body = registry.checks_at_point("tools.execute.body")
    listeners = [i for i in registry.REGISTRY if "point" in i.checks and (i.points is None or "tools.execute.body" in i.points)]
    assert at_body == tuple(i.checks["point"] for i in listeners)
    assert {i.name for i in listeners} >= {"checkpoint_before_effect", "approval_gate", "durable_when_acknowledged", "points_truthful"}
    assert registry.checks_at_point("fs.write") == (registry.BY_NAME["lease_held"].checks["point"],)  # (a simulator's port: only the lease)
    with pytest.raises(Exception, match="nope"):
        registry.checks_at_point("nope.not.a.point")


@attrs.define
class _Seen:
    hooks: dict[str, int] = attrs.field(factory=dict)
    moments: dict[str, set[type]] = attrs.field(factory=dict)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Seen]:
    """``route_agrees`` (judged outside the checker) swapped for one that listens at every hook
    and reports once at the first recovery — registered, not wired into the checker."""
    seen = _Seen()

    def check(hook: str) -> Any:
        def record(obs: base.Judge, moment: object) -> None:
            seen.hooks[hook] = seen.hooks.get(hook, 0) + 1
            seen.moments.setdefault(hook, set()).add(type(moment))
            obs.count("route_agrees")
            if hook == "recovery":
                fail(obs, "route_agrees", "seen at the first recovery")

        return record

    spy_invariant = Invariant("route_agrees", "a spy at every hook, for this test", checks={hook: check(hook) for hook in HOOKS})
    swapped = tuple(spy_invariant if i.name == "route_agrees" else i for i in registry.REGISTRY)
    monkeypatch.setattr(registry, "REGISTRY", swapped)
    registry.checks_at.cache_clear()
    registry.checks_at_point.cache_clear()
    try:
        yield seen
    finally:
        monkeypatch.undo()
        registry.checks_at.cache_clear()
        registry.checks_at_point.cache_clear()


def test_the_checker_runs_what_the_registry_holds_at_each_hook(spy: _Seen) -> None:
    scenario = load(os.path.join(ROOT, "scenarios", "starter", "boundary-3-4-pay.json"))
    result, _ = run_scenario(scenario)
    assert [v.invariant for v in result.violations] == ["route_agrees"]  # (the runtime holds every other one)
    assert result.stats["checked"]["route_agrees"] == sum(spy.hooks.values())
    # a crash and its recovery, steps, a live log, acknowledgements, named points, stops
    for hook in ("acknowledged", "point", "before_boot", "boot", "recovery", "step", "live", "shutdown", "end"):
        assert spy.hooks.get(hook, 0) >= 1, f"never called at {hook}: {spy.hooks}"
    assert spy.hooks["recovery"] == 1 and spy.hooks["boot"] == 2  # (two processes; the second recovered the crash)
    expected = {
        "acknowledged": moments.Acknowledged,
        "point": moments.Point,
        "before_boot": moments.BeforeBoot,
        "boot": moments.Boot,
        "recovery": moments.Boot,
        "step": moments.Step,
        "live": moments.Live,
        "shutdown": moments.Shutdown,
        "end": moments.Shutdown,
    }
    assert {hook: spy.moments[hook] for hook in expected} == {hook: {kind} for hook, kind in expected.items()}


def test_without_the_spy_the_same_scenario_holds_every_invariant() -> None:
    scenario = load(os.path.join(ROOT, "scenarios", "starter", "boundary-3-4-pay.json"))
    result, _ = run_scenario(scenario)
    assert result.violations == ()
    assert result.stats["checked"]["route_agrees"] == 0  # (judged by the route differential, not here)
