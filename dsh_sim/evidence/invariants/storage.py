"""Storage-level checks: one writer, no writes from the dead, safe migration, rollback, durability."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from dsh_sim.evidence.invariants.base import Judge, fail
from dsh_sim.evidence.oracle import readable_records
from runtime.persistence.errors import SessionAlreadyOwnedError
from runtime.persistence.log_format import (
    LogCorruption,
    LogUnknownEventType,
    LogVersionUnsupported,
    decode_log,
)

if TYPE_CHECKING:
    from dsh_sim.engine.crash import CrashRecord
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
    """A historical (v0) log on disk, and what migrating it must publish."""

    path: str  # the v0 generation
    target: str  # where the v3 generation is published
    data: bytes  # the v0 bytes, which must never change
    expected: bytes  # the exact v3 generation the migration publishes
    events: tuple[dict[str, Any], ...]  # the migrated events, as records

    @classmethod
    def of(cls, path: str, target: str, data: bytes, compression: str) -> SeededSource:
        from runtime.persistence.migration import migrate_v0
        from runtime.persistence.publication import encode_migrated
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


def check_migration_atomic(obs: Judge, life: Lifetime) -> None:
    """After every boot of a seeded-v0 simulation (crashed or not): judge the generations on disk."""
    placed = obs.history.seeded
    seeded = (
        SeededSource.of(placed.path, placed.target, placed.data, obs.sim.config.compression)
        if placed is not None
        else _source_on_disk(obs.sim)
    )
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
    if current is not None and not current.startswith(seeded.expected):
        common = next((i for i, (a, b) in enumerate(zip(seeded.expected, current)) if a != b), min(len(current), len(seeded.expected)))
        fail(
            obs,
            "migration_atomic",
            "a half-written or different v3 generation is published",
            None,
            f"the complete generation is {len(seeded.expected)} bytes; the file at {seeded.target} has {len(current)}, first difference at byte {common}",
        )
    if life.session is not None and not life.dead:
        live = [e.to_record() for e in life.session.events[: len(seeded.events)]]
        if live != list(seeded.events):
            at = next((i for i, (a, b) in enumerate(zip(live, seeded.events)) if a != b), min(len(live), len(seeded.events)))
            fail(
                obs,
                "migration_atomic",
                "the recovered session does not begin with the migrated log",
                None,
                f"{len(seeded.events)} migrated events; first difference at seq {at}",
            )


def check_failed_append(obs: Judge, life: Lifetime, error: BaseException) -> None:
    """After a flush failed: no record beyond the acknowledged ones may remain in the log.

    Skipped when the rollback failed too (the runtime reports both errors, and its next
    append heals the file first) and when the fault struck the torn-tail rewrite (the torn
    bytes are a crash's, not this append's).
    """
    if isinstance(error, BaseExceptionGroup):
        return
    if obs.faults and obs.faults[-1].durability_step == "torn-tail rewrite":
        return
    obs.count("failed_append_rolled_back")
    data = obs.sim.disk.read_path(obs.sim.config.log_path)
    if data is None:
        return
    readable = readable_records(data, obs.sim.config.compression)
    stored_at_open = len(life.report.events) if life.report is not None else 0  # committed before this process
    acknowledged = max(max(obs.acked) + 1 if obs.acked else 0, stored_at_open)
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
    """A graceful shutdown with no fault firing during it persists the whole session."""
    if faults_during_shutdown or life.session is None or getattr(life, "secondary", False):
        return
    obs.count("eventually_durable")
    if life.exit_error is not None:
        fail(
            obs,
            "eventually_durable",
            f"the graceful shutdown failed to persist the session: {type(life.exit_error).__name__}: {life.exit_error}",
        )
        return
    data = obs.sim.disk.read_path(obs.sim.config.log_path)
    events = list(life.session.events)
    if data is None:
        fail(obs, "eventually_durable", f"the session has {len(events)} events but no log was published")
        return
    try:
        stored = list(decode_log(data, obs.sim.config.compression).events)
    except (LogCorruption, LogUnknownEventType, LogVersionUnsupported) as err:
        fail(obs, "eventually_durable", f"the log written by a clean shutdown does not read back: {err}")
        return
    if stored != events:  # Event equality is record equality (and the same object is equal at once)
        at = next((i for i, (a, b) in enumerate(zip(stored, events)) if a != b), min(len(stored), len(events)))
        fail(
            obs,
            "eventually_durable",
            "the log on disk differs from the session after a clean shutdown",
            None,
            f"{len(events)} events in memory, {len(stored)} on disk, first difference at seq {at}",
        )
