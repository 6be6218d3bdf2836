"""The machines' steps built as typed values directly, not structured from JSON.

A rule draws plain JSON (what a found scenario writes) and turns it into a
:class:`~dsh_sim.scenario.args.Step`.  Going through the codec's converter
(:func:`dsh_sim.scenario.codec.step_of`) paid for dispatch and error bookkeeping meant for
files written by hand: about 1 % of a fuzz run's instructions, half of it saved here (the
rest is the validators).  What the strategies draw has the right types by construction, so
the machines call the args classes themselves: every field's validator (ranges, members,
lengths) and every ``__attrs_post_init__`` check still runs, an unknown key is still refused
(an unexpected keyword), and ``tests/test_machines_typed.py`` shows the result equal to
``step_of``'s for everything the strategies draw.
"""

from __future__ import annotations

from typing import Any

from dsh_sim.engine.faults import CrashSpec, FaultRule
from dsh_sim.scenario.args import (
    AdvanceArgs,
    AppendArgs,
    ArmArgs,
    ModelResponse,
    PromptArgs,
    SetApprovalPolicyArgs,
    SetSandboxModeArgs,
    Step,
    ToolCall,
)


def crash_spec(spec: dict[str, Any]) -> CrashSpec:
    return CrashSpec(**spec)


def fault_rule(rule: dict[str, Any]) -> FaultRule:
    """A rule as the codec reads it: ``crash`` a crash spec, ``match`` sorted (key, value) pairs."""
    fields = dict(rule)
    if fields.get("crash") is not None:
        fields["crash"] = crash_spec(fields["crash"])
    if "match" in fields:
        fields["match"] = tuple(sorted(fields["match"].items()))
    return FaultRule(**fields)


def _response(response: dict[str, Any]) -> ModelResponse:
    calls = tuple(ToolCall(**call) for call in response.get("tool_calls", ()))
    return ModelResponse(**{**response, "tool_calls": calls})


def prompt(script: dict[str, Any]) -> Step:
    fields = dict(script)
    fields["responses"] = tuple(_response(r) for r in fields.get("responses", ()))
    fields["approvals"] = tuple(fields.get("approvals", ()))
    return Step("prompt", PromptArgs(**fields))


def arm(rule: dict[str, Any]) -> Step:
    return Step("arm", ArmArgs(fault_rule(rule)))


def append(*, count: int = 1, size: int = 8, value: str | None = None, via: str = "session") -> Step:
    """The storage machine's appends (``count``, ``size`` or an edge ``value``, at either seam)."""
    return Step("append", AppendArgs(count=count, size=size, value=value, via=via))


def crash_now(spec: dict[str, Any]) -> Step:
    return Step("crash_now", crash_spec(spec))


def advance(seconds: float) -> Step:
    return Step("advance", AdvanceArgs(seconds))


def policy_change(op: str, args: dict[str, Any]) -> Step:
    """``set_approval_policy`` or ``set_sandbox_mode`` (what ``change_policy`` draws)."""
    if op == "set_approval_policy":
        return Step(op, SetApprovalPolicyArgs(**args))
    if op == "set_sandbox_mode":
        return Step(op, SetSandboxModeArgs(**args))
    raise ValueError(f"not a policy change: {op!r}")
