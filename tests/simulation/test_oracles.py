"""The oracles that are complete by construction: each fails on a bug it guards against.

End to end, the bugs below were written independently of the mutant catalogue — a few lines
each, the kind of slip a careful colleague makes — and replayed on starter scenarios: the
named invariants all hold, so only the new oracle names the problem.  Below them, each
oracle's rules are checked on hand-built logs and ledgers, and the spec reader and repair
against the spec's own examples (§3.4, §8.1).
"""

from __future__ import annotations

import os

import pytest
import zstandard

from dsh_sim.adapters.world import LedgerEntry
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.evidence.oracles import agreement, reference, spec_repair
from dsh_sim.evidence.oracles.grammar import Grammar, GrammarError
from dsh_sim.evidence.oracles.spec_log import check_written, read_recoverable
from dsh_sim.evidence.oracles.spec_records import SpecViolation
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load, parse
from runtime.persistence.log_format import encode_generation
from runtime.session.events import Event
from tests.support.paths import ROOT

STARTER = os.path.join(ROOT, "scenarios", "starter")
OLD_INVARIANTS = {
    "seq_dense",
    "committed_bytes_stable",
    "acked_events_survive",
    "one_result_per_call",
    "verdict_soundness",
    "checkpoint_before_effect",
    "idempotent_retry_converges",
    "repair_idempotent",
    "approval_audit",
    "approval_gate",
    "fail_closed",
    "corrupt_frame_refused",
    "recovery_succeeds",
    "lock_exclusion",
    "fidelity",
    "recovery_maximal",
    "eventually_durable",
    "failed_append_rolled_back",
    "migration_atomic",
}

# (oracle, bug, edits, scenario): realistic bugs none of the named invariants notices
INDEPENDENT_BUGS = [
    (
        "reference_model",
        "repair writes the not-started text for a recorded call",
        [
            Edit(
                "runtime.session.repair",
                "_closers",
                "OUTCOME_UNKNOWN_TEXT if started else NOT_STARTED_TEXT",
                "NOT_STARTED_TEXT if started else NOT_STARTED_TEXT",
            )
        ],
        "boundary-2-3-pay",
    ),
    (
        "reference_model",
        "repair closers take time 0 instead of the last event's time",
        [
            Edit(
                "runtime.session.repair",
                "_closers",
                "    seq, time = last.seq + 1, last.time",
                "    seq, time = last.seq + 1, 0",
            )
        ],
        "boundary-2-3-pay",
    ),
    (
        "reference_model",
        "an outcome-unknown closer forgets which tool/call it answers",
        [
            Edit(
                "runtime.session.repair",
                "_closers",
                "sources = (entry.call_seq,) if started and entry.call_seq is not None else None",
                "sources = None",
            )
        ],
        "boundary-2-3-pay",
    ),
    (
        "format_conformance",
        "frames are written without their content checksum",
        [
            Edit(
                "runtime.persistence.zstd_frames",
                "compress_frame",
                "    return _COMPRESSOR.compress(plaintext)",
                "    import zstandard as _z\n    return _z.ZstdCompressor(level=3, write_checksum=False).compress(plaintext)",
            )
        ],
        "boundary-3-4-pay",
    ),
    (
        "world_agreement",
        "the tool result loses the call's metadata (its idempotency key)",
        [
            Edit(
                "runtime.tools.scheduler",
                "StepTools._commit",
                '        if result.meta is not None:\n            data["meta"] = result.meta\n',
                "",
            )
        ],
        "boundary-3-4-pay",
    ),
]


@pytest.mark.parametrize("oracle,bug,edits,scenario", INDEPENDENT_BUGS, ids=[b for _, b, _, _ in INDEPENDENT_BUGS])
def test_only_the_oracle_catches_an_independent_bug(oracle, bug, edits, scenario):
    path = os.path.join(STARTER, f"{scenario}.json")
    clean, _ = run_scenario(load(path))
    assert not clean.violations
    with applied(edits):
        result, _ = run_scenario(load(path))
    caught = {v.invariant for v in result.violations}
    assert oracle in caught, f"{bug}: got {sorted(caught)}"
    assert not caught & OLD_INVARIANTS, (
        f"{bug}: a named invariant caught it too ({sorted(caught & OLD_INVARIANTS)}), so it shows nothing new"
    )


def test_an_acknowledgement_is_checked_on_the_medium_without_any_crash():
    """A batch acknowledged without its fsync: every named invariant needs a power cut to see
    the loss; the durable image shows it at the acknowledgement, in a crash-free run."""
    scenario = load(os.path.join(STARTER, "approval-unavailable.json"))  # boot and one prompt: no fault, no crash
    edit = Edit(
        "runtime.persistence.durable",
        "append_durable",
        "        await fs.write_fsync(fd, data, rollback_size=expected_size)\n",
        "        await fs.write(fd, data)\n",
    )
    assert not run_scenario(scenario)[0].violations
    with applied([edit]):
        result, _ = run_scenario(scenario)
    caught = {v.invariant for v in result.violations}
    assert caught == {"durable_when_acknowledged"}, caught


def test_a_pipeline_that_refuses_everything_breaks_no_safety_rule_but_makes_no_progress():
    """Every call needs approval and is denied: nothing unsafe happens, every safety check holds;
    only the script's prediction of a quiet turn and the route model see that nothing was done."""
    scenario = load(os.path.join(STARTER, "two-writers.json"))  # two quiet prompts with payments and reads
    edit = Edit(
        "runtime.tools.registry",
        "ToolRegistry._default_decision",
        "        if tool is not None and tool.requires_approval:",
        "        if tool is not None:",
    )
    with applied([edit]):
        result, _ = run_scenario(scenario)
    assert {v.invariant for v in result.violations} == {"turn_progress", "route_decisions"}


def _calls_prompt(steps_with_calls: int, config: dict | None = None) -> object:
    """One quiet prompt whose model calls a read-only tool in ``steps_with_calls`` responses, then answers."""
    responses = [
        {"text": f"step {n}", "tool_calls": [{"id": f"c{n}", "name": "get_balance", "arguments": {"account": "bob"}}]}
        for n in range(1, steps_with_calls + 1)
    ] + [{"text": "done"}]
    return parse(
        {
            "format": "dsh-sim-scenario",
            "version": 1,
            "name": "long-tool-turn",
            "machine": "durability",
            "seed": 1,
            "config": config or {},
            "steps": [{"op": "boot"}, {"op": "prompt", "args": {"responses": responses}}],
        }
    )


@pytest.mark.parametrize(
    "steps_with_calls,config,ends",
    [(15, {}, "completed"), (16, {}, "error"), (3, {"max_steps": 3}, "error"), (2, {"max_steps": 3}, "completed")],
)
def test_a_turn_past_the_runtime_step_limit_ends_with_its_error(steps_with_calls, config, ends):
    """The runtime ends a turn whose step ``max_steps`` still has calls (its step limit): the
    progress oracle predicts that from the script instead of a completion it cannot reach."""
    result, _ = run_scenario(_calls_prompt(steps_with_calls, config))
    assert not result.violations, [v.describe() for v in result.violations]
    assert result.outcomes[-1] == f"turn:{ends}"


def test_a_runtime_that_overruns_its_step_limit_makes_the_wrong_progress():
    scenario = _calls_prompt(4, {"max_steps": 3})
    edit = Edit("runtime.agent.loop", "Agent.run_turn", "if step >= self.max_steps:", "if step > self.max_steps:")
    with applied([edit]):
        result, _ = run_scenario(scenario)
    assert {v.invariant for v in result.violations} == {"turn_progress"}


def test_a_write_behind_that_waits_too_long_is_late():
    """A window of a second instead of 200 ms: durability still holds at every barrier."""
    scenario = parse(
        {
            "format": "dsh-sim-scenario",
            "version": 1,
            "name": "appends-then-half-a-second",
            "machine": "storage",
            "seed": 1,
            "steps": [{"op": "boot"}, {"op": "append", "args": {"count": 3}}, {"op": "advance", "args": {"seconds": 0.5}}],
        }
    )
    edit = Edit(
        "runtime.persistence.write_behind", "WriteBehind.enqueue", "trio.current_time() + self._window", "trio.current_time() + 1.0"
    )
    assert not run_scenario(scenario)[0].violations
    with applied([edit]):
        result, _ = run_scenario(scenario)
    assert {v.invariant for v in result.violations} == {"write_behind_timely", "write_behind_window"}


@pytest.mark.parametrize(
    "edit",
    [
        Edit(
            "runtime.persistence.handles",
            "WriteHandle.close",
            "                        await release_lock(self._fs, fd)",
            "                        pass",
        ),
        Edit("runtime.persistence.durable", "publish_new_file", "        raise\n    await unlink_quietly(fs, temp)\n", "        raise\n"),
    ],
    ids=["a closed handle keeps its lock descriptor", "first publication leaves its temp file"],
)
def test_a_clean_stop_leaves_nothing_behind(edit):
    scenario = load(os.path.join(STARTER, "two-writers.json"))
    with applied([edit]):
        result, _ = run_scenario(scenario)
    assert "no_residue" in {v.invariant for v in result.violations}


REGRESSIONS = os.path.join(ROOT, "scenarios", "regressions")


def test_fsyncgate_a_writer_rewrites_what_a_failed_fsync_left_in_the_page_cache():
    """Found by durable_when_acknowledged: after a failed fsync marked the pages clean and a
    kill before the rollback, a writer that only fsyncs at open builds on bytes a power cut
    still takes away; the runtime now writes them again first (durable.make_durable)."""
    scenario = load(os.path.join(REGRESSIONS, "fsync-fail-then-kill-before-rollback.json"))
    assert not run_scenario(scenario)[0].violations
    fsync_only = Edit(  # open, fsync, close: what a failed fsync marked clean is never written again
        "runtime.persistence.durable",
        "make_durable",
        "    return await rewrite_synced(fs, path)",
        "    fd = await open_nofollow(fs, path, OpenFlags.READ)\n    await fs.fsync(fd)\n    st = await fs.fstat(fd)\n"
        "    await fs.close(fd)\n    return await read_all(fs, path), st",
    )
    with applied([fsync_only]):
        result, _ = run_scenario(scenario)
    assert {v.invariant for v in result.violations} == {"durable_when_acknowledged"}


@pytest.mark.parametrize(
    "edit",
    [
        Edit(
            "runtime.persistence.handles",
            "ReadHandle.append",
            '        raise SessionReadOnlyError("append", self.session_id)',
            "        return None",
        ),
        Edit(
            "runtime.persistence.handles",
            "_read_window",
            "    end = len(events) if length is None else offset + length",
            "    end = len(events) - 1 if length is None else offset + length",
        ),
    ],
    ids=["a read handle that accepts appends", "a read that drops the last event"],
)
def test_a_reader_beside_the_writer_sees_what_the_spec_says(edit):
    scenario = load(os.path.join(REGRESSIONS, "read-only-reader-beside-writer-zstd.json"))
    assert not run_scenario(scenario)[0].violations
    with applied([edit]):
        result, _ = run_scenario(scenario)
    assert "reader_agrees" in {v.invariant for v in result.violations}


# -- the spec reader -------------------------------------------------------------------------------


def _header() -> dict:
    return {"type": "session", "version": 3, "id": "s", "createdAt": 1, "isSeeded": False, "delegationDepth": 0}


def _events(n: int) -> list[Event]:
    return [Event("todo/write", i, 10 + i, {"n": i}) for i in range(n)]


def _log(compression: str, batches: list[list[Event]]) -> bytes:
    from runtime.persistence.header import SessionHeader
    from runtime.persistence.log_format import encode_batch

    data = encode_generation(SessionHeader("s", 1), batches[0], compression)
    for batch in batches[1:]:
        data += encode_batch(batch, compression)
    return data


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_a_writer_conforming_file_reads_back_record_for_record(compression):
    events = _events(5)
    log = check_written(_log(compression, [events[:2], events[2:]]), compression)
    assert log.header == _header() and list(log.records) == [e.to_record() for e in events]
    if compression == "zstd":
        assert log.counts == (2, 3) and len(log.frames) == 3


def test_format_conformance_refuses_what_a_writer_must_never_write():
    plain = b'{"type":"session","version":3,"id":"s","createdAt":1,"isSeeded":false,"delegationDepth":0}\n'
    record = b'{"type":"todo/write","seq":0,"time":1,"data":{"n":1}}\n'
    no_checksum = zstandard.ZstdCompressor(write_checksum=False)
    checked = zstandard.ZstdCompressor(write_checksum=True)
    with pytest.raises(SpecViolation, match="content checksum"):
        check_written(checked.compress(plain) + no_checksum.compress(record), "zstd")
    with pytest.raises(SpecViolation, match="exactly one header line"):
        check_written(checked.compress(plain + record), "zstd")
    with pytest.raises(SpecViolation, match="ends inside a record"):
        check_written(checked.compress(plain) + checked.compress(record[:-1]), "zstd")
    with pytest.raises(SpecViolation, match="not strict JSON"):
        check_written(plain + b'{"type":"todo/write","seq":0,"time":1,"data":NaN}\n', "none")
    with pytest.raises(SpecViolation, match="not strict JSON"):
        check_written(plain + b'{"type":"todo/write","seq":0,"seq":0,"time":1,"data":1}\n', "none")
    with pytest.raises(SpecViolation, match="seq 1 where 0"):
        check_written(plain + b'{"type":"todo/write","seq":1,"time":1,"data":1}\n', "none")
    with pytest.raises(SpecViolation, match="surface event without surfaceOp"):
        check_written(plain + b'{"type":"user/message","seq":0,"time":1,"data":{}}\n', "none")
    with pytest.raises(SpecViolation, match="canonical range form"):
        check_written(
            plain
            + b"".join(b'{"type":"todo/write","seq":%d,"time":1,"data":1}\n' % i for i in range(3))
            + b'{"type":"tool/result","seq":3,"time":1,"data":{"message":{"content":[{"isError":false}]}},"surfaceOp":"append","sourceEventSeqs":[0,1,2]}\n',
            "none",
        )


def test_a_torn_zstd_tail_keeps_its_complete_records_and_a_cut_one_is_dropped():
    events = _events(4)
    whole = _log("zstd", [events[:1], events[1:]])
    cut = whole[:-3]  # inside the checksum of the last frame
    log = read_recoverable(cut, "zstd")
    assert log.torn_start is not None and [r["seq"] for r in log.records] == [0, 1, 2, 3] and log.recovered == 3
    log = read_recoverable(whole[: log.torn_start + 5], "zstd")  # inside the frame header: nothing decodable
    assert [r["seq"] for r in log.records] == [0] and log.recovered == 0


def test_raw_damage_before_a_turn_end_is_refused_and_a_torn_line_is_a_tail():
    plain = b'{"type":"session","version":3,"id":"s","createdAt":1,"isSeeded":false,"delegationDepth":0}\n'
    ok = b'{"type":"todo/write","seq":0,"time":1,"data":1}\n'
    assert read_recoverable(plain + ok + b'{"type":"todo', "none").torn_start == len(plain + ok)
    end = b'{"type":"turn/end","seq":2,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}\n'
    with pytest.raises(SpecViolation, match="committed region"):
        read_recoverable(plain + ok + b"garbage\n" + end, "none")


# -- the spec's repair (§8.1) ------------------------------------------------------------------------


def _rec(seq: int, kind: str, data: dict, **extra) -> dict:
    return {"type": kind, "seq": seq, "time": seq, "data": data, **extra}


def test_spec_repair_matches_the_spec_table():
    assert spec_repair.closers([]) == []
    assert (
        spec_repair.closers([_rec(0, "turn/start", {"turn": 1}), _rec(1, "turn/end", {"turn": 1, "reason": {"kind": "completed"}})]) == []
    )
    call = {"type": "tool-call", "id": "call-1", "name": "bash", "arguments": "{}"}
    log = [
        _rec(0, "turn/start", {"turn": 2}),
        _rec(1, "step/start", {"turn": 2, "step": 1}),
        _rec(2, "assistant/message", {"turn": 2, "step": 1, "message": {"content": [{"type": "text", "text": "x"}, call]}}),
    ]
    out = spec_repair.closers(log)
    assert [c["type"] for c in out] == ["tool/result", "step/end", "turn/end"] and [c["seq"] for c in out] == [3, 4, 5]
    assert out[0]["data"]["error"]["code"] == "TOOL_NOT_STARTED" and "sourceEventSeqs" not in out[0]
    assert out[0]["data"]["message"]["content"][0]["content"] == [{"type": "text", "text": spec_repair.TEXTS["TOOL_NOT_STARTED"]}]
    out = spec_repair.closers([*log, _rec(3, "tool/call", {"turn": 2, "step": 1, "callId": "call-1", "name": "bash", "arguments": "{}"})])
    assert out[0]["data"]["error"] == {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"} and out[0]["sourceEventSeqs"] == [
        3
    ]
    assert out[0]["data"]["message"]["id"] == "interrupted-tool-result-call-1-4" and out[-1]["time"] == 3


def test_the_reference_model_bounds_the_stored_prefix_by_the_history():
    events = _events(3)
    data = _log("zstd", [events[:1], events[1:2]])  # the third event was never written
    expected = reference.expected_recovery(data, "zstd")
    acked = {e.seq: e for e in events}  # ... but it was acknowledged: a durability bug
    problems = reference.history_problems(expected, acked, events)
    assert problems and "acknowledged event seq 2" in problems[0]
    other = [Event("todo/write", 0, 10, {"n": "something else"}), *events[1:]]
    assert "the process had" in reference.history_problems(expected, {}, other)[0]
    assert reference.compare(expected, None, events[:2], []) == []
    assert "stored events differ" in reference.compare(expected, None, other[:2], [])[0]


# -- the grammar -------------------------------------------------------------------------------------


def _turn(turn: int, seq: int, calls: list[str], *, results: list[str] | None = None, started: list[str] | None = None) -> list[dict]:
    blocks = [{"type": "tool-call", "id": c, "name": "pay", "arguments": "{}"} for c in calls]
    out = [_rec(seq, "turn/start", {"turn": turn}), _rec(seq + 1, "step/start", {"turn": turn, "step": 1})]
    out.append(_rec(seq + 2, "assistant/message", {"turn": turn, "step": 1, "message": {"content": blocks}}))
    call_seqs = {}
    for c in started if started is not None else calls:
        call_seqs[c] = len(out) + seq
        out.append(_rec(len(out) + seq, "tool/call", {"turn": turn, "step": 1, "callId": c}))
    for c in results if results is not None else calls:
        cites = {"sourceEventSeqs": [call_seqs[c]]} if c in call_seqs else {}
        out.append(_rec(len(out) + seq, "tool/result", {"turn": turn, "step": 1, "message": {"source": {"callId": c}}}, **cites))
    out.append(_rec(len(out) + seq, "step/end", {"turn": turn, "step": 1}))
    out.append(_rec(len(out) + seq, "turn/end", {"turn": turn, "reason": {"kind": "completed"}}))
    return out


def test_the_grammar_accepts_a_well_formed_log():
    log = _turn(1, 0, ["a", "b"])
    assert Grammar().feed_all([*log, *_turn(2, len(log), [])]).closed


@pytest.mark.parametrize(
    "log,rule",
    [
        (_turn(1, 0, ["a"], results=[]), "no result"),
        (_turn(1, 0, ["a"], results=["a", "a"]), "second tool/result"),
        (_turn(1, 0, ["a", "b"], results=["b", "a"]), "model's order"),
        (_turn(1, 0, ["a", "b"], started=["b", "a"]), "model's order"),
        (_turn(1, 0, ["a"], started=[]), "without its tool/call"),
        (_turn(2, 0, []), "turn 1 comes next"),
        ([_rec(0, "turn/start", {"turn": 1}), _rec(2, "turn/end", {"turn": 1})], "seq 2 where 1"),
        (
            [_rec(0, "turn/start", {"turn": 1}), _rec(1, "step/start", {"turn": 1, "step": 1}), _rec(2, "turn/end", {"turn": 1})],
            "step 1 is open",
        ),
        ([_rec(0, "todo/write", {})], "outside an open turn"),
    ],
)
def test_the_grammar_names_each_broken_rule(log, rule):
    with pytest.raises(GrammarError, match=rule):
        Grammar().feed_all(log)


def test_a_result_must_cite_its_own_tool_call():
    log = _turn(1, 0, ["a", "b"])
    log[5]["sourceEventSeqs"] = [4]  # b's result cites a's tool/call
    with pytest.raises(GrammarError, match="not its tool/call"):
        Grammar().feed_all(log)


def test_a_synthetic_not_started_result_needs_no_tool_call():
    log = _turn(1, 0, ["a"], started=[])
    log[3]["data"]["error"] = {"code": "TOOL_NOT_STARTED"}
    Grammar().feed_all(log)


# -- world agreement ---------------------------------------------------------------------------------


def _entry(
    call_id: str,
    *,
    applied: bool = True,
    key: str | None = None,
    args: dict | None = None,
    response: dict | None = None,
    root: str | None = "",
) -> LedgerEntry:
    return LedgerEntry(
        0,
        "payments",
        "charge",
        call_id,
        key if key is not None else call_id,
        applied,
        "applied",
        0.0,
        1,
        args or {"to": "bob", "amount": 5},
        response or {"payment": "p-1"},
        call_id.split(":", maxsplit=1)[0] if root == "" else root,
    )


def _call_log(call_id: str, result: dict, arguments: str = '{"to": "bob", "amount": 5}') -> list[dict]:
    block = {"type": "tool-call", "id": call_id, "name": "pay", "arguments": arguments}
    return [_rec(0, "assistant/message", {"turn": 1, "step": 1, "message": {"content": [block]}}), _rec(1, "tool/result", result)]


def _success(call_id: str, text: str, key: str) -> dict:
    return {
        "message": {"source": {"callId": call_id}, "content": [{"isError": False, "content": [{"type": "text", "text": text}]}]},
        "meta": {"key": key},
    }


def test_agreement_holds_when_log_and_ledger_tell_the_same_story():
    text = repr(sorted({"payment": "p-1"}.items()))
    assert agreement.check(_call_log("c1", _success("c1", text, "c1")), [_entry("c1")], workspace="/w") == []


@pytest.mark.parametrize(
    "ledger,result,why",
    [
        ([], _success("c1", "x", "c1"), "no request of this call reached"),
        ([_entry("c1", applied=False)], _success("c1", repr(sorted({"payment": "p-1"}.items())), "c1"), "no effect under key"),
        (
            [_entry("c1", args={"to": "eve", "amount": 5})],
            _success("c1", repr(sorted({"payment": "p-1"}.items())), "c1"),
            "not the model's arguments",
        ),
        ([_entry("c1")], _success("c1", "a response of another call", "c1"), "does not carry this call's response"),
        ([_entry("c1")], _success("c1", repr(sorted({"payment": "p-1"}.items())), "fresh"), "idempotency key"),
        ([_entry("c1", root=None)], _success("c1", repr(sorted({"payment": "p-1"}.items())), "c1"), "naming root call None"),
    ],
)
def test_agreement_names_each_disagreement(ledger, result, why):
    found = agreement.check(_call_log("c1", result), ledger, workspace="/w")
    assert found and why in found[0].message, found


def test_a_duplicate_key_never_hides_a_distinct_intended_effect():
    """c1 asks for 5 under key k, but k was first used for 9: the service answered from the
    first effect, and the log's success would hide that c1's payment never happened."""
    args = {"to": "bob", "amount": 5, "idempotency_key": "k"}
    ledger = [
        _entry("c0", key="k", args={"to": "bob", "amount": 9, "idempotency_key": "k"}),
        _entry("c1", applied=False, key="k", args=args),
    ]
    log = _call_log(
        "c1", _success("c1", repr(sorted({"payment": "p-1"}.items())), "k"), '{"to": "bob", "amount": 5, "idempotency_key": "k"}'
    )
    found = agreement.check(log, ledger, workspace="/w")
    assert found and "swallowed as a duplicate" in found[0].message, found


def test_a_call_the_log_says_never_ran_must_not_reach_any_service():
    text = "Error: tool call aborted before dispatch"
    refused = {
        "message": {"source": {"callId": "c1"}, "content": [{"isError": True, "content": [{"type": "text", "text": text}]}]},
        "error": {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"},
    }
    read = LedgerEntry(0, "balances", "read", "c1", None, False, "read", 0.0, 1)
    assert "not dispatched" in agreement.check(_call_log("c1", refused), [read], workspace="/w")[0].message
    assert agreement.check(_call_log("c1", refused), [], workspace="/w") == []


def test_a_cancellation_result_whose_text_and_error_disagree():
    lost = {
        "message": {
            "source": {"callId": "c1"},
            "content": [{"isError": True, "content": [{"type": "text", "text": "Error: tool call aborted"}]}],
        },
    }
    found = agreement.check(_call_log("c1", lost), [], workspace="/w")
    assert found and "carries error None" in found[0].message


def test_a_programming_error_reaching_the_caller_is_a_violation():
    """A reader that crashes with a TypeError changes no byte and no event: every property of
    the log holds.  errors_documented sees that the operation failed with an undocumented
    error (found by mutmut after the golden comparison of outcomes was removed)."""
    scenario = load(os.path.join(REGRESSIONS, "read-only-reader-beside-writer-zstd.json"))
    assert not run_scenario(scenario)[0].violations
    bad_call = Edit("runtime.persistence.handles", "ReadHandle.read", "    _check_range(offset, length)\n", "    _check_range(length)\n")
    with applied([bad_call]):
        result, _ = run_scenario(scenario)
    # (reader_agrees sees it too: the reader was refused on a log the spec reads)
    assert {v.invariant for v in result.violations} == {"errors_documented", "reader_agrees"}
