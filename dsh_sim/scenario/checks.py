"""What a scenario must make sense of as a whole, beyond each value's own validation.

Each check here turns a replay-time surprise into a load-time refusal with a JSON path: an
agent op on the storage machine (no agent to run it), a fault rule at a point that machine
never announces, a rule for a process lifetime the scenario never starts, a ``match`` on a
call id or tool no prompt ever emits, two calls with one id.  After these, "never fired"
at replay means the runtime really behaved differently.
"""

from __future__ import annotations

from collections.abc import Iterator

from dsh_sim.adapters.world_tools import TOOL_KINDS
from dsh_sim.engine.faults import FaultRule
from dsh_sim.engine.points import POINTS
from dsh_sim.errors import did_you_mean
from dsh_sim.scenario.args import OPS, ArmArgs, PromptArgs
from dsh_sim.scenario.model import Scenario

STORAGE_LAYERS = ("fs",)
STORAGE_RUNTIME_POINTS = ("session.flush", "persist.batch.durable") + tuple(p for p in POINTS if p.startswith("persist.migration."))
_CALL_KEYS = ("call_id", "root_call_id")
_DERIVED = (":nested:", "-retry")  # a nested call of batch_pay, a retry of retry_unknown


def rules(scenario: Scenario) -> Iterator[tuple[str, FaultRule]]:
    """Every fault rule of the scenario with its JSON path (the plan's, then the arm steps')."""
    for index, rule in enumerate(scenario.fault_plan):
        yield f"$.fault_plan[{index}]", rule
    for index, step in enumerate(scenario.steps):
        if isinstance(step.args, ArmArgs):
            yield f"$.steps[{index}].args.rule", step.args.rule


def call_ids(scenario: Scenario) -> Iterator[tuple[str, str]]:
    for index, step in enumerate(scenario.steps):
        if isinstance(step.args, PromptArgs):
            for r, response in enumerate(step.args.responses):
                for c, call in enumerate(response.tool_calls):
                    yield f"$.steps[{index}].args.responses[{r}].tool_calls[{c}].id", call.id


def check(scenario: Scenario) -> list[tuple[str, str]]:
    """(JSON path, problem) for everything that would make the scenario fail for no real reason."""
    out: list[tuple[str, str]] = []
    for index, step in enumerate(scenario.steps):
        if scenario.machine not in OPS[step.op].machines:
            out.append((f"$.steps[{index}].op", f"{step.op!r} needs an agent: it runs on the durability machine, not {scenario.machine!r}"))
    started = seeded = None
    for index, step in enumerate(scenario.steps):  # seed_v0 places the starting log: once, before any process
        if step.op == "seed_v0":
            if seeded is not None:
                out.append((f"$.steps[{index}].op", f"seed_v0 again: the log was already placed by $.steps[{seeded}]; seed_v0 comes once"))
            elif started is not None:
                out.append(
                    (
                        f"$.steps[{index}].op",
                        f"seed_v0 after $.steps[{started}] ({scenario.steps[started].op}): it must come before the first boot",
                    )
                )
            seeded = index if seeded is None else seeded
        elif step.op in ("boot", "second_writer") and started is None:
            started = index
    if not scenario.config.file_tools:
        for index, step in enumerate(scenario.steps):
            if isinstance(step.args, PromptArgs):
                for r, response in enumerate(step.args.responses):
                    for c, call in enumerate(response.tool_calls):
                        if call.name == "write_file":
                            where = f"$.steps[{index}].args.responses[{r}].tool_calls[{c}].name"
                            out.append((where, "write_file is the runtime's own tool: mount it with config.file_tools: true"))
    if not scenario.config.policy:
        for index, step in enumerate(scenario.steps):
            if isinstance(step.args, PromptArgs):
                for r, response in enumerate(step.args.responses):
                    for c, call in enumerate(response.tool_calls):
                        if call.scripts_policy:
                            where = f"$.steps[{index}].args.responses[{r}].tool_calls[{c}]"
                            out.append(
                                (where, "gate and guard answer through the deployment's policy plugin: mount it with config.policy: true")
                            )
    seen: dict[str, str] = {}
    for path, call_id in call_ids(scenario):
        if call_id in seen:
            out.append((path, f"call id {call_id!r} is already used at {seen[call_id]}; ids must be unique"))
        seen.setdefault(call_id, path)
    processes = sum(step.op in ("boot", "second_writer") for step in scenario.steps)
    retries = any(step.op == "retry_unknown" for step in scenario.steps)
    for path, rule in rules(scenario):
        point = POINTS[rule.point]
        if scenario.machine == "storage" and point.layer not in STORAGE_LAYERS and rule.point not in STORAGE_RUNTIME_POINTS:
            out.append((f"{path}.point", f"{rule.point!r} is never announced on the storage machine (no agent, model or world)"))
        if rule.lifetime is not None and rule.lifetime > processes:
            out.append((f"{path}.lifetime", f"lifetime {rule.lifetime}, but the scenario starts only {processes} process(es)"))
        for key, value in rule.match:
            if key in _CALL_KEYS and not _known_call(value, seen, retries):
                out.append((f"{path}.match.{key}", f"no prompt emits a call {value!r}{did_you_mean(value, seen)}"))
            if key == "tool" and value not in TOOL_KINDS:
                out.append((f"{path}.match.tool", f"unknown tool {value!r}{did_you_mean(value, TOOL_KINDS)}"))
    return out


def _known_call(value: object, ids: dict[str, str], retries: bool) -> bool:
    if not isinstance(value, str):
        return False
    if value in ids:
        return True
    return any(marker in value and value.split(marker)[0] in ids for marker in _DERIVED) or (retries and "-retry" in value)
