"""Named invariants: what must hold after every step, crash and recovery.

Each check names the call and the evidence when it fails.  They read only the simulation's
ground truth (disk, ledger, acknowledgements) and what the runtime returned; none of them
can be satisfied by construction — ``tests/test_invariants.py`` shows each one failing on a
bug it guards against.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import attrs

from runtime.persistence.errors import SessionAlreadyOwnedError, SessionPersistenceCorruptionError
from runtime.session.events import Event
from runtime.session.repair import TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN, interrupted_turn_closers

if TYPE_CHECKING:
    from dsh_sim.observe import CrashRecord, Observation
    from dsh_sim.sim import Lifetime

INVARIANTS: dict[str, str] = {
    "seq_dense": "after every recovery the log's seqs are dense from 0, with no duplicate or reordered event",
    "committed_bytes_stable": "bytes of the log acknowledged as durable are never rewritten or lost",
    "acked_events_survive": "every event acknowledged by a completed flush survives every crash, unchanged",
    "one_result_per_call": "every tool-call block ends with exactly one tool/result after repair",
    "verdict_soundness": "never TOOL_NOT_STARTED for a call whose effect was applied; a durable tool/call without result is TOOL_OUTCOME_UNKNOWN",
    "checkpoint_before_effect": "with the checkpoint policy: no tool body before its tool/call is durable, no model request before its request/header is durable",
    "idempotent_retry_converges": "a keyed request to an idempotent service has at most one applied effect, however often it is retried",
    "repair_idempotent": "repair of a repaired log adds nothing; resume continues the seqs with session/end-seed",
    "approval_audit": "approval/asked and approval/decided pair up by id in every turn that was not interrupted",
    "approval_gate": "no body of a tool that needs approval runs without an allowed-once decision for that call",
    "fail_closed": "a call refused for cancellation, approval or an unavailable sandbox has no effect in the world",
    "corrupt_frame_refused": "a corrupted complete zstd frame makes recovery refuse the log, never silently repair it",
    "recovery_succeeds": "a log that suffered only crashes (no media corruption) is always recoverable",
    "lock_exclusion": "a second writer is refused while the first holds the session",
    "fidelity": "no filesystem operation of a dead process takes effect (the disk is exactly the crash image)",
    "migration_atomic": "migrating a v0 log never changes it, and a published v3 generation always holds the complete migrated log: old or new readable, never neither, never half a generation",
}


@attrs.frozen
class Violation:
    invariant: str
    message: str
    call_id: str | None = None
    evidence: tuple[str, ...] = ()

    def describe(self) -> str:
        call = f" [call {self.call_id}]" if self.call_id else ""
        lines = [f"{self.invariant}{call}: {self.message}"] + [f"  evidence: {e}" for e in self.evidence]
        return "\n".join(lines)


def _fail(obs: "Observation", name: str, message: str, call_id: str | None = None, *evidence: str) -> None:
    obs.report(Violation(name, message, call_id, tuple(evidence)))


def _call_seq(events: Sequence[Event], call_id: str) -> int | None:
    for event in events:
        if event.type == "tool/call" and event.data["callId"] == call_id:
            return event.seq
    return None


# -- live checks (at named points) --------------------------------------------------------


def check_body_after_durable_call(obs: "Observation", life: "Lifetime", details: dict[str, Any]) -> None:
    if not obs.sim.config.checkpoint_policy or life.agent is None:
        return
    obs.count("checkpoint_before_effect")
    call_id = str(details.get("call_id"))
    seq = _call_seq(life.agent.session.events, call_id)
    if seq is None or seq not in obs.acked:
        _fail(obs, "checkpoint_before_effect", "the tool body started before its tool/call was durable", call_id,
              f"tool/call seq {seq}, acknowledged seqs up to {max(obs.acked, default=-1)}")


def check_request_after_durable_header(obs: "Observation", life: "Lifetime") -> None:
    if not obs.sim.config.checkpoint_policy or life.agent is None:
        return
    obs.count("checkpoint_before_effect")
    header = life.agent.session.last_of("request/header")
    if header is not None and header.seq not in obs.acked:
        _fail(obs, "checkpoint_before_effect", "the model request was sent before its request/header was durable", None,
              f"request/header seq {header.seq}, acknowledged seqs up to {max(obs.acked, default=-1)}")


def check_approval_gate(obs: "Observation", life: "Lifetime", details: dict[str, Any]) -> None:
    tool = details.get("tool")
    if tool not in obs.sim.config.approval_tools or life.agent is None:
        return
    obs.count("approval_gate")
    call_id = details.get("call_id")
    asked = [e.data["id"] for e in life.agent.session.events if e.type == "approval/asked" and e.data.get("callId") == call_id]
    decided = {e.data["id"]: e.data["outcome"] for e in life.agent.session.events if e.type == "approval/decided"}
    if not asked or decided.get(asked[-1]) != "allowed-once":
        _fail(obs, "approval_gate", f"the body of {tool} ran without an allowed-once decision", str(call_id),
              f"approval ids {asked}, outcomes {[decided.get(a) for a in asked]}")


# -- after a recovery ----------------------------------------------------------------------


def check_recovery(obs: "Observation", life: "Lifetime", crash: "CrashRecord | None") -> None:
    sim = obs.sim
    check_migration_atomic(obs, life)
    error = life.boot_error
    complete_frame_damage = any(frame for _, _, frame in obs.corruptions)
    if error is not None:
        if isinstance(error, SessionPersistenceCorruptionError) and complete_frame_damage:
            obs.count("corrupt_frame_refused")
            return
        obs.count("recovery_succeeds")
        _fail(obs, "recovery_succeeds", f"recovery refused the log: {type(error).__name__}: {error}", None,
              f"media corruptions injected: {len(obs.corruptions)}")
        return
    if complete_frame_damage and sim.config.compression == "zstd":
        obs.count("corrupt_frame_refused")
        _fail(obs, "corrupt_frame_refused", "recovery accepted a log whose complete frame was corrupted",
              None, f"corruptions {obs.corruptions}")
    if life.session is None:
        return
    live = tuple(life.session.events)
    report = life.report
    stored = tuple(report.events) if report is not None else ()
    closers = tuple(report.closers) if report is not None else ()
    full = stored + closers
    check_seq_dense(obs, live)
    check_acked(obs, live)
    if crash is not None:
        check_committed_bytes(obs, crash)
    check_one_result_per_call(obs, live)
    check_verdicts(obs, stored, closers)
    obs.count("repair_idempotent")
    again = interrupted_turn_closers(full)
    if again:
        _fail(obs, "repair_idempotent", f"repair of the repaired log adds {[e.type for e in again]}")
    needs_seed = bool(full) and full[-1].type != "session/end-seed"  # spec §1.2: one end-seed per resume
    if stored and needs_seed and (len(live) <= len(full) or live[len(full)].type != "session/end-seed"):
        _fail(obs, "repair_idempotent", "resume did not continue the seqs with session/end-seed", None,
              f"log length {len(full)}, live length {len(live)}")
    check_approval_audit(obs, full)
    check_fail_closed(obs, live)
    obs.recoveries.append({"lifetime": life.index, "verdicts": dict(report.verdicts) if report else {}, "torn": bool(report and report.torn)})


def check_seq_dense(obs: "Observation", events: Sequence[Event]) -> None:
    obs.count("seq_dense")
    for index, event in enumerate(events):
        if event.seq != index:
            _fail(obs, "seq_dense", f"event {index} has seq {event.seq}", None, f"types around: {[e.type for e in events[max(0, index - 2): index + 2]]}")
            return


def check_acked(obs: "Observation", live: Sequence[Event]) -> None:
    obs.count("acked_events_survive")
    for seq in sorted(obs.acked):
        acked = obs.acked[seq]
        if seq >= len(live) or live[seq].to_record() != acked.to_record():
            found = live[seq].type if seq < len(live) else "nothing"
            _fail(obs, "acked_events_survive", f"acknowledged event seq {seq} ({acked.type}) was lost or changed", None,
                  f"recovered log has {len(live)} events; at seq {seq}: {found}")
            return


def check_committed_bytes(obs: "Observation", crash: "CrashRecord") -> None:
    obs.count("committed_bytes_stable")
    data = obs.sim.disk.read_path(obs.sim.config.log_path) or b""
    acked = crash.acked_bytes
    if not data.startswith(acked):
        common = next((i for i, (a, b) in enumerate(zip(acked, data)) if a != b), min(len(acked), len(data)))
        _fail(obs, "committed_bytes_stable", "acknowledged log bytes were rewritten or lost", None,
              f"{len(acked)} bytes acknowledged before the crash, the log now has {len(data)}; first difference at byte {common}")


def check_one_result_per_call(obs: "Observation", events: Sequence[Event]) -> None:
    obs.count("one_result_per_call")
    blocks: list[str] = []
    results: dict[str, int] = {}
    for event in events:
        if event.type == "assistant/message":
            blocks += [b["id"] for b in event.data["message"]["content"] if b.get("type") == "tool-call"]
        elif event.type == "tool/result":
            call_id = event.data["message"]["source"]["callId"]
            results[call_id] = results.get(call_id, 0) + 1
    for call_id in blocks:
        if results.get(call_id, 0) != 1:
            _fail(obs, "one_result_per_call", f"the call has {results.get(call_id, 0)} tool/result events", call_id)


def check_verdicts(obs: "Observation", stored: Sequence[Event], closers: Sequence[Event]) -> None:
    obs.count("verdict_soundness")
    world = obs.sim.world
    started = {e.data["callId"] for e in stored if e.type == "tool/call"}
    answered = {e.data["message"]["source"]["callId"] for e in stored if e.type == "tool/result"}
    for event in closers:
        if event.type != "tool/result":
            continue
        call_id = event.data["message"]["source"]["callId"]
        code = (event.data.get("error") or {}).get("code")
        applied = bool(world.applied_for(call_id))
        obs.verdict_counts[(str(code), applied)] = obs.verdict_counts.get((str(code), applied), 0) + 1
        if code == TOOL_NOT_STARTED and applied:
            effects = [f"{e.service}.{e.op} at t={e.time:.3f} (lifetime {e.lifetime})" for e in world.applied_for(call_id)]
            _fail(obs, "verdict_soundness", "repair said TOOL_NOT_STARTED but the side effect happened", call_id, *effects)
        if call_id in started and call_id not in answered and code != TOOL_OUTCOME_UNKNOWN:
            _fail(obs, "verdict_soundness", f"a durable tool/call without result was classified {code}", call_id)


def check_approval_audit(obs: "Observation", events: Sequence[Event]) -> None:
    obs.count("approval_audit")
    open_asks: dict[str, int] = {}
    turn = None
    for event in events:
        if event.type == "turn/start":
            turn, open_asks = event.data["turn"], {}
        elif event.type == "approval/asked":
            open_asks[event.data["id"]] = event.seq
        elif event.type == "approval/decided":
            if open_asks.pop(event.data["id"], None) is None:
                _fail(obs, "approval_audit", f"approval/decided {event.data['id']} has no open approval/asked", None, f"seq {event.seq}")
        elif event.type == "turn/end":
            if open_asks and event.data["reason"]["kind"] != "interrupted":
                _fail(obs, "approval_audit", f"turn {turn} ended with unanswered approval/asked {sorted(open_asks)}")
            open_asks = {}


_REFUSALS = ("ABORTED_BEFORE_DISPATCH", "SANDBOX_UNAVAILABLE")
_DENIAL_TEXTS = ("requires approval", "the user rejected", "was cancelled")


def check_fail_closed(obs: "Observation", events: Sequence[Event]) -> None:
    obs.count("fail_closed")
    for event in events:
        if event.type != "tool/result":
            continue
        code = (event.data.get("error") or {}).get("code")
        block = event.data["message"]["content"][0]
        text = block["content"][0].get("text", "") if block.get("content") else ""
        if code in _REFUSALS or (block.get("isError") and any(t in text for t in _DENIAL_TEXTS)):
            call_id = event.data["message"]["source"]["callId"]
            effects = obs.sim.world.applied_for(call_id)
            if effects:
                _fail(obs, "fail_closed", f"a refused call ({code or text[:60]}) has effects in the world", call_id,
                      *[f"{e.service}.{e.op}" for e in effects])


def check_idempotent_keys(obs: "Observation") -> None:
    obs.count("idempotent_retry_converges")
    world = obs.sim.world
    for (service, key), count in sorted(world.applied_by_key().items()):
        if world.services[service].idempotent and count > 1:
            _fail(obs, "idempotent_retry_converges", f"{count} applied effects for key {key!r} at idempotent service {service}", key)


def check_single_writer(obs: "Observation", life: "Lifetime") -> None:
    """At every acknowledgement: no other live process has acknowledged writes to the log."""
    obs.count("lock_exclusion")
    others = sorted(l for l in obs.writers if l != life.index and not obs.sim.lifetimes[l - 1].dead)
    if others:
        _fail(obs, "lock_exclusion", f"processes {others} and {life.index} both appended to the session log while alive")
    obs.writers.add(life.index)


def check_second_writer(obs: "Observation", life: "Lifetime") -> None:
    """A second writer against a live primary must be refused with SessionAlreadyOwnedError."""
    obs.count("lock_exclusion")
    primary = obs.sim.primary
    if primary is None or primary.dead:
        return
    if not isinstance(life.boot_error, SessionAlreadyOwnedError):
        got = f"{type(life.boot_error).__name__}: {life.boot_error}" if life.boot_error else "it opened the session and appended"
        _fail(obs, "lock_exclusion", f"a second writer (process {life.index}) was not refused while process {primary.index} holds the session", None, got)


def check_fidelity(obs: "Observation", crash: "CrashRecord") -> None:
    obs.count("fidelity")
    if obs.sim.disk.image() != crash.image:
        _fail(obs, "fidelity", "the disk changed after the crash: a dead process's operation took effect", None,
              f"refused operations: {len(obs.sim.disk.fidelity_errors)}")


@attrs.frozen
class SeededSource:
    """A historical (v0) log on disk, and what migrating it must publish."""

    path: str  # the v0 generation
    target: str  # where the v3 generation is published
    data: bytes  # the v0 bytes, which must never change
    expected: bytes  # the exact v3 generation the migration publishes
    events: tuple[dict[str, Any], ...]  # the migrated events, as records

    @classmethod
    def of(cls, path: str, target: str, data: bytes, compression: str) -> "SeededSource":
        from runtime.persistence.migration import encode_migrated, migrate_v0
        from runtime.persistence.v0_format import decode_v0

        migrated = migrate_v0(decode_v0(data, compression))
        return cls(path, target, data, encode_migrated(migrated, compression), tuple(e.to_record() for e in migrated.events))


def _source_on_disk(sim: Any) -> SeededSource | None:
    """A v0 generation of the configured session found on the disk (e.g. a state explore
    restored from a recording): judged the same way, except that its original bytes are
    unknown, so they are taken as found."""
    from runtime.persistence.layout import SessionPaths, generation_filename

    cfg = sim.config
    paths = SessionPaths.of(cfg.root, cfg.workspace, cfg.session_id, cfg.compression)
    path = f"{paths.session_dir}/{generation_filename(0, cfg.compression)}"
    data = sim.disk.read_path(path)
    if data is None:
        return None
    try:
        return SeededSource.of(path, paths.log, data, cfg.compression)
    except ValueError:
        return None  # not a migratable source: recovery_succeeds judges the refusal


def check_migration_atomic(obs: "Observation", life: "Lifetime") -> None:
    """After every boot of a seeded-v0 simulation (crashed or not): judge the generations on disk."""
    seeded: SeededSource | None = getattr(obs.sim, "seeded_v0", None) or _source_on_disk(obs.sim)
    if seeded is None:
        return
    obs.count("migration_atomic")
    disk = obs.sim.disk
    source = disk.read_path(seeded.path)
    current = disk.read_path(seeded.target)
    if source != seeded.data:
        _fail(obs, "migration_atomic", "the v0 source generation was changed or removed", None,
              f"{len(seeded.data)} bytes seeded, {'none' if source is None else len(source)} bytes now")
    if source is None and current is None:
        _fail(obs, "migration_atomic", "neither the v0 nor the v3 generation exists")
    if current is not None and not current.startswith(seeded.expected):
        common = next((i for i, (a, b) in enumerate(zip(seeded.expected, current)) if a != b), min(len(current), len(seeded.expected)))
        _fail(obs, "migration_atomic", "a half-written or different v3 generation is published", None,
              f"the complete generation is {len(seeded.expected)} bytes; the file at {seeded.target} has {len(current)}, first difference at byte {common}")
    if life.session is not None and not life.dead:
        live = [e.to_record() for e in life.session.events[: len(seeded.events)]]
        if live != list(seeded.events):
            at = next((i for i, (a, b) in enumerate(zip(live, seeded.events)) if a != b), min(len(live), len(seeded.events)))
            _fail(obs, "migration_atomic", "the recovered session does not begin with the migrated log", None,
                  f"{len(seeded.events)} migrated events; first difference at seq {at}")
