"""What ``dsh-sim inspect`` reports about a session log: the stable JSON document.

Read-only: a current log is read in pieces through the runtime's incremental reader (a log of
any size in bounded memory: the events go to a sink as they are read, repair's state is folded
as they pass); a historical one is migrated in memory (what a write open would publish).  The
document shape is a stable interface, documented in docs/inspect-json.md.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs

from dsh_sim.errors import InputError
from dsh_sim.inputs import read_chunks
from dsh_sim.sessionlogs.identity import check_identity, unsupported_version
from dsh_sim.sessionlogs.locate import locate_log, read_log
from runtime.persistence.header import SessionHeader
from runtime.persistence.layout import generation_filename
from runtime.persistence.log_reader import reader_for
from runtime.persistence.log_records import LogCorruption, LogUnknownEventType, LogVersionUnsupported
from runtime.persistence.migration import MigratedLog, MigrationRefused, migrate_v0
from runtime.persistence.v0_format import V0_VERSION, V0Log, V0Unsupported, decode_v0
from runtime.session.events import Event
from runtime.session.repair import OpenTurn, RepairRefused, verdicts
from runtime.session.vocabulary import SESSION_FORMAT_VERSION

INSPECT_SCHEMA = 1
READ_CHUNK = 1 << 16  # bytes read at once: the events one piece completes are all that is held

Sink = Callable[[Event], object]


@attrs.frozen
class LogScan:
    """What one read of a log established; its events went to the reader's sink."""

    log: str
    version: int
    compression: str
    size: int
    header: SessionHeader
    torn: tuple[int, int, int] | None  # (offset, torn bytes, recovered records) of the log as read
    closers: tuple[Event, ...]
    migration: dict[str, Any] | None
    event_count: int  # events handed to the sink

    def document(self, events: Any) -> dict[str, Any]:
        """The stable ``inspect`` JSON shape (docs/inspect-json.md) with ``events`` as its event
        list (the records, or anything that writes them: the CLI streams them from a spool)."""
        torn = self.torn
        return {
            "schema": INSPECT_SCHEMA,
            "path": self.log,
            "format": {"version": self.version, "compression": self.compression, "bytes": self.size},
            "header": self.header.to_record(),
            "events": events,
            "torn": None if torn is None else {"offset": torn[0], "torn_bytes": torn[1], "recovered_records": torn[2]},
            "closers": [e.to_record() for e in self.closers],
            "verdicts": verdicts(self.closers),
            "migration": self.migration,
        }


def scan_log(path: str, sink: Sink) -> LogScan:
    """Read the log at ``path`` (a session directory, a root holding one session, or a log
    file), handing each event of its valid prefix to ``sink`` as it is read.

    The events are provisional until this returns: damage found later refuses the whole log
    (an :class:`InputError`), so a sink that writes must write somewhere it can discard.
    """
    log, version, compression = locate_log(path)
    if version != SESSION_FORMAT_VERSION:
        return _scan_historical(log, version, compression, read_log(log), sink)
    return _scan_current(log, compression, read_chunks(log, "session log", chunk=READ_CHUNK), sink)


def inspect_path(path: str) -> dict[str, Any]:
    """The whole inspect document of the log at ``path``, its events held in memory."""
    records: list[dict[str, Any]] = []
    return scan_log(path, lambda event: records.append(event.to_record())).document(records)


def inspect_bytes(log: str, version: int, compression: str, data: bytes) -> dict[str, Any]:
    """The inspect document of ``data`` read from ``log`` (every refusal names the file)."""
    records: list[dict[str, Any]] = []
    sink: Sink = lambda event: records.append(event.to_record())  # noqa: E731
    if version != SESSION_FORMAT_VERSION:
        return _scan_historical(log, version, compression, data, sink).document(records)
    return _scan_current(log, compression, (data,), sink).document(records)


@contextlib.contextmanager
def _refusals(log: str) -> Iterator[None]:
    """The reader's refusals as one line naming the file."""
    try:
        yield
    except (LogCorruption, RepairRefused) as err:
        raise InputError(f"{log}: refused: {err}") from None
    except LogVersionUnsupported as err:
        raise unsupported_version(log, err.version) from None
    except LogUnknownEventType as err:
        raise InputError(f"{log}: refused: {err} (not marked ignorable; written by a newer harness?)") from None


def _scan_current(log: str, compression: str, chunks: Iterable[bytes], sink: Sink) -> LogScan:
    reader = reader_for(compression)
    fold = OpenTurn()
    count = 0

    def take(events: Iterable[Event]) -> None:
        nonlocal count
        for event in events:
            fold.see(event)
            sink(event)
            count += 1

    with _refusals(log):
        for chunk in chunks:
            take(reader.feed(chunk))
        end = reader.close()
    check_identity(log, end.header, compression)
    torn = end.torn
    if torn is not None:
        take(torn.recovered)
    summary = None if torn is None else (torn.truncate_to, torn.torn_bytes, len(torn.recovered))
    with _refusals(log):
        closers = tuple(fold.closers())
    return LogScan(log, SESSION_FORMAT_VERSION, compression, end.size, end.header, summary, closers, None, count)


def migrate_in_memory(log: str, version: int, compression: str, data: bytes) -> tuple[V0Log, MigratedLog]:
    """Decode and migrate; every refusal becomes one line naming the file."""
    if version != V0_VERSION:
        raise unsupported_version(log, version)
    try:
        source = decode_v0(data, compression)
        migrated = migrate_v0(source)
    except LogVersionUnsupported as err:
        raise InputError(f"{log}: refused: the filename identifies v{version}, but its header identifies v{err.version}") from None
    except LogCorruption as err:
        raise InputError(f"{log}: refused: {err}") from None
    except (V0Unsupported, MigrationRefused) as err:
        raise InputError(f"{log}: refused: cannot migrate from v{version}: {err}; the source is unchanged") from None
    check_identity(log, migrated.header, compression)
    return source, migrated


def _scan_historical(log: str, version: int, compression: str, data: bytes, sink: Sink) -> LogScan:
    """A historical log: the migrated view (its header and events current-format), nothing
    written; ``torn`` describes the source."""
    source, migrated = migrate_in_memory(log, version, compression, data)
    fold = OpenTurn()
    for event in migrated.events:
        fold.see(event)
        sink(event)
    target = generation_filename(SESSION_FORMAT_VERSION, compression)
    torn = source.torn
    migration = {
        "from": version,
        "to": SESSION_FORMAT_VERSION,
        "source_events": migrated.source_events,
        "target": os.path.join(os.path.dirname(log), target),
        "note": (
            f"a write open would migrate this log to {target} beside it "
            f"({migrated.source_events} v{version} events become {len(migrated.events)}); nothing was written"
        ),
    }
    summary = None if torn is None else (torn.truncate_to, torn.torn_bytes, torn.recovered)
    with _refusals(log):
        closers = tuple(fold.closers())
    return LogScan(log, version, compression, len(data), migrated.header, summary, closers, migration, len(migrated.events))


def inspect_historical(log: str, version: int, compression: str, data: bytes) -> dict[str, Any]:
    """``dsh-sim inspect`` of a historical log (the same shape as :func:`inspect_path`)."""
    return inspect_bytes(log, version, compression, data)
