"""A scenario written from docs/scenario-reference.md alone (by a reviewer who had not read the
loader or the corpus) validates and replays as intended on the first try."""

from __future__ import annotations

import os

from dsh_sim import api
from dsh_sim.drivers.replay import run_scenario
from tests.support.paths import DATA

HERE = os.path.join(DATA, "from-reference-crash-after-pay-effect.json")


def test_validates_and_replays_as_written() -> None:
    assert api.validate(HERE).ok
    result = api.replay(HERE)
    assert result.ok, result.problems
    assert result.row()["outcomes"] == ["booted", "crashed:world.respond", "booted", "turn:completed", "ok"]


def test_the_crash_lands_where_the_reference_says() -> None:
    """world.respond: the effect happened, the response is on its way back — so repair must say
    TOOL_OUTCOME_UNKNOWN for an applied payment (never TOOL_NOT_STARTED)."""
    run, _ = run_scenario(api.load(HERE))
    (case,) = run.cases
    assert case["point"] == "world.respond" and case["kind"] == "kill" and case["recovered"]
    assert case["calls"] == [{"id": "c1", "boundary": "3→4", "outcome": "TOOL_OUTCOME_UNKNOWN", "applied": True}]
    assert not run.violations
