"""Session logs on the real filesystem: inspect one, repair it, migrate a historical one.

Here because these act on a user's own files with the runtime's own code paths (its write
open with the lock, its repair, its migration and publication), never a simulation.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import attrs
import trio

from dsh_sim.errors import InputError
from dsh_sim.sessionlogs.identity import check_identity, unsupported_version
from dsh_sim.sessionlogs.inspect import LogScan, inspect_bytes, inspect_path, migrate_in_memory
from dsh_sim.sessionlogs.inspect import scan_log as _scan_log
from dsh_sim.sessionlogs.locate import locate_log, read_log
from runtime.adapters import production_ports
from runtime.agent.resume import repair_and_seed
from runtime.persistence.backend import JsonlBackend
from runtime.persistence.errors import SessionPersistenceError
from runtime.persistence.log_format import LogCorruption, LogVersionUnsupported, decode_log
from runtime.session.events import Event
from runtime.session.repair import interrupted_turn_closers
from runtime.session.vocabulary import SESSION_FORMAT_VERSION

__all__ = ["Inspection", "LogScan", "Migration", "Repair", "inspect", "migrate", "repair", "scan_log"]


@attrs.frozen
class Inspection:
    """What ``dsh-sim inspect`` reports about one log: its stable JSON document (format,
    header, events, torn tail, migration, the closers a resume would append)."""

    document: dict[str, Any]

    @property
    def path(self) -> str:
        """The log file read."""
        return str(self.document["path"])

    @property
    def closers(self) -> list[dict[str, Any]]:
        """The events a resume would append (none: the log is balanced)."""
        return list(self.document["closers"])


def inspect(path: str) -> Inspection:
    """Read the session log at ``path`` (a session directory — its highest canonical
    generation — or a log file) and say what a resume would do.  It never writes; a
    historical log is migrated in memory only."""
    return Inspection(inspect_path(path))


def scan_log(path: str, sink: Callable[[Event], object]) -> LogScan:
    """:func:`inspect` for a log of any size: each event of the valid prefix goes to ``sink``
    as it is read (nothing is held), and the returned :class:`LogScan` makes the document.

    The events are provisional until it returns: later damage refuses the whole log (an
    ``InputError``), so a sink that writes should write somewhere it can discard."""
    return _scan_log(path, sink)


def _root_of(log: str) -> str:
    """The persistence root holding the session directory of ``log``."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(log))))


@attrs.frozen
class Repair:
    """A log repaired: its torn tail truncated (and complete records re-appended) and the
    closers a resume would append committed, with the verdict of every open call."""

    log: str
    session: str
    stored_events: int
    torn: dict[str, int] | None  # {"offset", "recovered_records"}
    appended: tuple[dict[str, Any], ...]  # the committed closers, as records
    verdicts: dict[str, str]  # call id -> verdict code

    @property
    def balanced(self) -> bool:
        """Nothing was repaired: no torn tail, nothing appended."""
        return not self.appended and self.torn is None

    def document(self) -> dict[str, Any]:
        """What ``dsh-sim repair --json`` prints."""
        return {
            "session": self.session,
            "stored_events": self.stored_events,
            "torn": self.torn,
            "appended": list(self.appended),
            "verdicts": self.verdicts,
        }


async def _repair(log: str, root: str, session_id: str, compression: str) -> Repair:
    backend = JsonlBackend(root, production_ports(), compression=compression)
    handle = await backend.open(session_id, "write")
    try:
        report = await repair_and_seed(handle)
    finally:
        await handle.close()
    torn = None if report.torn is None else {"offset": report.torn.truncate_to, "recovered_records": len(report.torn.recovered)}
    return Repair(log, session_id, len(report.events), torn, tuple(e.to_record() for e in report.closers), report.verdicts)


def repair(path: str) -> Repair:
    """Commit the closers a resume would append to the log at ``path``: the runtime's own
    repair path (write open with the lock, torn-tail truncation and re-append, the closers as
    one durable batch) on the real filesystem."""
    log, version, compression = locate_log(path)
    if version == 0:
        raise InputError(f"{log}: refused: a v0 log is historical: publish its current generation first (dsh-sim migrate {path})")
    if version != SESSION_FORMAT_VERSION:
        raise unsupported_version(log, version)
    data = read_log(log)
    try:
        decoded = decode_log(data, compression)
        interrupted_turn_closers(decoded.events)  # a log repair cannot balance is refused before the write open takes its lock
    except LogVersionUnsupported as err:
        raise unsupported_version(log, err.version) from None
    except (LogCorruption, ValueError) as err:
        raise InputError(f"{log}: refused: {err}") from None
    header = decoded.header
    check_identity(log, header, compression)
    try:
        return trio.run(_repair, log, _root_of(log), header.id, compression)
    except SessionPersistenceError as err:
        raise InputError(f"{log}: {err}") from None


@attrs.frozen
class Migration:
    """A historical log's current generation published (``published``: its path), or a
    current log left alone (``published`` is ``None`` and ``note`` says why)."""

    path: str
    published: str | None
    note: str | None = None
    session: str | None = None
    from_version: int | None = None
    to_version: int = SESSION_FORMAT_VERSION
    source_events: int = 0
    events: int = 0
    compression: str | None = None

    def document(self) -> dict[str, Any]:
        """What ``dsh-sim migrate --json`` prints."""
        if self.published is None:
            return {"path": self.path, "published": None, "note": self.note}
        return {
            "path": self.path,
            "session": self.session,
            "from": self.from_version,
            "to": self.to_version,
            "published": self.published,
            "source_events": self.source_events,
            "events": self.events,
            "compression": self.compression,
        }


async def _publish(root: str, session_id: str, compression: str) -> tuple[str, int]:
    backend = JsonlBackend(root, production_ports(), compression=compression)
    handle = await backend.open(session_id, "write")  # publishes before it returns
    try:
        return handle.paths.log, len(await handle.read())
    finally:
        await handle.close()


def migrate(path: str) -> Migration:
    """Publish the current generation of the historical log at ``path`` (a session directory
    or its log file): the runtime's own write open (lock, in-memory migration, staged temp
    file, verification, source recheck, no-overwrite hard link, directory fsync) on the real
    filesystem.  The source is left byte-identical; a current log is read, not rewritten."""
    log, version, compression = locate_log(path)
    data = read_log(log)
    if version == SESSION_FORMAT_VERSION:
        document = inspect_bytes(log, version, compression, data)  # a current log that does not read is refused, not "already v3"
        note = f"already v{SESSION_FORMAT_VERSION} ({len(document['events'])} events read); nothing to migrate"
        return Migration(log, None, note)
    source, migrated = migrate_in_memory(log, version, compression, data)
    try:
        target, count = trio.run(_publish, _root_of(log), migrated.header.id, compression)
    except SessionPersistenceError as err:
        raise InputError(f"{log}: {err}") from None
    return Migration(log, target, None, migrated.header.id, version, SESSION_FORMAT_VERSION, len(source.events), count, compression)
