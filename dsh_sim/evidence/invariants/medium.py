"""What the medium holds when the runtime says so: an acknowledged batch, a flush that returned
and each barrier the checkpoint policy relies on are durable that instant
(``durable_when_acknowledged``); every byte written is the spec's format
(``format_conformance``); a reader beside the writer reads what the spec reads (``reader_agrees``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dsh_sim.adapters.simfs.disk import FileNode
from dsh_sim.evidence.invariants.base import Invariant, Judge, fail
from dsh_sim.evidence.oracles import payloads, reference
from dsh_sim.evidence.oracles.spec_log import check_written, read_recoverable
from dsh_sim.evidence.oracles.spec_records import SpecViolation
from runtime.session.events import Event

if TYPE_CHECKING:
    from dsh_sim.engine.lifetime import Lifetime
    from dsh_sim.engine.observer import ReaderView
    from dsh_sim.evidence.invariants.moments import Acknowledged, Point, Step

DURABLE = "durable_when_acknowledged"
FORMAT = "format_conformance"


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


def _acknowledged(obs: Judge, ack: Acknowledged) -> None:
    check_acknowledgement_durable(obs, ack.after)


def _relied_on(obs: Judge, at: Point) -> None:
    """An acknowledgement names its batch; with the checkpoint policy, the barrier before a
    tool body or a model request made the event it protects durable."""
    if at.name == "persist.batch.durable":
        check_announcement(obs, at.details)
    elif at.name == "tools.execute.body":
        if not at.details.get("nested"):
            _relies_on_durable(obs, at.life, "tool/call", at.details.get("call_id"), "a tool body started")
    else:
        _relies_on_durable(obs, at.life, "request/header", None, "a model request was sent")


def _relies_on_durable(obs: Judge, life: Lifetime, kind: str, call_id: Any, what: str) -> None:
    """With the checkpoint policy, the barrier before ``what`` made the event it protects
    durable: the newest ``kind`` (of ``call_id``) must be on the medium now."""
    if not obs.sim.config.checkpoint_policy or life.agent is None:
        return
    events = life.agent.session.events
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.type == kind and (call_id is None or event.data.get("callId") == call_id):
            check_event_durable(obs, events, index, what)
            return


def _flushed(obs: Judge, step: Step) -> None:
    """A flush that returned made the whole session durable (an empty one: its header-only log)."""
    life = step.life
    if step.op != "flush" or step.outcome != "ok" or life is None or life.session is None:
        return
    events = life.session.events
    if events:
        check_event_durable(obs, events, len(events) - 1, "a flush barrier returned")
    elif not obs.corruptions and durable_log(obs) is None:
        obs.count(DURABLE)
        fail(obs, DURABLE, "a flush of an empty session returned, but no log is on the medium (spec §4.2: a header-only file)")


DURABLE_WHEN_ACKNOWLEDGED = Invariant(
    DURABLE,
    (
        "whatever the runtime reports durable — an acknowledged batch, a flush barrier that returned, the"
        " tool/call before its tool body, the request header before its model request — is on the medium "
        "at that instant: a power cut then would keep it"
    ),
    checks={"acknowledged": _acknowledged, "point": _relied_on, "step": _flushed},
    points=frozenset({"persist.batch.durable", "tools.execute.body", "llm.request"}),
)
READER_AGREES = Invariant(
    READER,
    (
        "a read-only reader beside the writer lists the session, reads exactly the valid prefix the spec "
        "reads from the log as it is, and is refused every write and every read after close"
    ),
    checks={
        "reader": lambda obs, seen: check_reader(obs, seen.view),
        "reader_failed": lambda obs, failure: check_reader_refused(obs, failure.error, quiet=failure.quiet),
    },
)
FORMAT_CONFORMANCE = Invariant(
    FORMAT,
    (
        "every byte the runtime writes passes an independent strict decoder of the spec's format: a "
        "checksummed frame per batch holding exactly its records, strict JSON, the envelope and v3 rules,"
        " and each core payload exactly as the spec's table shapes it (§1.5: the keys, their types, the "
        "closed vocabularies of a turn's end reason, a header's reason, an approval's outcome, a "
        "message's role and source)"
    ),
    checks={"acknowledged": lambda obs, ack: check_acknowledged_bytes(obs, ack.batch, ack.before, ack.after)},
)
