"""Step-level minimization of a failing scenario, re-validated by plain replay.

Hypothesis shrinks the choice sequence; this pass then makes the *saved* scenario
1-minimal at the level a maintainer reads: removing any single step, model response, tool
call or scripted approval makes the failure disappear (or change invariant).  Every
candidate is replayed from scratch without Hypothesis, so the result is known to reproduce.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import attrs

from dsh_sim.drivers.replay import run_scenario
from dsh_sim.scenario.args import ArmArgs, ModelResponse, PromptArgs, Step
from dsh_sim.scenario.model import Scenario


@attrs.frozen
class Minimized:
    scenario: Scenario
    steps_before: int
    steps_after: int
    replays: int
    seconds: float


def _fails(scenario: Scenario, invariant: str) -> bool:
    result, _ = run_scenario(scenario)
    return result.invariant == invariant and not result.not_applicable


_STARTS_LIFETIME = ("boot", "second_writer")
Steps = tuple[Step, ...]


def _without(steps: Steps, start: int, count: int) -> Steps:
    """``steps`` minus ``steps[start:start+count]``, with later fault rules' lifetimes renumbered
    (removing a boot shifts every later process lifetime down by one)."""
    removed_boots = sum(1 for s in steps[start : start + count] if s.op in _STARTS_LIFETIME)
    out = list(steps[:start])
    for kept in steps[start + count :]:
        rule = kept.args.rule if isinstance(kept.args, ArmArgs) else None
        if removed_boots and rule is not None and rule.lifetime is not None:
            moved = attrs.evolve(rule, lifetime=max(1, rule.lifetime - removed_boots))
            out.append(Step("arm", ArmArgs(moved)))
        else:
            out.append(kept)
    return tuple(out)


def _with_prompt(steps: Steps, i: int, args: PromptArgs) -> Steps:
    return steps[:i] + (Step("prompt", args),) + steps[i + 1 :]


def _candidates(steps: Steps) -> list[Steps]:
    """Smaller variants: drop one or two adjacent steps; drop a response / call / approval."""
    out: list[Steps] = []
    for count in (2, 1):
        for i in range(1, len(steps) - count + 1):  # the first boot stays
            out.append(_without(steps, i, count))
    for i, step in enumerate(steps):
        args = step.args
        if not isinstance(args, PromptArgs):
            continue
        responses = args.responses
        for r in range(len(responses)):
            out.append(_with_prompt(steps, i, attrs.evolve(args, responses=responses[:r] + responses[r + 1 :])))
        for r, response in enumerate(responses):
            calls = response.tool_calls
            for c in range(len(calls)):
                fewer = calls[:c] + calls[c + 1 :]
                new_response = attrs.evolve(response, tool_calls=fewer) if fewer else ModelResponse(response.text or "done")
                out.append(_with_prompt(steps, i, attrs.evolve(args, responses=responses[:r] + (new_response,) + responses[r + 1 :])))
        approvals = args.approvals
        for a in range(len(approvals)):
            out.append(_with_prompt(steps, i, attrs.evolve(args, approvals=approvals[:a] + approvals[a + 1 :])))
    return out


def minimize(scenario: Scenario, invariant: str, *, budget: float = 60.0, progress: Callable[[str], None] | None = None) -> Minimized:
    started = time.perf_counter()
    current = scenario
    replays = 0
    improved = True
    while improved and time.perf_counter() - started < budget:
        improved = False
        for steps in _candidates(current.steps):
            if time.perf_counter() - started >= budget:
                break
            candidate = attrs.evolve(current, steps=steps)
            replays += 1
            if _fails(candidate, invariant):
                current = candidate
                improved = True
                if progress is not None:
                    progress(f"minimized to {len(steps)} steps")
                break
    return Minimized(current, len(scenario.steps), len(current.steps), replays, time.perf_counter() - started)


def set_hypothesis_shrink_budget(seconds: float) -> None:
    """Cap Hypothesis' total shrinking time (a private engine constant; skipped if absent)."""
    try:
        from hypothesis.internal.conjecture import engine
    except ImportError:  # pragma: no cover - layout changed in a future Hypothesis
        return
    if hasattr(engine, "MAX_SHRINKING_SECONDS"):
        # assignment: Hypothesis annotates its private constant int; it only adds it to a perf_counter() time
        engine.MAX_SHRINKING_SECONDS = seconds  # type: ignore[assignment]
