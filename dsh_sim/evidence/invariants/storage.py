"""Storage-level checks: one writer, no writes from the dead, safe migration, rollback, durability."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from dsh_sim.adapters.simfs.frames import layouts_safe
from dsh_sim.engine.media import as_written
from dsh_sim.evidence.invariants.base import Invariant, Judge, fail
from dsh_sim.evidence.invariants.links import refused_for_a_link
from dsh_sim.evidence.invariants.moments import Shutdown
from dsh_sim.evidence.oracles.event_records import first_mismatch
from dsh_sim.evidence.oracles.spec_log import read_recoverable
from dsh_sim.evidence.oracles.spec_records import SpecViolation
from dsh_sim.evidence.oracles.whole_records import readable_records
from runtime.persistence.errors import GenerationTargetConflictError, SessionAlreadyOwnedError

if TYPE_CHECKING:
    from dsh_sim.engine.crash import CrashRecord
    from dsh_sim.engine.history import SeededLog
    from dsh_sim.engine.lifetime import Lifetime


def check_single_writer(obs: Judge, life: Lifetime) -> None:
    """At every acknowledgement: no other live process has acknowledged writes to the log."""
    obs.count("lock_exclusion")
    others = sorted(w for w in obs.history.writers if w != life.index and not obs.sim.lifetimes[w - 1].dead)
    if others:
        fail(obs, "lock_exclusion", f"processes {others} and {life.index} both appended to the session log while alive")


def check_second_writer(obs: Judge, life: Lifetime) -> None:
    """A second writer against a live primary must be refused with SessionAlreadyOwnedError."""
    obs.count("lock_exclusion")
    primary = obs.sim.primary
    if primary is None or primary.dead:
        return
    if not isinstance(life.boot_error, SessionAlreadyOwnedError):
        got = f"{type(life.boot_error).__name__}: {life.boot_error}" if life.boot_error else "it opened the session and appended"
        fail(
            obs,
            "lock_exclusion",
            f"a second writer (process {life.index}) was not refused while process {primary.index} holds the session",
            None,
            got,
        )
        return
    # the spec's words (§10.2: "… is already owned by an active write handle"); a detail only when the
    # lock file was replaced under the opener again and again (a foreign actor, a fault of this process)
    text = f'session "{obs.sim.config.session_id}" is already owned by an active write handle'
    raced = any(f.lifetime == life.index and f.action in ("replaced", "removed") for f in obs.faults)
    said = str(life.boot_error)
    if said != text and not (raced and said.startswith(text + " (")):
        fail(obs, "lock_exclusion", f"the second writer's refusal says {said!r}; the spec says {text!r}")


def check_fidelity(obs: Judge, crash: CrashRecord) -> None:
    obs.count("fidelity")
    if obs.sim.disk.image() != crash.image:
        fail(
            obs,
            "fidelity",
            "the disk changed after the crash: a dead process's operation took effect",
            None,
            f"refused operations: {len(obs.sim.disk.fidelity_errors)}",
        )


@attrs.frozen
class SeededSource:
    """A historical (v0) log on disk, and what migrating it must publish.

    The expectation comes from the log's logical description (the ``seed_v0`` step put it on
    the history), through :func:`dsh_sim.scenario.v0.expect.expected_migration`: the spec's
    reading and migration rules applied to what the log was meant to hold — never the
    runtime's decoder, migration or encoder, whose bugs would otherwise move the oracle too.
    """

    path: str  # the v0 generation
    target: str  # where the v3 generation is published
    data: bytes  # the v0 bytes, which must never change
    header: dict[str, Any] | None  # the v3 header record (None: unknown, or the source must be refused)
    events: tuple[dict[str, Any], ...] | None  # the migrated events, as stored records (None: unknown)
    refused: bool = False  # the source is damaged: it must be refused, never migrated

    @classmethod
    def of(cls, placed: SeededLog, compression: str) -> SeededSource:
        if placed.description is None:
            return cls(placed.path, placed.target, placed.data, None, None)
        from dsh_sim.scenario.v0.expect import expected_migration
        from dsh_sim.scenario.v0.model import V0Session

        assert isinstance(placed.description, V0Session)
        expected = expected_migration(placed.description, compression)
        return cls(placed.path, placed.target, placed.data, expected.header, expected.records, expected.refused)


def _source_on_disk(sim: Any) -> SeededSource | None:
    """A v0 generation of the configured session found on the disk without a description
    (e.g. a state restored from elsewhere): its bytes are taken as found and what it means is
    unknown, so only the parts of the check that need no expectation apply."""
    from dsh_sim.engine.history import SeededLog
    from runtime.persistence.layout import SessionPaths, generation_filename

    cfg = sim.config
    paths = SessionPaths.of(cfg.root, cfg.workspace, cfg.session_id, cfg.compression)
    path = f"{paths.session_dir}/{generation_filename(0, cfg.compression)}"
    data = sim.disk.read_path(path)
    if data is None:
        return None
    return SeededSource.of(SeededLog(path, paths.log, data), cfg.compression)


def check_migration_atomic(obs: Judge, life: Lifetime) -> None:
    """After every boot of a seeded-v0 simulation (crashed or not): judge the generations on disk.

    The source is never changed; the old or the new generation always exists; a damaged
    source is refused, never migrated; and the published v3 generation, read by the spec's
    reader (:func:`read_recoverable`), begins with exactly the expected header and events —
    a half-written or differently migrated generation does not."""
    placed = obs.history.seeded
    seeded = SeededSource.of(placed, obs.sim.config.compression) if placed is not None else _source_on_disk(obs.sim)
    if seeded is None:
        return
    obs.count("migration_atomic")
    disk = obs.sim.disk
    source = disk.read_path(seeded.path)
    current = disk.read_path(seeded.target)
    if source != seeded.data:
        fail(
            obs,
            "migration_atomic",
            "the v0 source generation was changed or removed",
            None,
            f"{len(seeded.data)} bytes seeded, {'none' if source is None else len(source)} bytes now",
        )
    if source is None and current is None:
        fail(obs, "migration_atomic", "neither the v0 nor the v3 generation exists")
    if any(path == seeded.target and data == current for path, data in obs.history.foreign_files):
        # another process's file holds the v3 name: the publication must refuse it, never take it for its generation
        planted_now = any(f.lifetime == life.index and f.action == "target_exists" for f in obs.faults)
        if life.boot_error is None and life.session is not None:
            fail(obs, "migration_atomic", "the migration took another process's file at the v3 name for the published generation")
        elif planted_now and life.crash is None and not isinstance(life.boot_error, GenerationTargetConflictError):
            # (a process that died at the link, the file just planted, never met it: nothing to refuse)
            got = f"{type(life.boot_error).__name__}: {life.boot_error}" if life.boot_error is not None else "no refusal"
            fail(
                obs,
                "migration_atomic",
                "another process's file took the v3 name during the migration: its publication must refuse it as a conflicting "
                f"generation (the target's bytes differ), got {got}",
            )
        return
    if seeded.refused:
        if current is not None or (life.session is not None and not life.dead):
            fail(
                obs,
                "migration_atomic",
                "a damaged v0 source was migrated instead of refused",
                None,
                f"v3 generation: {'none' if current is None else f'{len(current)} bytes'}; boot error: {life.boot_error!r}",
            )
        return
    if current is not None and seeded.events is not None:
        _judge_published(obs, seeded, current)
    if life.session is not None and not life.dead and seeded.events is not None:
        live = [e.to_record() for e in life.session.events[: len(seeded.events)]]
        if live != list(seeded.events):
            at = _first_difference(live, seeded.events)
            fail(
                obs,
                "migration_atomic",
                "the recovered session does not begin with the migrated log",
                None,
                f"{len(seeded.events)} migrated events; first difference at seq {at}",
                *_difference(live, seeded.events, at),
            )


def _judge_published(obs: Judge, seeded: SeededSource, current: bytes) -> None:
    """The v3 generation on disk, read by the spec reader, begins with exactly the expected log."""
    assert seeded.events is not None
    try:
        log = read_recoverable(current, obs.sim.config.compression)
    except SpecViolation as err:
        if not any(c.path == seeded.target for c in obs.corruptions):  # (injected damage is judged by corrupt_frame_refused)
            fail(obs, "migration_atomic", "the published v3 generation does not read", None, str(err))
        return
    stored = list(log.records[: len(seeded.events)])
    if log.header != seeded.header or stored != list(seeded.events):
        at = _first_difference(stored, seeded.events)
        fail(
            obs,
            "migration_atomic",
            "a half-written or different v3 generation is published",
            None,
            f"the migrated generation holds {len(seeded.events)} events; the file at {seeded.target} reads as {len(log.records)}, "
            + ("its header differs" if log.header != seeded.header else f"first difference at seq {at}"),
            *_difference(stored, seeded.events, at),
        )


def _first_difference(got: list[dict[str, Any]], want: tuple[dict[str, Any], ...]) -> int:
    return next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))


def _difference(got: list[dict[str, Any]], want: tuple[dict[str, Any], ...], at: int) -> list[str]:
    """The two records where the logs part (short, for the report)."""

    def show(records: Sequence[dict[str, Any]]) -> str:
        return json.dumps(records[at], sort_keys=True)[:300] if at < len(records) else "nothing"

    return [f"expected {show(want)}", f"found {show(got)}"]


def left_by_failed_removal(obs: Judge, log: bytes) -> bool:
    """The log is, byte for byte, what a failed removal left: a rollback's truncation, the
    healing one before an append (of what an earlier failed rollback left), or the unlink of a
    first publication's name whose directory fsync failed.  Those bytes cannot be removed now;
    this append added nothing on top of them (it failed at that removal, or before it wrote, as
    when the descriptor's open failed), and the next one heals the file first.  Anything
    written since the removal failed is judged."""
    return obs.history.unhealed is not None and as_written(log, obs.corruptions, obs.sim.config.log_path) == obs.history.unhealed


def check_failed_append(obs: Judge, life: Lifetime, error: BaseException) -> None:
    """After a flush failed: no record beyond the acknowledged ones may remain in the log.

    Not a violation when the log is exactly what a failed removal left (the rollback failed
    too, or an earlier failed rollback's bytes could not be healed yet: see
    :func:`left_by_failed_removal`), and skipped when the fault struck the torn-tail
    rewrite (the torn bytes are a crash's, not this append's).
    """
    if isinstance(error, BaseExceptionGroup):
        return
    if obs.faults and obs.faults[-1].durability_step == "torn-tail rewrite":
        return
    obs.count("failed_append_rolled_back")
    data = obs.sim.disk.read_path(obs.sim.config.log_path)
    if data is None or left_by_failed_removal(obs, data):
        return
    readable = readable_records(data, obs.sim.config.compression)
    stored_at_open = len(life.report.events) if life.report is not None else 0  # committed before this process
    acknowledged = max(obs.history.acked_end(), stored_at_open)
    if readable is not None and readable > acknowledged:
        fail(
            obs,
            "failed_append_rolled_back",
            f"a failed append left {readable - acknowledged} unacknowledged record(s) in the log",
            None,
            f"{type(error).__name__}: {error}",
            f"{acknowledged} acknowledged, {readable} readable",
        )


def check_eventually_durable(obs: Judge, life: Lifetime, faults_during_shutdown: bool) -> None:
    """A graceful shutdown with no fault firing during it persists the whole session; one that
    met a fault persists it or says that it could not (:func:`check_loss_reported`)."""
    if life.session is None or getattr(life, "secondary", False):
        return
    if faults_during_shutdown:
        check_loss_reported(obs, life)
        return
    if refused_for_a_link(obs, life.exit_error):
        return  # the session's publication met a planted link and refused it: nothing to persist to
    obs.count("eventually_durable")
    if life.exit_error is not None:
        fail(
            obs,
            "eventually_durable",
            f"the graceful shutdown failed to persist the session: {type(life.exit_error).__name__}: {life.exit_error}",
        )
        return
    data = obs.sim.disk.read_path(obs.sim.config.log_path)
    events = life.session.events
    if data is None:
        fail(obs, "eventually_durable", f"the session has {len(events)} events but no log was published")
        return
    damaged = undamaged_end(obs, data)
    if damaged is not None:
        # media corruption was injected into the log: the damage is the medium's, not the
        # writer's; what lies before the first damaged byte must still read back as written
        data = data[:damaged]
    try:
        stored = read_recoverable(data, obs.sim.config.compression).records if data else ()
    except SpecViolation as err:
        fail(obs, "eventually_durable", f"the log written by a clean shutdown does not read back: {err}")
        return
    if damaged is not None:
        events = events[: len(stored)]  # what the writer appended after the damage is not judged
    at = first_mismatch(stored, events)
    if at is not None:
        fail(
            obs,
            "eventually_durable",
            "the log on disk differs from the session after a clean shutdown",
            None,
            f"{len(events)} events in memory, {len(stored)} on disk, first difference at seq {at}",
        )


def check_loss_reported(obs: Judge, life: Lifetime) -> None:
    """A graceful stop that met a fault may leave events unwritten, but never silently: the
    close drains, and a failed drain is raised to whoever stops the runtime (spec §10.2, §10.6:
    ownership is freed, the failure surfaces).  A stop that returned success must have left
    every event of the session on the medium, readable as written."""
    if life.crash is not None:
        return  # the fault killed the stop: a crash, judged at the next boot, not a return
    obs.count("eventually_durable")
    if life.exit_error is not None or life.session is None:
        return  # reported: the caller knows the session may not be whole
    data = obs.sim.disk.read_path(obs.sim.config.log_path)
    damaged = undamaged_end(obs, data) if data is not None else None
    if damaged is not None:
        return  # media corruption injected into the log: what it hides is the medium's loss
    events = life.session.events
    try:
        stored = read_recoverable(data, obs.sim.config.compression).records if data else ()
    except SpecViolation:
        stored = ()
    if len(stored) < len(events) or first_mismatch(stored, events) is not None:
        fail(
            obs,
            "eventually_durable",
            "a graceful stop met a fault and returned success, but the session is not on the medium as written: "
            "a failed drain must be raised to the caller (spec §10.2)",
            None,
            f"{len(events)} events in memory, {len(stored)} on disk",
        )


def undamaged_end(obs: Judge, data: bytes) -> int | None:
    """With media corruption injected into the log: where the frames (raw: lines) of ``data``
    before the first damaged byte end.  What lies before it must survive whatever the damage
    did after it.  ``None`` when the log was never damaged."""
    log = obs.sim.config.log_path
    offsets = [c.offset for c in obs.corruptions if c.path == log]
    if not offsets:
        return None
    first = min(offsets)
    if obs.sim.config.compression == "zstd":
        return max((f.end for f in layouts_safe(data) if f.end <= first), default=0)
    return data.rfind(b"\n", 0, first) + 1


def _eventually_durable(obs: Judge, end: Shutdown) -> None:
    if end.primary:
        check_eventually_durable(obs, end.life, end.faults_during)


LOCK_EXCLUSION = Invariant(
    "lock_exclusion",
    (
        "a second writer is refused while the first holds the session, in the spec's words (\"... is "
        'already owned by an active write handle")'
    ),
    checks={
        "point": lambda obs, at: check_single_writer(obs, at.life),
        "second_writer": lambda obs, process: check_second_writer(obs, process.life),
    },
    points=frozenset({"persist.batch.durable"}),
)
FIDELITY = Invariant(
    "fidelity",
    ("no filesystem operation of a dead process takes effect (the disk is exactly the crash image)"),
    checks={"before_boot": lambda obs, before: check_fidelity(obs, before.crash)},
)
EVENTUALLY_DURABLE = Invariant(
    "eventually_durable",
    (
        "once injected faults stop, a graceful shutdown makes every event durable and the log reads back "
        "identically; a shutdown that met a fault either does so too or reports its failure to the "
        "caller, never loses events silently"
    ),
    checks={"shutdown": _eventually_durable},
)
FAILED_APPEND_ROLLED_BACK = Invariant(
    "failed_append_rolled_back",
    ("a failed append (whose rollback did not fail too) leaves no unacknowledged record in the log"),
    checks={"flush_failed": lambda obs, failure: check_failed_append(obs, failure.life, failure.error)},
)
MIGRATION_ATOMIC = Invariant(
    "migration_atomic",
    (
        "migrating a v0 log never changes it, and a published v3 generation always holds the complete "
        "migrated log: old or new readable, never neither, never half a generation"
    ),
    checks={"boot": lambda obs, boot: check_migration_atomic(obs, boot.life)},
)
