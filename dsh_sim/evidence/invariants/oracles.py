"""The oracles' verdicts as invariants: reference model, log grammar, world agreement, format.

Each function runs one oracle of :mod:`dsh_sim.evidence.oracles` at the moment it concerns
and reports what it finds through :func:`fail`, so violations read like every other one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dsh_sim.adapters.post_execute_note import NOTE_BLOCK
from dsh_sim.adapters.simfs.disk import FileNode
from dsh_sim.evidence.invariants.base import Judge, fail
from dsh_sim.evidence.oracles import agreement, approval_policy, cancellation, payloads, post_execute, reference, result_shape
from dsh_sim.evidence.oracles.grammar import Grammar
from dsh_sim.evidence.oracles.grammar import problems as grammar_problems
from dsh_sim.evidence.oracles.schedule import Schedule
from dsh_sim.evidence.oracles.spec_log import check_written, read_recoverable
from dsh_sim.evidence.oracles.spec_records import SpecViolation
from runtime.session.events import Event

if TYPE_CHECKING:
    from dsh_sim.engine.crash import CrashRecord
    from dsh_sim.engine.lifetime import Lifetime
    from dsh_sim.engine.observer import ReaderView

DURABLE = "durable_when_acknowledged"
FORMAT = "format_conformance"
REFERENCE = "reference_model"
GRAMMAR = "log_grammar"
AGREEMENT = "world_agreement"


def _log_bytes(obs: Judge) -> bytes | None:
    return obs.sim.disk.read_path(obs.sim.config.log_path)


def check_acknowledged_bytes(obs: Judge, batch: Sequence[Event], before: bytes, after: bytes | None) -> None:
    """At every acknowledgement: the file is exactly what the spec says a writer writes, and
    its last unit (a zstd frame; raw: the last lines) holds exactly the acknowledged batch."""
    if obs.corruptions or after is None:
        return  # bytes the harness damaged on purpose are judged by corrupt_frame_refused
    obs.count(FORMAT)
    compression = obs.sim.config.compression
    try:
        log = check_written(after, compression)
    except SpecViolation as err:
        fail(
            obs,
            FORMAT,
            f"the log violates the format after an acknowledged batch: {err}",
            None,
            f"{len(after)} bytes, {len(batch)} events acknowledged",
        )
        return
    records = [e.to_record() for e in batch]
    if compression == "zstd":
        if not batch and not before and len(log.frames) != 1:
            fail(obs, FORMAT, f"an empty session was published with {len(log.frames)} frames (the header frame alone expected)")
            return
        if batch:
            count = log.counts[-1] if log.counts else 0
            if count != len(batch):
                fail(obs, FORMAT, f"an acknowledged batch of {len(batch)} events is not exactly one frame (the last frame holds {count})")
                return
    if batch and list(log.records[-len(batch) :]) != records:
        fail(obs, FORMAT, "the last records on disk are not the acknowledged batch", None, f"batch seqs {batch[0].seq}..{batch[-1].seq}")
    if obs.sim.kind == "agent":  # (the storage machine appends events of its own, with any data)
        for event in batch:
            wrong = payloads.problem(event.type, event.data)
            if wrong is not None:
                fail(obs, FORMAT, f"{event.type} {event.seq}: the payload is not the spec's (§1.5): {wrong}", None, repr(event.data)[:300])


def report_differences(expected: reference.Expected, report: Any, agent: bool) -> list[str]:
    """What the recovery report tells its caller besides the events — where the torn tail
    starts, and each interrupted call's verdict — against the spec's reading of the same bytes."""
    out = []
    torn = getattr(report, "torn", None)
    start = torn.truncate_to if torn is not None else None
    if start != expected.torn_start:
        out.append(f"the recovery report's torn tail starts at {start}, the spec reader's at {expected.torn_start}")
    if agent and dict(report.verdicts) != expected.verdicts:
        out.append(f"the recovery report's verdicts {dict(report.verdicts)} are not the spec's {expected.verdicts}")
    return out


def check_reference(obs: Judge, life: Lifetime, crash: CrashRecord) -> None:
    """After the first boot that follows a crash: the recovery is exactly the reference model's."""
    from dsh_sim.adapters.simfs.disk import Disk

    sim = obs.sim
    compression = sim.config.compression
    if obs.history.seeded is not None and Disk.from_image(crash.image).read_path(sim.config.log_path) is None:
        return  # the log is still the historical generation: judged by migration_atomic
    obs.count(REFERENCE)
    data = Disk.from_image(crash.image).read_path(sim.config.log_path)
    expected = reference.expected_recovery(data, compression)
    if obs.corruptions:
        return  # bytes the harness damaged on purpose: corrupt_frame_refused judges the refusal
    for problem in reference.crash_history_problems(expected, crash.acked_bytes, compression, crash.in_memory):
        fail(obs, REFERENCE, problem, None, f"crash {crash.label} at {crash.point or 'quiescence'} ({crash.phase})")
    report = life.report
    stored = tuple(report.events) if report is not None else ()
    closers = tuple(getattr(report, "closers", ())) if report is not None else ()
    if sim.kind != "agent":
        expected = reference.Expected(expected.stored, (), expected.refused, expected.torn_start)
    if report is None and life.boot_error is None and expected.refused is None and expected.stored:
        fail(
            obs,
            REFERENCE,
            f"recovery started a new session, but the disk holds {len(expected.stored)} events",
            None,
            f"crash {crash.label}",
        )
        return
    for difference in reference.compare(expected, life.boot_error, stored, closers):
        fail(obs, REFERENCE, difference, None, f"crash {crash.label} at {crash.point or 'quiescence'} ({crash.phase})")
    if report is not None and expected.refused is None:
        for difference in report_differences(expected, report, sim.kind == "agent"):
            fail(obs, REFERENCE, difference, None, f"crash {crash.label} at {crash.point or 'quiescence'} ({crash.phase})")
    if sim.kind == "agent" and expected.refused is None:
        # the turns before the last were judged when they were live; the last one was cut by the
        # crash (its latest events never reached a live check), so it is judged here with the closers
        history = _history_length(obs)
        _, problems = reference.repaired_tail(expected, history)
        obs.count(GRAMMAR)
        for problem in problems:
            fail(obs, GRAMMAR, problem)
        obs.count(AGREEMENT)  # (what check_agreement judges with a fresh tracker, remembered)
        for item in reference.tail_disagreements(expected, obs.sim.world.ledger, obs.sim.config.workspace, history):
            fail(obs, AGREEMENT, item.message, item.call_id)


def _history_length(obs: Judge) -> int:
    """How many events of the log a seeded historical log migrated to (0 without one)."""
    from dsh_sim.evidence.invariants.storage import SeededSource

    placed = obs.history.seeded
    if placed is None:
        return 0
    source = SeededSource.of(placed, obs.sim.config.compression)
    return len(source.events) if source.events is not None else 0


def check_grammar(obs: Judge, events: Sequence[Any], *, closed: bool, what: str, grammar: Grammar | None = None) -> None:
    """Feed ``events`` to ``grammar`` (a fresh one by default); ``closed``: it must end between turns."""
    obs.count(GRAMMAR)
    for problem in grammar_problems(grammar if grammar is not None else Grammar(), events, closed=closed, what=what):
        fail(obs, GRAMMAR, problem)


def check_agreement(obs: Judge, events: Sequence[Any], tracker: agreement.Tracker | None = None) -> None:
    """Judge ``events`` (fed to ``tracker``, which remembers the log so far) against the ledger."""
    obs.count(AGREEMENT)
    tracker = tracker if tracker is not None else agreement.Tracker(workspace=obs.sim.config.workspace)
    for item in tracker.feed(events, obs.sim.world.ledger):
        fail(obs, AGREEMENT, item.message, item.call_id)


CANCELLATION = "cancellation_honoured"


def check_cancellation(obs: Judge, events: Sequence[Any], lifetime: int) -> None:
    """Each new result of process ``lifetime`` says what the tools saw of its call (§5.2, §5.3)."""
    obs.count(CANCELLATION)
    for problem in cancellation.judge(events, obs.history.tool_marks, lifetime):
        fail(obs, CANCELLATION, problem.message, problem.call_id)


APPROVAL_POLICY = "approval_policy"


def check_approval_policy(obs: Judge, events: Sequence[Any], watch: approval_policy.PolicyWatch) -> None:
    """Each new approval decision followed the policy in force when it was asked (counted per
    decision judged: a log without approvals checks nothing)."""
    before = watch.judged
    problems = watch.feed(events, obs.history.approval_consulted)
    for _ in range(watch.judged - before):
        obs.count(APPROVAL_POLICY)
    for problem in problems:
        fail(obs, APPROVAL_POLICY, problem)


POST = "post_execute_once"


def check_post_execute(obs: Judge, events: Sequence[Any], lifetime: int) -> None:
    """Each new result of process ``lifetime`` passed post-execute as the spec says (§5.2)."""
    obs.count(POST)
    note = NOTE_BLOCK if obs.sim.config.post_execute_note else None
    for problem in post_execute.judge(events, obs.history.tool_marks, lifetime, note):
        fail(obs, POST, problem.message, problem.call_id)


SHAPE = "result_shape"


def check_result_shape(obs: Judge, events: Sequence[Any], lifetime: int) -> None:
    """Each new result of process ``lifetime`` has the spec's shape and, when its body threw,
    the spec's error text and info (§1.5, §5.2)."""
    obs.count(SHAPE)
    for problem in result_shape.judge(events, obs.history.tool_marks, lifetime):
        fail(obs, SHAPE, problem.message, problem.call_id)


SCHEDULE = "tool_schedule"


def check_schedule(obs: Judge, schedule: Schedule) -> None:
    """The tool bodies that ran since the last check kept the scheduler's limits (§5.1)."""
    obs.count(SCHEDULE)
    for problem in schedule.feed(obs.history.tool_marks):
        fail(obs, SCHEDULE, problem.message, problem.call_id)


def recheck_refusals(obs: Judge, tracker: agreement.Tracker) -> None:
    """At the end: nothing the log refused reached a service later either."""
    obs.count(AGREEMENT)
    for item in tracker.recheck_refusals(obs.sim.world.ledger):
        fail(obs, AGREEMENT, item.message, item.call_id)


def durable_log(obs: Judge) -> bytes | None:
    """The log as a power cut at this instant would leave it: fsynced bytes, reached through
    directory entries that were fsynced too."""
    disk = obs.sim.disk
    ino = disk.resolve(obs.sim.config.log_path, durable=True)
    node = disk.nodes.get(ino) if ino is not None else None
    return node.durable if isinstance(node, FileNode) else None


def check_acknowledgement_durable(obs: Judge, after: bytes | None) -> None:
    """An acknowledged batch is on the medium the moment it is acknowledged."""
    if after is None or obs.corruptions:
        return  # (bytes the harness damaged on purpose are judged by corrupt_frame_refused)
    obs.count(DURABLE)
    durable = durable_log(obs)
    if durable is None or not durable.startswith(after):
        kept = "no log at all" if durable is None else f"{len(durable)} of its {len(after)} bytes"
        fail(obs, DURABLE, f"a batch was acknowledged, but a power cut now would keep {kept}")


def check_announcement(obs: Judge, details: dict[str, Any]) -> None:
    """An acknowledgement names the batch it acknowledges — its first seq and its count, the
    details the point is declared with — as a probe observer (a replicator, a UI) relies on."""
    batch = tuple(details.get("_events", ()))
    obs.count(DURABLE)
    first, count = details.get("first_seq"), details.get("count")
    if not isinstance(first, int) or count != len(batch) or (batch and first != batch[0].seq):
        fail(
            obs,
            DURABLE,
            f"an acknowledgement of {len(batch)} event(s) from seq {batch[0].seq if batch else '-'} announced first_seq={first!r}, count={count!r}",
        )


def check_event_durable(obs: Judge, events: Sequence[Event], seq: int, what: str) -> None:
    """``events[seq]`` (and so the log up to it) is on the medium now: ``what`` relies on it."""
    if obs.corruptions:
        return
    obs.count(DURABLE)
    durable = durable_log(obs)
    records: tuple[dict[str, Any], ...] = ()
    if durable is not None:
        try:
            records = read_recoverable(durable, obs.sim.config.compression).records
        except SpecViolation:
            records = ()
    if seq >= len(records) or records[seq] != events[seq].to_record():
        fail(
            obs,
            DURABLE,
            f"{what}, but a power cut now would keep only {len(records)} events (seq {seq} {events[seq].type} is not on the medium)",
        )


READER = "reader_agrees"


def check_reader(obs: Judge, view: ReaderView) -> None:
    """What a read-only reader saw is what the spec says a reader sees (§10.2, §10.5)."""
    obs.count(READER)
    session_id = obs.sim.config.session_id
    if session_id not in view.listed:
        fail(obs, READER, f"the session is not listed (listed: {list(view.listed)})")
    data = obs.sim.disk.read_path(obs.sim.config.log_path)
    if data is not None and not obs.corruptions:
        try:
            expected = read_recoverable(data, obs.sim.config.compression).records
        except SpecViolation:
            expected = None
        if expected is not None:
            difference = reference.first_difference("a reader's events", [e.to_record() for e in view.first], expected)
            if difference:
                fail(obs, READER, difference)
    half = len(view.first) // 2
    if [e.to_record() for e in view.tail] != [e.to_record() for e in view.first[half:]]:
        fail(obs, READER, f"a read from offset {half} is not the suffix of a full read")
    wanted = {"append": "SessionReadOnlyError", "flush": "SessionReadOnlyError", "closed-read": "SessionHandleClosedError"}
    for name, error in wanted.items():
        if view.refusals.get(name) != error:
            fail(obs, READER, f"a read-only handle's {name}: {view.refusals.get(name)} (must be refused with {error})")


def check_reader_refused(obs: Judge, error: BaseException, *, quiet: bool) -> None:
    """A reader beside the writer was refused: on a log the spec reads (no damage, no fault
    during the step), listing, opening and reading it must succeed (§3.8, §10.2)."""
    if obs.corruptions or not quiet:
        return  # a damaged log or an injected I/O fault may legitimately refuse the reader
    obs.count(READER)
    data = obs.sim.disk.read_path(obs.sim.config.log_path)
    if data is not None:
        try:
            read_recoverable(data, obs.sim.config.compression)
        except SpecViolation:
            return  # the spec refuses these bytes too
    fail(obs, READER, f"a reader was refused on a log the spec reads: {type(error).__name__}: {error}"[:300])


def check_seeded_repair(obs: Judge, life: Lifetime) -> None:
    """The first boot of a seeded (historical) log: what its repair appended is exactly the
    spec's closers for the log it migrated and recovered (§2).  No crash of ours precedes it, so
    the reference model (judged after our crashes) does not see it; the old runtime's crash is
    the history's own shape (an open stream, an open call, a step that ended without its
    results, a call no message announced)."""
    from dsh_sim.evidence.oracles import spec_repair

    report = life.report
    if report is None or life.boot_error is not None or not hasattr(report, "closers"):
        return
    obs.count(REFERENCE)
    stored = [event.to_record() for event in report.events]
    want = spec_repair.closers(stored)
    got = [event.to_record() for event in report.closers]
    if got != want:
        fail(
            obs,
            REFERENCE,
            f"the repair of the seeded history appended {[r['type'] for r in got]}, the spec's closers are {[r['type'] for r in want]}",
            None,
            f"first difference: {next((f'{g} != {w}' for g, w in zip(got, want) if g != w), 'in length')}",
        )
