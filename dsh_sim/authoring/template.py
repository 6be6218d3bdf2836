"""``dsh-sim new``: a scenario template for a crash at one boundary of one tool call.

The template is the shape of the committed boundary scenarios: boot, arm a crash aimed at
the chosen moment of call ``c1`` (after a read-only call ``c0``, so the assistant message is
durable first), the prompt, a reboot that recovers, and one more turn.  It validates as
written and replays as intended; edit the tool's arguments, the crash, or add steps.
"""

from __future__ import annotations

from typing import Any

from dsh_sim.adapters.world_tools import TOOL_EXAMPLES, TOOL_KINDS
from dsh_sim.drivers.machines.strategies import aimed_crash_rule
from dsh_sim.engine.vocabulary import BOUNDARIES, BOUNDARY_ALIASES
from dsh_sim.errors import InputError, one_of
from dsh_sim.scenario.codec import step_of
from dsh_sim.scenario.model import Scenario

SEED = 20261130
_SLUG = {"before 1": "before-1", "1→2": "1-2", "2→3": "2-3", "3→4": "3-4", "after 4": "after-4"}


def template(tool: str = "pay", boundary: str = "2→3", crash: str = "kill", name: str | None = None) -> Scenario:
    if tool not in TOOL_KINDS:
        raise InputError("--tool: " + one_of(tool, TOOL_KINDS, "tool"))
    boundary = BOUNDARY_ALIASES.get(boundary, boundary)
    if boundary not in BOUNDARIES:
        raise InputError(one_of(boundary, BOUNDARIES, "boundary"))
    if crash not in ("kill", "power"):
        raise InputError(one_of(crash, ("kill", "power"), "crash kind"))
    crash_spec: dict[str, Any] = {"kind": "kill"} if crash == "kill" else {"kind": "power", "state": "drop"}
    calls = [
        {"id": "c0", "name": "get_balance", "arguments": {"account": "bob"}},
        {"id": "c1", "name": tool, "arguments": TOOL_EXAMPLES[tool]},
    ]
    approvals = ["allowed-once"] if tool == "send_message" else []
    prompt = {"text": "go", "responses": [{"text": "working", "tool_calls": calls}, {"text": "done"}], "approvals": approvals}
    rule = aimed_crash_rule(prompt, 1, "c1", boundary, crash_spec, 1)
    steps = (
        step_of("boot"),
        step_of("arm", {"rule": rule}),
        step_of("prompt", prompt),
        step_of("boot"),
        step_of("prompt", {"text": "after recovery", "responses": [{"text": "done"}]}),
    )
    return Scenario(
        name=name or f"{_SLUG[boundary]}-{tool}-{crash}",
        seed=SEED,
        steps=steps,
        description=f"{crash} crash {boundary} of a {tool} call (preceded by a read-only call); recovery must tell the truth",
    )
