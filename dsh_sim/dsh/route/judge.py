"""The invariants a run of the DSH route is held to — by the world's ledger, not by DSH's word.

Each is named as dsh-sim's own invariant for the same promise (``dsh-sim invariants``), and
each can fail: tests/dsh_route/test_route_judges.py breaks DSH's route from outside (a
checkpoint policy that flushes after the tool body, a repair wrapper that calls every
pending call not started, a tool plugin that drops the idempotency key) and names the
invariant that catches it.

- ``recovery_succeeds`` — every boot that found a log resumed it.
- ``seq_dense`` — the log's seqs are 0, 1, 2, … at the end and after every recovery.
- ``one_result_per_call`` — after a recovery every ``tool/call`` has exactly one result (and
  ``recovery_succeeds`` also asks every turn to be ended).
- ``verdict_soundness`` — ``TOOL_NOT_STARTED`` only for a call whose effect the world never
  saw (the ledger is the ground truth), and a ``tool/call`` durable without a result in the
  crash image is ``TOOL_OUTCOME_UNKNOWN``.
- ``checkpoint_before_effect`` — when a world service acts, the call's ``tool/call`` is
  already durable (a power loss at that instant keeps it), with DSH's checkpoint policy
  mounted.
- ``world_agreement`` — every effect the world applied belongs to a call the final log
  records, every successful world-tool result in the log is one the world answered, and a
  keyed service received the call's own idempotency key (the arguments' ``idempotency_key``,
  else the call id — what DSH's README asks side-effecting tools to forward).
- ``eventually_durable`` — after a clean stop, a power loss keeps every event.
- ``reference_model`` — what each recovery appended is exactly the spec's closers of the log it
  found (:mod:`dsh_sim.evidence.oracles.spec_repair`, computed from the spec, not by either
  runtime's repair), texts and seqs included.
- ``log_grammar`` — the final log and every repaired one, projected to the current format
  (dsh-sim's v0 migration), is well formed and ends between turns
  (:mod:`dsh_sim.evidence.oracles.grammar`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

import attrs

from dsh_sim.adapters.world_tools import SERVICES
from dsh_sim.dsh.normalize import canonical
from dsh_sim.evidence.oracles.grammar import Grammar, problems
from dsh_sim.evidence.oracles.spec_repair import closers as spec_closers
from runtime.persistence.migration import MigrationRefused, migrate_v0
from runtime.persistence.v0_records import V0Event

from .log import decode, read, verdicts
from .run import RouteRun

INVARIANTS = (
    "recovery_succeeds",
    "seq_dense",
    "one_result_per_call",
    "verdict_soundness",
    "checkpoint_before_effect",
    "world_agreement",
    "eventually_durable",
    "log_grammar",
    "reference_model",
)


@attrs.frozen
class RouteViolation:
    invariant: str
    detail: str
    finding: str | None = None  # a documented DSH finding it is an instance of (dsh_sim.dsh.route.findings)

    def line(self) -> str:
        tag = f" [{self.finding}]" if self.finding else ""
        return f"{self.invariant}{tag}: {self.detail}"


def grammar_problems(data: bytes | None, compression: str, what: str) -> list[str]:
    """The log grammar's findings on a v0 log after the v0 → current projection."""
    if not data:
        return []
    log = read(data, compression)
    if isinstance(log, str):
        return []  # a log that does not decode is recovery_succeeds' to report
    try:
        migrated = migrate_v0(log).events
    except MigrationRefused as err:
        return [f"{what} has no faithful current-format projection: {err}"]
    return problems(Grammar(), migrated, closed=True, what=what)


def _results_per_call(events: Sequence[V0Event]) -> list[str]:
    calls = [str(e.data.get("callId")) for e in events if e.type == "tool/call"]
    results = Counter(str(e.data["message"]["source"]["callId"]) for e in events if e.type == "tool/result")
    return [f"call {c} has {results[c]} results" for c in calls if results[c] != 1]


def _open_turns(events: Sequence[V0Event]) -> list[str]:
    started = {e.data.get("turn") for e in events if e.type == "turn/start"}
    ended = {e.data.get("turn") for e in events if e.type == "turn/end"}
    return [f"turn {t} is still open" for t in sorted(started - ended, key=str)]


def _result_is_success(e: V0Event) -> bool:
    message = e.data.get("message", {})
    return not any(b.get("isError") for b in message.get("content", []) if isinstance(b, dict)) and "error" not in e.data


def judge(run: RouteRun, *, checkpoint_policy: bool = True) -> tuple[list[RouteViolation], dict[str, int]]:
    """The violations of one route run, and how many checks each invariant made."""
    out: list[RouteViolation] = []
    checked = dict.fromkeys(INVARIANTS, 0)

    def fail(name: str, detail: str) -> None:
        out.append(RouteViolation(name, detail))

    for rec in run.recoveries:
        if rec.crashed:
            continue  # died while recovering: the next boot recovers what it left
        checked["recovery_succeeds"] += 1
        if rec.error is not None:
            fail("recovery_succeeds", f"lifetime {rec.lifetime}: DSH could not resume its own crash state: {rec.error}")
            continue
        after = decode(rec.after, run.compression)
        if isinstance(after, str):
            fail("recovery_succeeds", f"lifetime {rec.lifetime}: the repaired log does not decode: {after}")
            continue
        checked["seq_dense"] += 1
        if [e.seq for e in after] != list(range(len(after))):
            fail("seq_dense", f"after the recovery of lifetime {rec.lifetime}")
        before = decode(rec.before, run.compression)
        if isinstance(before, list):
            checked["reference_model"] += 1
            spec = [canonical(r) for r in spec_closers([e.to_record() for e in before])]
            appended = [canonical(e.to_record()) for e in after[len(before) : len(before) + len(spec)]]
            if appended != spec or [canonical(e.to_record()) for e in after[: len(before)]] != [canonical(e.to_record()) for e in before]:
                fail("reference_model", f"lifetime {rec.lifetime}: the repair is not the spec's closers of the log it found")
            # a durable tool/call without a result (in the crash image) may have run: UNKNOWN
            answered_before = {str(e.data["message"]["source"]["callId"]) for e in before if e.type == "tool/result"}
            owed = [str(e.data.get("callId")) for e in before if e.type == "tool/call" and str(e.data.get("callId")) not in answered_before]
            given = verdicts(after)
            for call_id in owed:
                checked["verdict_soundness"] += 1
                if given.get(call_id) != "TOOL_OUTCOME_UNKNOWN":
                    fail(
                        "verdict_soundness",
                        f"lifetime {rec.lifetime}: {call_id}'s tool/call was durable without a result, "
                        f"so its outcome is unknown, but the repair says {given.get(call_id, 'nothing')}",
                    )
        checked["log_grammar"] += 1
        for problem in grammar_problems(rec.after, run.compression, f"the log repaired in lifetime {rec.lifetime}"):
            fail("log_grammar", problem)
        checked["one_result_per_call"] += 1
        for problem in _results_per_call(after):
            fail("one_result_per_call", f"after the recovery of lifetime {rec.lifetime}: {problem}")
        for problem in _open_turns(after):
            fail("recovery_succeeds", f"after the recovery of lifetime {rec.lifetime}: {problem}")

    final = decode(run.log, run.compression)
    if isinstance(final, str):
        fail("recovery_succeeds", f"the final log does not decode: {final}")
        return out, checked
    checked["seq_dense"] += 1
    if [e.seq for e in final] != list(range(len(final))):
        fail("seq_dense", "in the final log")
    elif final:
        checked["log_grammar"] += 1
        for problem in grammar_problems(run.log, run.compression, "the final log"):
            fail("log_grammar", problem)

    applied: dict[str, list[Any]] = {}
    for entry in run.ledger:
        if entry.applied:
            applied.setdefault(entry.call_id, []).append(entry)
    for call_id, verdict in sorted(verdicts(final).items()):
        checked["verdict_soundness"] += 1
        if verdict == "TOOL_NOT_STARTED" and call_id in applied:
            services = ", ".join(sorted({e.service for e in applied[call_id]}))
            fail("verdict_soundness", f"{call_id} is TOOL_NOT_STARTED but the world applied its effect ({services})")

    if checkpoint_policy:
        for effect in run.effects:
            checked["checkpoint_before_effect"] += 1
            if not effect.durable_call:
                fail("checkpoint_before_effect", f"{effect.call_id} ({effect.tool}) acted on the world before its tool/call was durable")

    recorded_calls = {str(e.data.get("callId")): e for e in final if e.type == "tool/call"}
    for call_id in sorted(applied):
        checked["world_agreement"] += 1
        if call_id not in recorded_calls:
            fail("world_agreement", f"the world applied {call_id}'s effect but the log records no such call")
    answered = {e.call_id for e in run.ledger}
    for e in final:
        if e.type != "tool/result" or not _result_is_success(e):
            continue
        call_id = str(e.data["message"]["source"]["callId"])
        call = recorded_calls.get(call_id)
        if call is None or call.data.get("name") not in SERVICES:
            continue
        checked["world_agreement"] += 1
        if call_id not in answered:
            fail("world_agreement", f"the log says {call_id} succeeded but the world never answered it")

    for entry in run.ledger:
        call = recorded_calls.get(entry.call_id)
        if call is None or SERVICES.get(str(call.data.get("name"))) is None or entry.service != "payments" or entry.op != "charge":
            continue
        checked["world_agreement"] += 1
        try:
            arguments = json.loads(call.data.get("arguments") or "{}")
        except ValueError:
            arguments = {}
        # as the world tools key a request: the arguments' idempotency_key, else the call id
        expected = (arguments.get("idempotency_key") if isinstance(arguments, dict) else None) or entry.call_id
        if entry.key != expected:
            fail("world_agreement", f"{entry.call_id} reached {entry.service} with idempotency key {entry.key!r}, not its own {expected!r}")

    if run.events_at_stop is not None:
        checked["eventually_durable"] += 1
        durable = decode(run.durable_at_stop, run.compression)
        if isinstance(durable, str) or len(durable) != run.events_at_stop:
            got = durable if isinstance(durable, str) else f"{len(durable)} events"
            # DSH-8: resumed on a log a killed writer left partly unsynced (its name or its bytes),
            # and what the power loss takes is exactly what was unsynced when it was found
            kept = 0 if isinstance(durable, str) else len(durable)
            dsh_8 = any(not rec.found_synced and rec.durable_events == kept for rec in run.recoveries if not rec.crashed)
            out.append(
                RouteViolation(
                    "eventually_durable",
                    f"after a clean stop with {run.events_at_stop} events, a power loss leaves {got}",
                    "DSH-8" if dsh_8 else None,
                )
            )
    return out, checked
