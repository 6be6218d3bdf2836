"""A scenario file as the DSH route can run it — or the one reason it cannot.

The route runs what a published DSH deployment can be asked to do: boot (create or resume
the session), prompts answered by the scripted model (tool calls to the world tools, answers
to approval questions), flushes, time passing, and crashes — ``crash_now`` or a fault rule
whose action is ``crash`` at a point the route has (:data:`~.points.FROM_OURS`).  Everything
else a scenario can say is dsh-sim's own machinery (injected I/O errors, a second writer,
links planted under the root, historical logs, cancellation, policy gates...); such a
scenario is *skipped* with its reason, and counted.
"""

from __future__ import annotations

import attrs

from dsh_sim.engine.config import SimConfig
from dsh_sim.engine.faults import CrashSpec, FaultRule
from dsh_sim.scenario.args import PromptArgs, Step
from dsh_sim.scenario.model import Scenario

from .points import FROM_OURS

STEPS = frozenset({"boot", "prompt", "crash_now", "flush", "advance", "arm", "cancel"})
WORLD_TOOLS = frozenset({"pay", "pay_legacy", "send_message", "get_balance", "lookup_payment", "write_note", "no_such_tool"})
_DEFAULT = SimConfig()
# configuration the route has no counterpart for, when it differs from the default
_UNSUPPORTED_CONFIG = ("perturb", "execute_plugin", "post_execute_note", "file_tools", "model_uncancellable", "policy", "max_steps")
_APPROVALS = frozenset({"allowed-once", "rejected", "unavailable", "cancelled", "hang"})  # answers DSH's seam knows (hang: none)


# actions the route host can apply, and where (besides ``crash``, which every point allows)
_WORLD_FAULTS = {
    "world.deliver": frozenset({"delay", "cancel", "request_lost", "timeout", "duplicate"}),
    "world.respond": frozenset({"delay", "cancel", "response_lost", "timeout"}),
}
_WATERFALL = frozenset({"route.pre_step", "route.llm.request", "route.tools.body", "route.tools.execute", "route.turn_stopping"})


def allowed(point: str, action: str) -> bool:
    if action == "crash":
        return True
    if point in _WORLD_FAULTS:
        return action in _WORLD_FAULTS[point]
    if action == "tool_failure":
        return point == "route.tools.body"
    if action == "delay":
        return point in _WATERFALL  # a session/event observer is synchronous: it cannot wait
    return action == "cancel" and point.startswith("route.")


@attrs.frozen
class RouteRule:
    """A fault rule in route points: fire on the ``hit``-th matching announcement, ``times`` in a row."""

    point: str
    hit: int
    lifetime: int | None
    match: tuple[tuple[str, object], ...]
    crash: CrashSpec
    action: str = "crash"
    times: int = 1
    delay: float = 0.0


@attrs.frozen
class RouteProgram:
    scenario: Scenario
    steps: tuple[Step, ...]
    rules: tuple[RouteRule, ...]  # the plan's rules, then each ``arm`` in order (armed: index into steps)
    armed_at: tuple[int, ...]  # for each rule, the step index from which it applies (-1: from the start)

    @property
    def config(self) -> SimConfig:
        return self.scenario.config


@attrs.frozen
class Skip:
    reason: str


def _rule(rule: FaultRule) -> RouteRule | str:
    point = FROM_OURS.get(rule.point)
    if point is None:
        return f"point {rule.point} has no counterpart on the DSH route"
    if not allowed(point, rule.action):
        return f"fault action {rule.action!r} at {rule.point} (not one the route host can apply there)"
    if rule.crash is not None and rule.crash.kind == "power" and rule.crash.state not in ("drop", "keep", "torn"):
        return f"power state {rule.crash.state!r} (its cut names dsh-sim's own writes; explore covers every state of DSH's)"
    if point.startswith("fs.") and rule.match:
        return f"a rule at {rule.point} matching {', '.join(k for k, _ in rule.match)} (DSH's files are named and written differently)"
    return RouteRule(
        point, rule.hit, rule.lifetime, tuple(rule.match), rule.crash or CrashSpec(), rule.action, rule.times, float(rule.delay)
    )


def _prompt(args: PromptArgs) -> str | None:
    for response in args.responses:
        if response.finish not in (None, "stop", "tool-calls", "max-tokens"):
            return f"finish {response.finish!r}"
        for call in response.tool_calls:
            if call.name not in WORLD_TOOLS:
                return f"tool {call.name!r} (no world tool of that name on the route host)"
            if call.scripts_policy:
                return "policy gates on a tool call"
    for answer in args.approvals:
        if answer not in _APPROVALS:
            return f"approval answer {answer!r}"
    return None


def translate(scenario: Scenario) -> RouteProgram | Skip:
    """The route's reading of ``scenario``, or why it has none."""
    if scenario.mutants:
        return Skip("switches on dsh-sim runtime mutants")
    if scenario.machine != "durability":
        return Skip(f"machine {scenario.machine!r} drives the storage API, not the route")
    config = scenario.config
    for name in _UNSUPPORTED_CONFIG:
        if getattr(config, name) != getattr(_DEFAULT, name):
            return Skip(f"config {name} (no counterpart on the DSH route)")
    rules: list[RouteRule] = []
    armed: list[int] = []
    for rule in scenario.fault_plan:
        translated = _rule(rule)
        if isinstance(translated, str):
            return Skip(translated)
        rules.append(translated)
        armed.append(-1)
    for index, step in enumerate(scenario.steps):
        if step.op not in STEPS:
            return Skip(f"step {step.op!r}")
        if step.op == "arm":
            translated = _rule(step.args.rule)
            if isinstance(translated, str):
                return Skip(translated)
            rules.append(translated)
            armed.append(index)
        elif step.op == "prompt":
            reason = _prompt(step.args)
            if reason is not None:
                return Skip(reason)
        elif step.op == "flush" and step.args.cancel_first_after is not None:
            return Skip("a flush cancelled part-way")
        elif step.op == "crash_now" and step.args.kind == "power" and step.args.state not in ("drop", "keep", "torn"):
            return Skip(f"power state {step.args.state!r} (its cut names dsh-sim's own writes; explore covers every state of DSH's)")
    return RouteProgram(scenario, scenario.steps, tuple(rules), tuple(armed))
