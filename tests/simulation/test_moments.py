"""A crash at each boundary of the four moments of a ``pay`` call leaves the expected disk and ledger.

Moments: 1 the model emits the call; 2 its tool/call is durable; 3 the payment service
receives it (the ledger entry); 4 its tool/result is durable.  Each case crashes (power loss,
unsynced data dropped) between two moments and checks, before any recovery, what the disk
holds and what the ledger says — then what recovery concludes.
"""

from __future__ import annotations

import pytest

from dsh_sim.adapters.simfs.disk import Disk
from dsh_sim.drivers.machines.strategies import aimed_crash_rule
from dsh_sim.engine.machine import Simulation
from dsh_sim.evidence.checker import Checker
from dsh_sim.scenario.args import Step
from dsh_sim.scenario.codec import step_of
from dsh_sim.scenario.steps import apply
from runtime.persistence.log_format import decode_log

# c0 comes first in the same response: its checkpoint makes the shared assistant message
# durable, which is what distinguishes "not started" (message durable, no tool/call) from "lost"
SCRIPT = {
    "text": "pay bob",
    "responses": [
        {
            "text": "paying",
            "tool_calls": [
                {"id": "c0", "name": "get_balance", "arguments": {"account": "bob"}},
                {"id": "c1", "name": "pay", "arguments": {"to": "bob", "amount": 7}},
            ],
        },
        {"text": "done"},
    ],
}
CRASH = {"kind": "power", "state": "drop"}


def durable_types(sim: Simulation) -> list[tuple[str, str | None]]:
    """(type, call id) of every event that survived the power cut, before recovery."""
    data = Disk.from_image(sim.history.crashes[-1].image).read_path(sim.config.log_path)
    if data is None:
        return []
    out = []
    for event in decode_log(data, sim.config.compression).events:
        call = event.data.get("callId") if event.type == "tool/call" else None
        if event.type == "tool/result":
            call = event.data["message"]["source"]["callId"]
        if event.type == "assistant/message":
            out.extend(("assistant/message", b["id"]) for b in event.data["message"]["content"] if b.get("type") == "tool-call")
            continue
        out.append((event.type, call))
    return out


def crash_at(boundary: str) -> Simulation:
    sim = Simulation(seed=5)
    Checker.attach(sim)
    apply(sim, Step("boot"))
    apply(sim, step_of("arm", {"rule": aimed_crash_rule(SCRIPT, 1, "c1", boundary, CRASH, 1)}))
    outcome = apply(sim, step_of("prompt", SCRIPT))
    assert outcome.startswith("crashed"), outcome
    return sim


def recover(sim: Simulation) -> dict[str, str]:
    apply(sim, Step("boot"))
    verdicts = dict(sim.primary.report.verdicts)
    sim.shutdown()
    violations = Checker.of(sim).violations
    assert not violations, [v.describe() for v in violations]
    return verdicts


def test_crash_before_moment_1_the_call_does_not_exist_anywhere():
    sim = crash_at("before 1")
    assert ("assistant/message", "c1") not in durable_types(sim)
    assert sim.world.ledger == [] or all(e.call_id != "c1" for e in sim.world.ledger)
    assert "c1" not in recover(sim)


def test_crash_between_1_and_2_the_call_is_not_started_and_nothing_was_paid():
    sim = crash_at("1→2")
    survived = durable_types(sim)
    assert ("assistant/message", "c1") in survived  # c0's checkpoint made the message durable
    assert ("tool/call", "c1") not in survived
    assert not sim.world.applied_for("c1")
    assert recover(sim)["c1"] == "TOOL_NOT_STARTED"


def test_crash_between_2_and_3_the_call_is_durable_but_nothing_was_paid():
    sim = crash_at("2→3")
    assert ("tool/call", "c1") in durable_types(sim)
    assert not sim.world.applied_for("c1")
    assert recover(sim)["c1"] == "TOOL_OUTCOME_UNKNOWN"  # safe, and the harness counts its cost


def test_crash_between_3_and_4_the_payment_happened_and_its_result_is_lost():
    sim = crash_at("3→4")
    survived = durable_types(sim)
    assert ("tool/call", "c1") in survived and ("tool/result", "c1") not in survived
    assert [(e.service, e.op) for e in sim.world.applied_for("c1")] == [("payments", "charge")]
    assert recover(sim)["c1"] == "TOOL_OUTCOME_UNKNOWN"


def test_crash_after_moment_4_the_result_is_durable_and_nothing_needs_repair():
    sim = crash_at("after 4")
    assert ("tool/result", "c1") in durable_types(sim)
    assert len(sim.world.applied_for("c1")) == 1
    assert "c1" not in recover(sim)


@pytest.mark.parametrize("boundary", ["1→2", "2→3", "3→4"])
def test_a_kill_keeps_the_page_cache_but_not_the_processs_memory(boundary):
    sim = Simulation(seed=5)
    Checker.attach(sim)
    apply(sim, Step("boot"))
    apply(sim, step_of("arm", {"rule": aimed_crash_rule(SCRIPT, 1, "c1", boundary, {"kind": "kill"}, 1)}))
    apply(sim, step_of("prompt", SCRIPT))
    verdicts = recover(sim)
    assert verdicts["c1"] == ("TOOL_NOT_STARTED" if boundary == "1→2" else "TOOL_OUTCOME_UNKNOWN")
