"""The machines' typed steps are exactly the steps the codec reads from the same JSON."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_sim.drivers.machines import typed
from dsh_sim.drivers.machines.strategies import (
    BOUNDARY_CHOICES,
    FS_POINTS,
    MOMENT_POINTS,
    aimed_crash_rule,
    corruptions,
    crash_specs,
    domain_faults,
    io_faults,
    turn_script,
    window_write_faults,
)
from dsh_sim.errors import FieldError
from dsh_sim.scenario.codec import step_of

faults = st.one_of(
    st.builds(lambda p, c: {"point": p, "action": "crash", "crash": c}, st.sampled_from(MOMENT_POINTS + FS_POINTS), crash_specs),
    io_faults,
    domain_faults,
    corruptions,
    window_write_faults,
)


@settings(max_examples=150, deadline=None)
@given(script=turn_script([1]))
def test_a_prompt_is_the_codecs_prompt(script: dict[str, Any]) -> None:
    assert typed.prompt(script) == step_of("prompt", script)


@settings(max_examples=150, deadline=None)
@given(fault=faults, hit=st.integers(1, 3), lifetime=st.integers(1, 5))
def test_an_armed_rule_is_the_codecs_rule(fault: dict[str, Any], hit: int, lifetime: int) -> None:
    rule = {**fault, "hit": hit, "lifetime": lifetime}
    assert typed.arm(rule) == step_of("arm", {"rule": rule})


@settings(max_examples=100, deadline=None)
@given(data=st.data(), script=turn_script([4]), boundary=st.sampled_from(BOUNDARY_CHOICES[1:]), crash=crash_specs)
def test_an_aimed_crash_is_the_codecs_rule(data: st.DataObject, script: dict[str, Any], boundary: str, crash: dict[str, Any]) -> None:
    """Aimed rules carry a ``match`` (sorted into pairs by the codec)."""
    calls = [(i + 1, c["id"]) for i, r in enumerate(script["responses"]) for c in r.get("tool_calls", ())]
    if not calls:
        return
    step, call_id = data.draw(st.sampled_from(calls))
    rule = aimed_crash_rule(script, step, call_id, boundary, crash, 2)
    assert typed.arm(rule) == step_of("arm", {"rule": rule})


def test_a_match_of_several_details_is_sorted_as_the_codec_sorts_it() -> None:
    rule = {"point": "world.deliver", "action": "crash", "match": {"root_call_id": "c1", "call_id": "c2"}}
    assert typed.arm(rule) == step_of("arm", {"rule": rule})


@given(crash=crash_specs, seconds=st.sampled_from([0.05, 0.2, 1.0]))
def test_crashes_advances_and_policy_changes_are_the_codecs(crash: dict[str, Any], seconds: float) -> None:
    assert typed.crash_now(crash) == step_of("crash_now", crash)
    assert typed.advance(seconds) == step_of("advance", {"seconds": seconds})
    for policy in ("ask", "never"):
        assert typed.policy_change("set_approval_policy", {"policy": policy}) == step_of("set_approval_policy", {"policy": policy})
    for mode in ("read-only", "workspace-write", "danger-full-access"):
        assert typed.policy_change("set_sandbox_mode", {"mode": mode}) == step_of("set_sandbox_mode", {"mode": mode})


@given(count=st.integers(1, 5), size=st.sampled_from([8, 200, 5000, 300_000]))
def test_an_append_is_the_codecs_append(count: int, size: int) -> None:
    """The storage machine's appends, with and without a size."""
    assert typed.append(count=count, size=size) == step_of("append", {"count": count, "size": size})
    assert typed.append(count=count) == step_of("append", {"count": count})


@pytest.mark.parametrize(
    "build",
    [
        lambda: typed.prompt({"text": "go", "responses": [{"text": "ok", "tool_calls": [{"id": "c1", "name": "rm_rf", "arguments": {}}]}]}),
        lambda: typed.prompt({"text": "go", "responses": [{"text": "done"}], "approvals": ["maybe"]}),
        lambda: typed.prompt({"text": "go", "responses": [{"text": "done", "colour": "red"}]}),
        lambda: typed.arm({"point": "fs.write", "action": "crash", "hit": 0}),
        lambda: typed.arm({"point": "fs.write", "action": "explode"}),
        lambda: typed.arm({"point": "world.deliver", "action": "crash", "match": {"no_such_detail": 1}}),
        lambda: typed.crash_now({"kind": "power", "state": "torn", "torn_fraction": 1.5}),
        lambda: typed.advance(-1.0),
        lambda: typed.policy_change("set_sandbox_mode", {"mode": "anything-goes"}),
        lambda: typed.policy_change("cancel", {}),
        lambda: typed.append(count=0),
        lambda: typed.append(count=10_000, size=1_000),
        lambda: typed.append(count=1, colour=2),
    ],
)
def test_what_the_codec_refuses_is_refused(build: Any) -> None:
    """Validators, point/action checks and unknown keys still refuse (as a ValueError or an
    unexpected keyword), so a strategy that drew something invalid still fails loudly."""
    with pytest.raises((FieldError, ValueError, TypeError)):
        build()
