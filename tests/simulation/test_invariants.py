"""Every named invariant fails on a bug it guards against.

End to end where a realistic bug exists: a durability mutant switched on while a starter
scenario replays (or a seeded harness bug for the harness's own guard).  Where the runtime
has defence in depth that a single bug cannot get past, the check is shown failing on the
evidence such a bug would leave.
"""

from __future__ import annotations

import os

import attrs
import pytest

from dsh_sim.adapters.simfs.view import ProcessView
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.evidence import invariants as inv
from dsh_sim.scenario.files import load
from dsh_sim.scenario.model import Expectation
from runtime.session.events import Event
from tests.support.paths import ROOT

STARTER = os.path.join(ROOT, "scenarios", "starter")

# invariant -> (mutant, starter scenario that exposes it)
BY_MUTANT = [
    ("acked_events_survive", "persist.skip_fsync_on_append", "boundary-2-3-pay"),
    ("committed_bytes_stable", "persist.skip_dir_fsync_after_link", "boundary-2-3-pay"),
    ("verdict_soundness", "repair.not_started_for_recorded", "boundary-2-3-pay"),
    ("checkpoint_before_effect", "checkpoint.no_flush_before_tool_body", "boundary-2-3-pay"),
    ("checkpoint_before_effect", "checkpoint.no_lazy_flush_before_request", "approval-unavailable"),
    ("idempotent_retry_converges", "tools.idempotency_key_not_forwarded", "idempotent-retry-converges"),
    ("approval_gate", "tools.guard_reopens_denied", "approval-unavailable"),
    ("approval_gate", "approval.fail_open_on_answerer_error", "approval-answerer-fails"),
    ("fail_closed", "checkpoint.abort_recheck_after_body", "cancel-during-tool-body"),
    ("corrupt_frame_refused", "read.skip_corrupt_complete_frame", "corrupt-complete-frame-refused"),
    ("recovery_succeeds", "repair.seq_gap", "boundary-2-3-pay"),
    ("lock_exclusion", "lease.no_lock_on_write_open", "two-writers"),
    ("recovery_maximal", "read.drop_torn_recovered_records", "torn-zstd-checksum"),
    ("eventually_durable", "read.accept_torn_final_frame", "torn-zstd-checksum"),
    ("failed_append_rolled_back", "persist.skip_rollback_truncate", "fsync-fail-on-append"),
]


def replay(name: str, *mutant_names: str, expecting: str | None = None):
    """Replay a starter scenario with mutants; ``expecting``: run on until that invariant fails
    (an earlier, stronger check may fail first on the same bug)."""
    scenario = attrs.evolve(load(os.path.join(STARTER, f"{name}.json")), mutants=tuple(mutant_names))
    if expecting is not None:
        scenario = attrs.evolve(scenario, expect=Expectation("violation", expecting))
    result, sim = run_scenario(scenario)
    return {v.invariant for v in result.violations}, result


@pytest.mark.parametrize("invariant,mutant,scenario", BY_MUTANT, ids=[f"{i}-{m}" for i, m, _ in BY_MUTANT])
def test_invariant_catches_the_mutant(invariant, mutant, scenario):
    clean, _ = replay(scenario)
    assert not clean, f"{scenario} must hold on the correct runtime"
    caught, _ = replay(scenario, mutant, expecting=invariant)
    assert invariant in caught, f"{mutant} on {scenario}: got {sorted(caught)}"


def test_verdict_soundness_catches_a_runtime_without_the_checkpoint_policy():
    caught, result = replay("no-checkpoint-policy-unsafe")
    assert "verdict_soundness" in caught
    assert "TOOL_NOT_STARTED but the side effect happened" in result.violations[0].message


def test_repair_idempotent_catches_a_repair_that_forgets_turn_end(monkeypatch):
    from runtime.agent import resume
    from runtime.session.repair import interrupted_turn_closers

    monkeypatch.setattr(
        resume, "interrupted_turn_closers", lambda events: [e for e in interrupted_turn_closers(events) if e.type != "turn/end"]
    )
    caught, _ = replay("boundary-2-3-pay")
    assert "repair_idempotent" in caught


def test_fidelity_catches_a_harness_whose_dead_processes_can_still_write(monkeypatch):
    """The guard against the harness itself: with revocation broken, cleanup writes land."""
    monkeypatch.setattr(ProcessView, "revoke", lambda self: self.disk.release_locks(self.pid))
    caught, _ = replay("boundary-3-4-pay", expecting="fidelity")  # (lease_held, stronger, fails first: the dead hold no lock)
    assert {"fidelity", "lease_held"} <= caught


# Defence in depth: the runtime refuses these states at several layers, so no single mutant
# reaches them; the checks are shown failing on the evidence such a bug would leave.


class _Obs:
    def __init__(self):
        self.violations = []
        self.checked = dict.fromkeys(inv.INVARIANTS, 0)

    def report(self, violation):
        self.violations.append(violation)

    def count(self, name):
        self.checked[name] += 1


def ev(seq: int, type: str, data: dict, **kw) -> Event:
    return Event(type, seq, 1000 + seq, data, **kw)


def test_seq_dense_fails_on_a_gap():
    obs = _Obs()
    inv.check_seq_dense(obs, [ev(0, "turn/start", {"turn": 1}), ev(2, "turn/end", {"turn": 1, "reason": {"kind": "completed"}})])
    assert [v.invariant for v in obs.violations] == ["seq_dense"]


def test_seq_dense_fails_on_a_gap_in_records_and_passes_dense_ones():
    obs = _Obs()
    records = [ev(n, "turn/start", {"turn": 1}).to_record() for n in (0, 1, 3)]
    inv.check_seq_dense(obs, records[:2])
    assert obs.violations == []
    inv.check_seq_dense(obs, records)
    assert [v.message for v in obs.violations] == ["event 2 has seq 3"]


def test_acked_events_survive_judges_each_recovery_after_remembering_equal_pairs(monkeypatch):
    """A pair found equal is remembered; a later recovery with another live event there is
    still caught (the memo only skips the very pairs it found equal)."""
    from dsh_sim.evidence.invariants import recovery

    recovery.forget_survivors()
    monkeypatch.setattr(recovery, "undamaged_prefix", lambda obs: None)  # (no media damage)
    acked = {n: ev(n, "todo/write", {"n": n}) for n in range(4)}
    obs = _Obs()
    obs.acked = acked
    live = tuple(ev(n, "todo/write", {"n": n}) for n in range(5))
    recovery.check_acked(obs, live)
    recovery.check_acked(obs, live)  # (every pair remembered now)
    assert obs.violations == []
    changed = (*live[:2], ev(2, "todo/write", {"n": 99}), *live[3:])
    recovery.check_acked(obs, changed)
    recovery.check_acked(obs, live[:3])  # one acknowledged event lost
    assert [v.message for v in obs.violations] == [
        "acknowledged event seq 2 (todo/write) was lost or changed",
        "acknowledged event seq 3 (todo/write) was lost or changed",
    ]


def test_one_result_per_call_fails_on_a_duplicate_result():
    obs = _Obs()
    block = {"type": "tool-call", "id": "c1", "name": "pay", "arguments": "{}"}
    result = {
        "turn": 1,
        "step": 1,
        "message": {"source": {"callId": "c1"}, "content": [{"type": "tool-result", "isError": False, "content": []}]},
    }
    events = [
        ev(0, "assistant/message", {"turn": 1, "step": 1, "message": {"content": [block]}}, surface_op="append"),
        ev(1, "tool/result", result, surface_op="append"),
        ev(2, "tool/result", result, surface_op="append"),
    ]
    inv.check_one_result_per_call(obs, events)
    assert [v.invariant for v in obs.violations] == ["one_result_per_call"]


def test_one_result_per_call_is_remembered_only_for_the_very_same_events():
    """The verdict is remembered per sequence of events (compared by identity) and the
    repaired flag: an earlier event replaced (same length, same last event), another flag,
    or a longer log is judged anew."""
    from dsh_sim.evidence.invariants import recovery

    block = {"type": "tool-call", "id": "c1", "name": "pay", "arguments": "{}"}
    result = {
        "turn": 1,
        "step": 1,
        "message": {"source": {"callId": "c1"}, "content": [{"type": "tool-result", "isError": False, "content": []}]},
    }
    call = ev(0, "assistant/message", {"turn": 1, "step": 1, "message": {"content": [block]}}, surface_op="append")
    other = ev(0, "assistant/message", {"turn": 1, "step": 1, "message": {"content": []}}, surface_op="append")
    answer = ev(1, "tool/result", result, surface_op="append")
    end = ev(2, "turn/end", {"turn": 1, "reason": {"kind": "interrupted"}})  # (a step/end would excuse the call: §5.3)

    def found(events, repaired=True):
        obs = _Obs()
        inv.check_one_result_per_call(obs, events, repaired=repaired)
        return [v.invariant for v in obs.violations]

    recovery.forget_survivors()
    assert found([call, end]) == ["one_result_per_call"]  # no result
    assert found([call, end]) == ["one_result_per_call"]  # (remembered)
    assert found([call, end], repaired=False) == []  # a storage process may leave it open
    assert found([other, end]) == []  # the first event replaced: no call at all
    assert found([call, end]) == ["one_result_per_call"]
    assert found([call, answer, answer, end]) == ["one_result_per_call"]
    assert found([call, other, answer, end]) == []  # same length and last event, another one inside
    step_end = ev(1, "step/end", {"turn": 1, "step": 1})
    assert found([call, step_end]) == []  # a step ended without its result: a scheduler failure owes none (§5.3, §2.1)
    recovery.forget_survivors()


def test_fail_closed_judges_each_result_event_by_its_own_content():
    """Whether a result reads as a refused call is remembered per event object: another
    event (even at the same seq, for the same call) is read anew, and the world is asked
    every time."""
    import types

    from dsh_sim.adapters.world import LedgerEntry, World
    from dsh_sim.evidence.invariants import recovery

    def result(text: str, is_error: bool, code: str | None = None) -> Event:
        data = {"message": {"source": {"callId": "c1"}, "content": [{"isError": is_error, "content": [{"type": "text", "text": text}]}]}}
        if code is not None:
            data["error"] = {"code": code}
        return ev(1, "tool/result", data)

    world = World()
    obs = _Obs()
    obs.sim = types.SimpleNamespace(world=world)

    def found(events):
        obs.violations = []
        inv.check_fail_closed(obs, events)
        return [v.message for v in obs.violations]

    recovery.forget_survivors()
    refused = result("the call was cancelled", True)
    coded = result("x", True, "SANDBOX_UNAVAILABLE")
    answered = result("the call was cancelled", False)  # not an error: not a refusal
    assert found([refused, coded, answered]) == []  # nothing reached the world yet
    world.ledger.append(LedgerEntry(0, "payments", "charge", "c1", "c1", True, "applied", 0.0, 1))
    assert found([refused]) == ["a refused call (the call was cancelled) has effects in the world"]
    assert found([refused]) == ["a refused call (the call was cancelled) has effects in the world"]  # (remembered)
    assert found([coded]) == ["a refused call (SANDBOX_UNAVAILABLE) has effects in the world"]
    assert found([answered]) == []
    assert found([result("fine", True)]) == []
    recovery.forget_survivors()


def test_verdict_soundness_reads_the_calls_of_the_very_stored_events():
    """The started and answered calls of the stored events are remembered per sequence of
    events (by identity): a sequence of the same length and last event with another event
    inside is read anew."""
    import types

    from dsh_sim.adapters.world import World
    from dsh_sim.evidence.invariants import recovery

    def result(code: str) -> Event:
        data = {"message": {"source": {"callId": "c1"}, "content": [{"isError": True, "content": []}]}, "error": {"code": code}}
        return ev(3, "tool/result", data)

    started = ev(0, "tool/call", {"callId": "c1"})
    answered = ev(1, "tool/result", {"message": {"source": {"callId": "c1"}, "content": [{"isError": False, "content": []}]}})
    other = ev(1, "todo/write", {})
    last = ev(2, "step/end", {"turn": 1, "step": 1})
    obs = _Obs()
    obs.sim = types.SimpleNamespace(world=World())
    obs.verdict_counts = {}

    def found(stored):
        obs.violations = []
        inv.check_verdicts(obs, stored, [result("TOOL_NOT_STARTED")])
        return [v.message for v in obs.violations]

    recovery.forget_survivors()
    unanswered = ["a durable tool/call without result was classified TOOL_NOT_STARTED"]
    assert found([started, other, last]) == unanswered
    assert found([started, other, last]) == unanswered  # (remembered)
    assert found([started, answered, last]) == []  # the same length and last event, answered inside
    assert found([other, other, last]) == []  # never started
    assert found([started, other, last]) == unanswered
    recovery.forget_survivors()


def test_approval_audit_fails_on_an_unanswered_question_in_a_completed_turn():
    obs = _Obs()
    events = [
        ev(0, "turn/start", {"turn": 1}),
        ev(1, "approval/asked", {"id": "q1", "toolName": "send_message"}),
        ev(2, "turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
    ]
    inv.check_approval_audit(obs, events)
    assert [v.invariant for v in obs.violations] == ["approval_audit"]


def test_every_invariant_has_a_failing_demonstration():
    shown = {i for i, _, _ in BY_MUTANT} | {
        "verdict_soundness",
        "repair_idempotent",
        "fidelity",
        "seq_dense",
        "one_result_per_call",
        "approval_audit",
        "migration_atomic",  # tests/test_migration_sim.py: publication that writes in place instead of linking
        # tests/test_oracles.py: bugs written independently of the catalogue, caught by these alone
        "reference_model",
        "log_grammar",
        "world_agreement",
        "format_conformance",
        "durable_when_acknowledged",
        "reader_agrees",
        "turn_progress",
        "write_behind_timely",
        "no_residue",
        "closed_handle_refuses",  # tests/test_write_path.py: a handle that forgets it was closed, and the op its error names
        "errors_documented",  # tests/test_oracles.py: a reader that crashes with a TypeError
        "cancellation_honoured",  # tests/test_tool_oracles.py: success after cancellation, ABORTED kinds swapped
        "tool_schedule",  # tests/test_tool_oracles.py: an exclusive call joining a parallel group
        "result_shape",  # tests/test_tool_oracles.py: a HarnessError logged without its code, a message with another role
        "post_execute_once",  # tests/test_tool_oracles.py: ABORTED not final, a scheduler that skips post-execute
        "points_truthful",  # tests/test_tool_oracles.py: a probe announcement without its call id, or naming another call
        "route_decisions",  # tests/simulation/test_route_model.py: seven careless edits of the pipeline's decisions
        "write_behind_window",  # tests/simulation/test_window_model.py: five careless edits of the write-behind's timing
        "lease_held",  # tests/simulation/test_lease_model.py: a lease without its recheck, a publication before the lock
        "foreign_files_kept",  # tests/simulation/test_lease_model.py: a cleanup that removes a name it did not link
        "model_exchange",  # tests/simulation/test_model_exchange.py: headers at every step, a history without results, a lost prompt
        "dsh_agrees",  # tests/test_dsh_against.py: a reader that drops a torn frame's records, caught by the real DSH
        "route_agrees",  # tests/system/test_dsh_route.py: DSH's route broken from outside, caught by the route differential
        "no_hang",  # tests/test_hang.py: a graceful stop that retries a failing write forever; spins and deadlocks
        "approval_policy",  # tests/test_approval_policy.py: the first approval/policy read as the one in force
        "lossless_refused",  # tests/test_edge_values.py: a write-side check that stores -0, one that refuses subnormals
        "links_not_followed",  # tests/test_planted_links.py: a runtime that opens session files without O_NOFOLLOW
        "file_effects_durable",  # tests/test_file_tools.py: write_file reporting success before the directory or file sync
    }
    assert shown == set(inv.INVARIANTS)
