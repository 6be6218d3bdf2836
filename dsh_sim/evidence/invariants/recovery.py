"""After every boot: the log opened, what survived, and whether repair was honest."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dsh_sim.evidence.invariants import calls
from dsh_sim.evidence.invariants.base import Invariant, Judge, fail
from dsh_sim.evidence.invariants.links import refused_for_a_link
from dsh_sim.evidence.invariants.moments import Boot, accepted
from dsh_sim.evidence.invariants.storage import undamaged_end
from dsh_sim.evidence.oracles.event_records import kind_of, seq_of
from dsh_sim.evidence.oracles.shared_prefix import shared_length
from dsh_sim.evidence.oracles.spec_log import read_recoverable
from dsh_sim.evidence.oracles.spec_records import SpecViolation
from runtime.persistence.errors import SessionAlreadyOwnedError, SessionPersistenceCorruptionError
from runtime.session.events import Event
from runtime.session.repair import (
    interrupted_turn_closers,
)

if TYPE_CHECKING:
    from dsh_sim.engine.crash import CrashRecord
    from dsh_sim.engine.lifetime import Lifetime


def io_fault_refused(obs: Judge, life: Lifetime) -> bool:
    """Whether the boot failed because of a fault injected into it: the error of a filesystem
    fault (the open passes an I/O error through), a cancellation of the open, or the lock held
    by another process that won the race (``contended``).  The recovery
    is then judged at the next boot that opens the log."""
    from dsh_sim.engine.programs import OpenCancelled
    from dsh_sim.engine.vocabulary import ERRNOS

    error = life.boot_error
    if isinstance(error, OpenCancelled):  # (only a cancel fault during boot raises it)
        return True
    if isinstance(error, SessionAlreadyOwnedError) and any(f.lifetime == life.index and f.action == "contended" for f in obs.faults):
        return True  # another process won the race to open the session: this one rightly stays out
    if not isinstance(error, OSError):
        return False
    plan = obs.sim.plan.rules
    return any(
        f.lifetime == life.index and f.action in ("error", "fsync_fail") and ERRNOS.get(plan[f.rule].errno) == error.errno
        for f in obs.faults
    )


def check_recovery_succeeds(obs: Judge, boot: Boot) -> None:
    """A log that suffered only crashes (no media damage) always opens."""
    error = boot.life.boot_error
    if error is not None:
        if isinstance(error, SessionPersistenceCorruptionError) and obs.corruptions:
            return  # refusing a log the medium damaged is always safe (crashes only)
        if io_fault_refused(obs, boot.life):
            return  # an injected I/O error failed the open itself: the error passes through (spec §3.6)
        if refused_for_a_link(obs, error):
            return  # a link planted at a session path: refusing it is the job (links_not_followed)
    obs.count(SUCCEEDS)  # counted when it holds too: a check that only shows up failing proves nothing
    if error is not None:
        fail(
            obs,
            SUCCEEDS,
            f"recovery refused the log: {type(error).__name__}: {error}",
            None,
            f"media corruptions injected: {len(obs.corruptions)}",
        )


def check_corrupt_frame_refused(obs: Judge, boot: Boot) -> None:
    """A complete zstd frame the medium damaged makes the open refuse the log."""
    if not any(c.complete_frame for c in obs.corruptions):
        return
    error = boot.life.boot_error
    if error is not None:
        if isinstance(error, SessionPersistenceCorruptionError):
            obs.count(CORRUPT)
        return
    if boot.life.session is None or obs.sim.config.compression != "zstd":
        return  # (a boot that crashed before it opened the session accepted nothing)
    obs.count(CORRUPT)
    fail(
        obs,
        CORRUPT,
        "recovery accepted a log whose complete frame was corrupted",
        None,
        f"corruptions {[(c.path, c.offset) for c in obs.corruptions]}",
    )


def check_repair_idempotent(obs: Judge, boot: Boot) -> None:
    """Repairing the repaired log adds nothing, and resume continues with session/end-seed."""
    obs.count(IDEMPOTENT)
    full, live = boot.full, boot.live
    again = interrupted_turn_closers(full) if obs.sim.kind == "agent" else ()
    if again:  # (a storage process does not repair: persistence returns the valid prefix, spec §10.7)
        fail(obs, IDEMPOTENT, f"repair of the repaired log adds {[e.type for e in again]}")
    needs_seed = bool(full) and full[-1].type != "session/end-seed"  # spec §1.2: one end-seed per resume
    if boot.stored and needs_seed and (len(live) <= len(full) or live[len(full)].type != "session/end-seed"):
        fail(
            obs,
            IDEMPOTENT,
            "resume did not continue the seqs with session/end-seed",
            None,
            f"log length {len(full)}, live length {len(live)}",
        )


SUCCEEDS = "recovery_succeeds"
CORRUPT = "corrupt_frame_refused"
IDEMPOTENT = "repair_idempotent"


def check_recovery_maximal(obs: Judge, life: Lifetime, crash: CrashRecord, stored: Sequence[Event]) -> None:
    """Recovery kept every complete record an independent reader finds in the log it opened.

    The log as this process found it when it started (:attr:`Lifetime.log_at_boot`): right
    after the crash that is the crash image's log; after a boot an injected fault failed, it is
    what that boot left — a torn tail it truncated before its re-append failed is gone,
    unacknowledged and legitimately, and what remains must all be kept."""
    from dsh_sim.evidence.oracles.whole_records import readable_records

    data = life.log_at_boot
    if data is None:
        return
    obs.count("recovery_maximal")
    readable = readable_records(data, obs.sim.config.compression)
    if readable is not None and len(stored) < readable:
        fail(
            obs,
            "recovery_maximal",
            f"recovery kept {len(stored)} events but the medium holds {readable} complete, contiguous records",
            None,
            f"crash {crash.label} at {crash.point or 'quiescence'} ({crash.phase})",
        )


def _dense(events: Sequence[Any]) -> bool:
    """Whether the seqs run 0, 1, 2, ... (C-level passes; ``False`` sends the caller to the
    walk below, which decides and says where).  The leading events that are the very objects
    of the last log found dense are not read again (see :mod:`.shared_prefix`)."""
    if not events:
        return True
    known = _DENSE[0]
    start = shared_length(events, known)
    get = operator.itemgetter("seq") if type(events[0]) is dict else operator.attrgetter("seq")
    try:
        dense = list(map(get, itertools.islice(events, start, None))) == list(range(start, len(events)))
    except (AttributeError, KeyError, TypeError):
        return False
    if dense:
        _DENSE[0] = events
    return dense


_DENSE: list[Sequence[Any]] = [()]  # the last log found dense


def check_seq_dense(obs: Judge, events: Sequence[Any]) -> None:
    obs.count("seq_dense")
    if _dense(events):
        return
    for index, event in enumerate(events):
        if seq_of(event) != index:
            fail(
                obs,
                "seq_dense",
                f"event {index} has seq {seq_of(event)}",
                None,
                f"types around: {[kind_of(e) for e in events[max(0, index - 2) : index + 2]]}",
            )
            return


_SURVIVED: dict[int, tuple[Event, Event]] = {}  # id(acked) -> (acked, a live event found equal to it)
_SURVIVOR: dict[int, Event] = {}  # id(acked) -> that live event (both pinned by _SURVIVED)


def _same(acked: Event, live: Event) -> bool:
    """``live == acked`` (Event equality is record equality), remembered per acknowledged event.

    Explore judges the same acknowledged events against the same decoded events (shared by
    the decoder's memo) in thousands of recoveries; events are immutable, so a pair found
    equal stays equal.  Each entry holds both events, so neither id can be reused meanwhile."""
    known = _SURVIVED.get(id(acked))
    if known is not None and known[0] is acked and known[1] is live:
        return True
    if live != acked:
        return False
    if len(_SURVIVED) >= 1 << 16:
        _SURVIVED.clear()
        _SURVIVOR.clear()
    _SURVIVED[id(acked)] = (acked, live)
    _SURVIVOR[id(acked)] = live
    return True


def undamaged_prefix(obs: Judge) -> int | None:
    """How many acknowledged events lie wholly before the first damaged byte (see
    :func:`undamaged_end`); ``None`` when the log was never damaged."""
    data = obs.acked_bytes
    end = undamaged_end(obs, data)
    if end is None:
        return None
    try:
        return len(read_recoverable(data[:end], obs.sim.config.compression).records)
    except SpecViolation:
        return 0  # the damage is in the header: nothing before it to protect


def forget_survivors() -> None:
    """Empty the memos of :func:`_same` and of the call checks (:func:`.calls.forget`): they
    keep the events they hold alive until cleared."""
    _SURVIVED.clear()
    _SURVIVOR.clear()
    _DENSE[0] = ()
    calls.forget()


def _known_survivors(acked: dict[int, Event], seqs: list[int], live: Sequence[Event]) -> int:
    """How many leading acknowledged events (seqs 0, 1, ...) were already found equal to the
    very live events at their seqs (one C-level pass; the walk judges the rest)."""
    if seqs != list(range(len(seqs))):
        return 0
    known = map(_SURVIVOR.get, map(id, map(acked.__getitem__, seqs)))
    return next(itertools.compress(itertools.count(), map(operator.is_not, known, live)), min(len(seqs), len(live)))


def check_acked(obs: Judge, live: Sequence[Event]) -> None:
    obs.count("acked_events_survive")
    protected = undamaged_prefix(obs)
    seqs = sorted(obs.acked)
    for seq in seqs[_known_survivors(obs.acked, seqs, live) :]:
        if protected is not None and seq >= protected:
            break  # media damage may take what lies at and after it (see undamaged_prefix)
        acked = obs.acked[seq]
        if seq >= len(live) or not _same(acked, live[seq]):
            found = live[seq].type if seq < len(live) else "nothing"
            fail(
                obs,
                "acked_events_survive",
                f"acknowledged event seq {seq} ({acked.type}) was lost or changed",
                None,
                f"recovered log has {len(live)} events; at seq {seq}: {found}",
            )
            return


def check_committed_bytes(obs: Judge, crash: CrashRecord) -> None:
    obs.count("committed_bytes_stable")
    data = obs.sim.disk.read_path(obs.sim.config.log_path) or b""
    acked = crash.acked_bytes
    end = undamaged_end(obs, acked)
    if end is not None:
        acked = acked[:end]  # media damage may take what lies at and after it
    if not data.startswith(acked):
        common = next((i for i, (a, b) in enumerate(zip(acked, data)) if a != b), min(len(acked), len(data)))
        fail(
            obs,
            "committed_bytes_stable",
            "acknowledged log bytes were rewritten or lost",
            None,
            f"{len(acked)} bytes acknowledged before the crash, the log now has {len(data)}; first difference at byte {common}",
        )


def _after_a_crash(obs: Judge, boot: Boot) -> None:
    if boot.crash is not None:
        check_committed_bytes(obs, boot.crash)


def _maximal(obs: Judge, boot: Boot) -> None:
    if boot.crash is not None and not obs.corruptions:
        check_recovery_maximal(obs, boot.life, boot.crash, boot.stored)


SEQ_DENSE = Invariant(
    "seq_dense",
    ("after every recovery the log's seqs are dense from 0, with no duplicate or reordered event"),
    checks={"boot": accepted(lambda obs, boot: check_seq_dense(obs, boot.after_repair))},
)
COMMITTED_BYTES_STABLE = Invariant(
    "committed_bytes_stable",
    ("bytes of the log acknowledged as durable are never rewritten or lost"),
    checks={"boot": accepted(_after_a_crash)},
)
ACKED_EVENTS_SURVIVE = Invariant(
    "acked_events_survive",
    ("every event acknowledged by a completed flush survives every crash, unchanged"),
    checks={"boot": accepted(lambda obs, boot: check_acked(obs, boot.live))},
)
REPAIR_IDEMPOTENT = Invariant(
    IDEMPOTENT,
    ("repair of a repaired log adds nothing; resume continues the seqs with session/end-seed"),
    checks={"boot": accepted(check_repair_idempotent)},
)
CORRUPT_FRAME_REFUSED = Invariant(
    CORRUPT,
    ("a corrupted complete zstd frame makes recovery refuse the log, never silently repair it"),
    checks={"boot": check_corrupt_frame_refused},
)
RECOVERY_SUCCEEDS = Invariant(
    SUCCEEDS, ("a log that suffered only crashes (no media corruption) is always recoverable"), checks={"boot": check_recovery_succeeds}
)
RECOVERY_MAXIMAL = Invariant(
    "recovery_maximal",
    (
        "recovery keeps every complete, contiguous record an independent reader finds in the log it "
        "opened after a crash (the crash image, or what a boot that failed since left of it)"
    ),
    checks={"boot": accepted(_maximal)},
)
