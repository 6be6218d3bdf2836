"""The invariant registry and the violation record every check reports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from dsh_sim.engine.vocabulary import INVARIANT_NAMES
from runtime.session.events import Event

if TYPE_CHECKING:
    from dsh_sim.engine.crash import CrashRecord
    from dsh_sim.engine.history import Corruption, FaultFired, History
    from dsh_sim.engine.machine import Simulation

INVARIANTS: dict[str, str] = {
    "seq_dense": "after every recovery the log's seqs are dense from 0, with no duplicate or reordered event",
    "committed_bytes_stable": "bytes of the log acknowledged as durable are never rewritten or lost",
    "acked_events_survive": "every event acknowledged by a completed flush survives every crash, unchanged",
    "one_result_per_call": "every tool-call block ends with exactly one tool/result after repair (none is owed for a call whose step ended without its result: a scheduler failure fabricates none, spec §5.3, and repair clears what an ended step left, §2.1), never two",
    "verdict_soundness": "never TOOL_NOT_STARTED for a call whose effect was applied; a durable tool/call without result is TOOL_OUTCOME_UNKNOWN",
    "checkpoint_before_effect": "with the checkpoint policy: no tool body before its tool/call is durable, no model request before its request/header is durable",
    "idempotent_retry_converges": "a keyed request to an idempotent service has at most one applied effect, however often it is retried",
    "repair_idempotent": "repair of a repaired log adds nothing; resume continues the seqs with session/end-seed",
    "approval_audit": "approval/asked and approval/decided pair up by id in every turn that was not interrupted",
    "approval_policy": "every approval decision follows the policy in force when it was asked (the last approval/policy before it, else the configured default): under never the user is not asked and the outcome is rejected (or cancelled); under ask a rejection comes only from the user",
    "approval_gate": "no body of a tool that needs approval runs without an allowed-once decision for that call",
    "fail_closed": "a call refused for cancellation, approval or an unavailable sandbox has no effect in the world",
    "corrupt_frame_refused": "a corrupted complete zstd frame makes recovery refuse the log, never silently repair it",
    "recovery_succeeds": "a log that suffered only crashes (no media corruption) is always recoverable",
    "lock_exclusion": 'a second writer is refused while the first holds the session, in the spec\'s words ("... is already owned by an active write handle")',
    "fidelity": "no filesystem operation of a dead process takes effect (the disk is exactly the crash image)",
    "recovery_maximal": "recovery keeps every complete, contiguous record an independent reader finds in the log it opened after a crash (the crash image, or what a boot that failed since left of it)",
    "file_effects_durable": "after every recovery, each workspace file whose last write_file call in the recovered log succeeded is on the medium with exactly that content (config file_tools: the runtime's own file tool on the simulated disk)",
    "lossless_refused": "an append refuses exactly the data the spec refuses as not losslessly JSON-serializable (-0, NaN/Infinity, unsafe integers, lone surrogates, non-string keys, tuples, sets, cycles) with a TypeError naming it and nothing stored, and appends the rest",
    "links_not_followed": "a symbolic link another program planted where a session path goes (project or session directory, log, lock file) is never followed: its target outside the sessions root holds exactly what it held when the link was planted",
    "eventually_durable": "once injected faults stop, a graceful shutdown makes every event durable and the log reads back identically; a shutdown that met a fault either does so too or reports its failure to the caller, never loses events silently",
    "failed_append_rolled_back": "a failed append (whose rollback did not fail too) leaves no unacknowledged record in the log",
    "reference_model": "every recovery is exactly the reference model's: the events a spec reader recovers from the crash image (between everything acknowledged and everything written) and the spec's closers, event for event",
    "log_grammar": "every log is well formed: seqs dense, turns contain steps contain calls and results, each opened turn and step closed in order, one result per call after its tool/call, in the model's order; a repaired log ends between turns",
    "world_agreement": "the log and the world's ledger agree for every call: a success reached its service with its own arguments and key, applied its effect (or found the same effect under its key) and carries that response; a call the log says was not dispatched reached nothing",
    "durable_when_acknowledged": "whatever the runtime reports durable — an acknowledged batch, a flush barrier that returned, the tool/call before its tool body, the request header before its model request — is on the medium at that instant: a power cut then would keep it",
    "reader_agrees": "a read-only reader beside the writer lists the session, reads exactly the valid prefix the spec reads from the log as it is, and is refused every write and every read after close",
    "cancellation_honoured": "a tool result says what happened to its call: never a success when its turn was cancelled before the body returned (ABORTED then), ABORTED only for a body that started and ABORTED_BEFORE_DISPATCH only for one that never did — both only after a cancellation of the turn — and every call started after the cancellation is ABORTED_BEFORE_DISPATCH; no tool body (nested ones included) begins after the cancellation unless the runtime announced its dispatch before it",
    "tool_schedule": "the tool scheduler keeps its limits: at most maxParallelToolCalls tool bodies of a process run at once, and an exclusive call (its tool does not say exactly true for its arguments: not concurrency-safe, or its classifier raised) runs alone — it starts only when no other body runs, and nothing starts or runs beside it; parallel siblings start together (the first maxParallelToolCalls of a run of concurrency-safe calls all start before any of their bodies ends)",
    "points_truthful": "every named point the runtime announces carries each detail it is declared with (none null), and one that reports an appended tool/call or tool/result names the event the log holds",
    "result_shape": "every tool/result is the spec's ToolResultMessage (role user, tool source, one tool-result block of text blocks, error exactly {name, code}), and a tool body that threw gets exactly 'Error: <message>' with {name, code} for a HarnessError",
    "post_execute_once": "tools/post-execute runs exactly once for every result a tool body returned (unless a cancellation made it ABORTED) and never for a final one (ABORTED, ABORTED_BEFORE_DISPATCH, a body that threw, an injected failure); pre- and post-execute see the calls in the model's order",
    "turn_progress": "a turn with no fault, crash or cancellation does what its script says: each scripted call once, in order, succeeding or refused exactly as the session's approval policy, answers and sandbox mode decide, and the turn completes",
    "write_behind_timely": "with no fault in between, an event appended at time t is durable by t + 200 ms (the fixed write-behind window) plus the write's own time",
    "closed_handle_refuses": 'after a clean stop the closed write handle refuses append, flush and read at once with the spec\'s SessionHandleClosedError ("<op> on a closed handle")',
    "no_residue": "a process that stops cleanly leaves no descriptor open, and — when no fault struck it — no temp file or other stray name in the session directory",
    "format_conformance": "every byte the runtime writes passes an independent strict decoder of the spec's format: a checksummed frame per batch holding exactly its records, strict JSON, the envelope and v3 rules, and each core payload exactly as the spec's table shapes it (§1.5: the keys, their types, the closed vocabularies of a turn's end reason, a header's reason, an approval's outcome, a message's role and source)",
    "errors_documented": "what the runtime raises to its caller is one of its documented errors (the spec's typed persistence errors, an append whose rollback failed, an OSError an I/O fault passes through, with that fault's errno), never a TypeError, KeyError or other programming error; a storage flush whose own write failed raises",
    "dsh_agrees": "with --against dsh: the published DSH reader (list, read, inspect, load) reads every crash image the runtime recovers — projected to the v0 log DSH reads — as the runtime did: the same refusal class or the same prefix, closers and verdicts, unless a known DSH finding explains the difference",
    "route_agrees": "with --runtime dsh-route: after the same scenario, and after a kill at the same announcement of a route point both have, the published DSH route and dsh-sim's runtime agree on what a user sees — the repair verdicts, the world's ledger, the results the model sees, the calls recorded, how each turn ended — unless a documented route finding explains the difference",
    "no_hang": "no command hangs the process — boot, a prompt, a flush, a graceful stop: it never spins (a whole window of 10,000 scheduler batches without virtual time moving: a failure retried at once forever, tasks waking each other) never deadlocks while it stops (every task waiting with nothing left that could wake one), never overruns a stop's grace of 600 virtual seconds with its clock moving, and never stalls (one command running 10 CPU seconds: a loop that does not yield); the harness then kills it, as an operator would",
    "migration_atomic": "migrating a v0 log never changes it, and a published v3 generation always holds the complete migrated log: old or new readable, never neither, never half a generation",
    "write_behind_window": "every background write is where an executable model of the fixed 200 ms window (spec §3.5, written apart from the runtime) puts it: a window armed by the first event of an empty queue and never reset, expiring into one batch of exactly the queue at that instant, written then (after the write in flight), acknowledged within the write's own time; after a failed background write only the next event arms a window; a flush drains the queue itself; no background write the rules never start, and no expired window left waiting at any instant the judge visits",
    "route_decisions": "every call's tool/result, approval question and pipeline are exactly what an executable model of the route (spec §4-§6, written apart from the runtime) predicts from the deployment, the gate and guard answers, the user's answers, the cancellation and the faults: the decision (allow, deny, ask; a raising gate or guard fails closed), whether the guard, the body and post-execute ran, the question's reason and outcome, and the result's exact text, error and content",
    "lease_held": "every operation that changes a session file (a write, truncation, link or unlink of a log, a temp file or a migration stage) is done by the process that holds the exclusive lock on the file the lock path names at that instant (spec §10.3): never without it, never under a lock on a file removed or replaced since",
    "foreign_files_kept": "a file another process put at a name the runtime publishes (target_exists) still holds exactly what it held: the link refuses, or an identical file is taken as the publication, never removed or overwritten",
    "model_exchange": "both sides of the model port agree with the log and the spec's loop (§1.3, §1.6, §10.1): each step appends exactly its inputs before its request (the system prompt once, first; the prompt's text in its turn's first step after any plugin notices, no user message in later steps; a request/header with the model's provider, model and tools only as initial, resume or change, a request/context only on a change); the request names its step, offers every mounted tool by name and description and carries exactly the log's surface; and the step's assistant/message embeds exactly the chunks the model delivered (the last one may be lost to a cancellation), its content and usage are what they make, and it is marked interrupted exactly when a cancellation cut it short — none is appended only for a failed stream or a cancellation before any content",
}


# the registry implements exactly the scenario language's names, in its order
if tuple(INVARIANTS) != INVARIANT_NAMES:
    raise ImportError(f"the invariants registered differ from engine.vocabulary.INVARIANT_NAMES: {set(INVARIANTS) ^ set(INVARIANT_NAMES)}")

NO_HANG = "no_hang"


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


class Judge(Protocol):
    """What a check reads and where it reports (the checker, :mod:`dsh_sim.evidence.checker`)."""

    sim: Simulation
    violations: list[Violation]
    recoveries: list[dict[str, Any]]
    verdict_counts: dict[tuple[str, bool], int]

    @property
    def history(self) -> History: ...
    @property
    def acked(self) -> dict[int, Event]: ...
    @property
    def acked_bytes(self) -> bytes: ...
    @property
    def faults(self) -> list[FaultFired]: ...
    @property
    def corruptions(self) -> list[Corruption]: ...
    @property
    def crashes(self) -> list[CrashRecord]: ...
    @property
    def paused_until(self) -> float: ...
    def report(self, violation: Violation) -> None: ...
    def count(self, name: str) -> None: ...


def fail(obs: Judge, name: str, message: str, call_id: str | None = None, *evidence: str) -> None:
    violation = Violation(name, message, call_id, tuple(evidence))
    if violation not in obs.violations:  # a check that runs after every step reports once
        obs.report(violation)


def call_seq(events: Sequence[Event], call_id: str) -> int | None:
    for event in events:
        if event.type == "tool/call" and event.data["callId"] == call_id:
            return event.seq
    return None
