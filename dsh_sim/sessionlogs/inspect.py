"""What ``dsh-sim inspect`` reports about a session log: the stable JSON document.

Read-only: a current log is decoded; a historical one is migrated in memory (what a write
open would publish).  The document shape is a stable interface, documented in docs/inspect-json.md.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from dsh_sim.errors import InputError
from dsh_sim.sessionlogs.identity import check_identity, unsupported_version
from dsh_sim.sessionlogs.locate import locate_log, read_log
from runtime.persistence.header import SessionHeader
from runtime.persistence.layout import generation_filename
from runtime.persistence.log_format import (
    LogCorruption,
    LogUnknownEventType,
    LogVersionUnsupported,
    decode_log,
)
from runtime.persistence.migration import MigratedLog, MigrationRefused, migrate_v0
from runtime.persistence.v0_format import V0_VERSION, V0Log, V0Unsupported, decode_v0
from runtime.session.events import Event
from runtime.session.repair import interrupted_turn_closers, verdicts
from runtime.session.vocabulary import SESSION_FORMAT_VERSION

INSPECT_SCHEMA = 1


def inspect_path(path: str) -> dict[str, Any]:
    log, version, compression = locate_log(path)
    return inspect_bytes(log, version, compression, read_log(log))


def inspect_bytes(log: str, version: int, compression: str, data: bytes) -> dict[str, Any]:
    """The inspect document of ``data`` read from ``log`` (every refusal names the file)."""
    if version != SESSION_FORMAT_VERSION:
        return inspect_historical(log, version, compression, data)
    try:
        decoded = decode_log(data, compression)
    except LogCorruption as err:
        raise InputError(f"{log}: refused: {err}") from None
    except LogVersionUnsupported as err:
        raise unsupported_version(log, err.version) from None
    except LogUnknownEventType as err:
        raise InputError(f"{log}: refused: {err} (not marked ignorable; written by a newer harness?)") from None
    check_identity(log, decoded.header, compression)
    torn = decoded.torn
    return inspect_document(
        log,
        version,
        compression,
        data,
        decoded.header,
        decoded.events,
        torn=None if torn is None else (torn.truncate_to, torn.torn_bytes, len(torn.recovered)),
        migration=None,
    )


def inspect_document(
    log: str,
    version: int,
    compression: str,
    data: bytes,
    header: SessionHeader,
    events: Sequence[Event],
    *,
    torn: tuple[int, int, int] | None,
    migration: dict[str, Any] | None,
) -> dict[str, Any]:
    """The stable ``inspect`` JSON shape (docs/inspect-json.md) for a current or a migrated view.

    ``torn`` is (offset, torn bytes, recovered records) of the log as read.
    """
    closers = interrupted_turn_closers(events)
    return {
        "schema": INSPECT_SCHEMA,
        "path": log,
        "format": {"version": version, "compression": compression, "bytes": len(data)},
        "header": header.to_record(),
        "events": [e.to_record() for e in events],
        "torn": None if torn is None else {"offset": torn[0], "torn_bytes": torn[1], "recovered_records": torn[2]},
        "closers": [e.to_record() for e in closers],
        "verdicts": verdicts(closers),
        "migration": migration,
    }


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


def inspect_historical(log: str, version: int, compression: str, data: bytes) -> dict[str, Any]:
    """``dsh-sim inspect`` of a historical log: the migrated view, nothing written.

    Same shape as :func:`inspect_path`; ``header`` and
    ``events`` are the migrated (current-format) ones, ``torn`` describes the source.
    """
    source, migrated = migrate_in_memory(log, version, compression, data)
    target = generation_filename(SESSION_FORMAT_VERSION, compression)
    torn = source.torn
    return inspect_document(
        log,
        version,
        compression,
        data,
        migrated.header,
        migrated.events,
        torn=None if torn is None else (torn.truncate_to, torn.torn_bytes, torn.recovered),
        migration={
            "from": version,
            "to": SESSION_FORMAT_VERSION,
            "source_events": migrated.source_events,
            "target": os.path.join(os.path.dirname(log), target),
            "note": (
                f"a write open would migrate this log to {target} beside it "
                f"({migrated.source_events} v{version} events become {len(migrated.events)}); nothing was written"
            ),
        },
    )
