"""``dsh-sim fuzz --runtime dsh-route``: Hypothesis draws scenarios the route can express, runs
each on DSH's route and on dsh-sim's runtime, and shrinks any run the judges or the differential
fault to a minimal scenario file.

A drawn scenario: one to three prompts, each one to three model responses calling the world
tools (payments keyed and unkeyed, a message behind approval with the user's answers, reads that
may run in parallel, a note), a crash rule at a route point both runtimes have (kill, or a power
loss dropping or keeping what was unsynced) and a recovery boot with a prompt after it.  A run
fails when an invariant is violated or the two runtimes differ, unless a documented finding
explains it.  Hypothesis shrinks the failing scenario; it is saved under ``found_dir`` as a
scenario file that ``dsh-sim replay --runtime dsh-route`` reproduces.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import attrs
from hypothesis import HealthCheck, Phase, given, reject, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from dsh_sim.adapters.world_tools import TOOL_EXAMPLES
from dsh_sim.drivers.constants import fixed_constants
from dsh_sim.dsh.install import Installation
from dsh_sim.engine.faults import CrashSpec, FaultRule
from dsh_sim.scenario.args import ArmArgs, ModelResponse, PromptArgs, Step, ToolCall
from dsh_sim.scenario.files import dumps, save_found
from dsh_sim.scenario.model import Expectation, Scenario

from .differential import compare
from .judge import judge
from .program import Skip, translate
from .run import RouteError, run_route

TOOLS = ("pay", "pay_legacy", "send_message", "get_balance", "lookup_payment", "write_note")
CRASH_POINTS = (
    "agent.turn.start",
    "agent.pre_step",
    "llm.request",
    "agent.assistant.appended",
    "tools.call.appended",
    "tools.execute.body",
    "world.deliver",
    "world.respond",
    "tools.result.appended",
    "agent.turn.end",
)


@attrs.frozen
class RouteFuzzRun:
    """A fuzz campaign on the route: how much ran, and the minimal failing scenario if any."""

    seed: int
    examples: int
    crashes: int
    seconds: float
    found: str | None = None  # the saved scenario file
    problems: tuple[str, ...] = ()  # what the minimal scenario violates or where the runtimes differ


@st.composite
def _response(draw: Any, ids: list[int]) -> ModelResponse:
    calls = []
    for name in draw(st.lists(st.sampled_from(TOOLS), max_size=3)):
        ids[0] += 1
        calls.append(ToolCall(f"c{ids[0]}", name, dict(TOOL_EXAMPLES[name])))
    return ModelResponse(text=draw(st.sampled_from(("working", "paying", "checking"))), tool_calls=tuple(calls))


@st.composite
def scenarios(draw: Any) -> Scenario:
    ids = [0]
    steps: list[Step] = [Step("boot")]
    point = draw(st.sampled_from(CRASH_POINTS))
    kind = draw(st.sampled_from(("kill", "power")))
    crash = CrashSpec(kind, draw(st.sampled_from(("drop", "keep")))) if kind == "power" else CrashSpec()
    steps.append(Step("arm", ArmArgs(FaultRule(point, "crash", hit=draw(st.integers(1, 3)), lifetime=1, crash=crash))))
    for _prompt in range(draw(st.integers(1, 2))):
        responses = [draw(_response(ids)) for _ in range(draw(st.integers(1, 3)))]
        approvals = draw(st.lists(st.sampled_from(("allowed-once", "rejected")), max_size=2))
        steps.append(Step("prompt", PromptArgs(responses=(*responses, ModelResponse("done")), approvals=tuple(approvals))))
    steps += [Step("boot"), Step("prompt", PromptArgs(text="after the crash", responses=(ModelResponse("done"),)))]
    return Scenario(
        name="route-fuzz",
        seed=draw(st.integers(0, 2**32 - 1)),
        steps=tuple(steps),
        expect=Expectation(require_fired=False),  # a drawn hit the run never reaches is no failure
        description="drawn by dsh-sim fuzz --runtime dsh-route",
    )


def _fail(problems: list[str]) -> None:
    """One place that raises a failure: Hypothesis tells failures apart by where they are raised,
    and a replay answered from the cache must be the same failure."""
    raise AssertionError("\n".join(problems))


def problems_of(install: Installation, scenario: Scenario, plugins: dict[str, Any] | None = None) -> tuple[list[str], int]:
    """What the route's judges and the differential find in one scenario (and its crash count)."""
    program = translate(scenario)
    if isinstance(program, Skip):
        raise AssertionError(f"the fuzzer drew a scenario the route cannot express: {program.reason}")
    try:
        run = run_route(install, program, **(plugins or {}))
    except RouteError as err:
        return [f"the route host failed: {err}"], 0
    violations, _checked = judge(run)
    out = [v.line() for v in violations if v.finding is None]
    comparison = compare(program, run)
    out += [f"differs from dsh-sim: {d.line()}" for d in comparison.unexplained]
    return out, len(run.crashes)


def route_fuzz(
    install: Installation,
    *,
    examples: int,
    budget: float,
    seed: int,
    found_dir: str,
    progress: Callable[[int, int, float], None] | None = None,
    plugins: dict[str, Any] | None = None,
    shrink_limit: int = 60,
) -> RouteFuzzRun:
    """``shrink_limit``: at most this many scenarios run while shrinking a failure; later
    candidates count as passing.  A count, not Hypothesis' own limit of 300 s of shrinking, so
    the scenario saved is the same on a loaded machine as on a quiet one."""
    started = time.perf_counter()
    state = {"examples": 0, "crashes": 0, "shrinking": 0}
    failing: list[tuple[Scenario, list[str]]] = []
    outcomes: dict[str, list[str]] = {}  # scenario text -> its problems (Hypothesis replays the minimal one)

    @settings(
        settings.get_profile("default"),  # Hypothesis' own defaults, not a profile a host process loaded
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=False,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @hypothesis_seed(seed)
    @given(scenarios())
    def check(scenario: Scenario) -> None:
        if time.perf_counter() - started > budget and not failing:
            reject()  # out of budget: draw no more (a failure found already is still shrunk)
        key = dumps(scenario)
        known = outcomes.get(key)
        if known is not None:
            if known:
                _fail(known)
            return
        if failing:
            state["shrinking"] += 1
            if state["shrinking"] > shrink_limit:
                return  # the shrinking budget is spent: this candidate is not run
        problems, crashes = problems_of(install, scenario, plugins)
        outcomes[key] = problems
        state["examples"] += 1
        state["crashes"] += crashes
        if progress is not None:
            progress(state["examples"], state["crashes"], time.perf_counter() - started)
        if problems:
            failing.append((scenario, problems))
            _fail(problems)

    try:
        # the constants Hypothesis mixes into its draws come from the project's source, not from
        # whatever modules this process happens to have imported (as dsh-sim's own fuzz does)
        with fixed_constants():
            check()
    except AssertionError:
        pass
    except Exception as err:  # Hypothesis gives up when every draw past the budget is rejected
        if type(err).__name__ not in ("Unsatisfiable", "FailedHealthCheck"):
            raise
    seconds = time.perf_counter() - started
    if not failing:
        return RouteFuzzRun(seed, state["examples"], state["crashes"], seconds)
    minimal, problems = failing[-1]  # Hypothesis replays the minimal example last
    minimal = attrs.evolve(
        minimal, origin={"fuzz": "dsh-route", "seed": seed}, description=f"found by dsh-sim fuzz --runtime dsh-route --seed {seed}"
    )
    path = save_found(minimal, found_dir)
    return RouteFuzzRun(seed, state["examples"], state["crashes"], seconds, path, tuple(problems))
