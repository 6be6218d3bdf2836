"""``dsh-sim migrate PATH [--json]``: publish the current generation of a historical log.

PATH is a session directory or its log file.  The migration is the runtime's own write open
(lock, in-memory migration, staged temp file, verification, source recheck, no-overwrite
hard link, directory fsync) on the real filesystem; the v0 source is left byte-identical.
:func:`inspect_historical` is the read-only half used by ``dsh-sim inspect``: it migrates in
memory and reports what a write open would publish.
"""

from __future__ import annotations

import os
from typing import Any

import trio

from dsh_sim.cli.commands.common import CliError, emit_json
from dsh_sim.cli.commands.inspect_log import inspect_document, locate_log
from runtime.adapters import production_ports
from runtime.persistence.backend import JsonlBackend
from runtime.persistence.errors import SessionPersistenceError
from runtime.persistence.layout import generation_filename
from runtime.persistence.log_format import LogCorruption, LogVersionUnsupported
from runtime.persistence.migration import MigratedLog, MigrationRefused, migrate_v0
from runtime.persistence.v0_format import V0_VERSION, V0Log, V0Unsupported, decode_v0
from runtime.session.vocabulary import SESSION_FORMAT_VERSION


def _migrate_in_memory(log: str, version: int, compression: str, data: bytes) -> tuple[V0Log, MigratedLog]:
    """Decode and migrate; every refusal becomes one line naming the file."""
    if version != V0_VERSION:
        if version > SESSION_FORMAT_VERSION:
            raise CliError(f"{log}: refused: log format v{version} was written by a newer harness; this build reads up to v{SESSION_FORMAT_VERSION}")
        raise CliError(f"{log}: refused: log format v{version} is older than v{SESSION_FORMAT_VERSION} and this build ships no upgrade path for it")
    try:
        source = decode_v0(data, compression)
        return source, migrate_v0(source)
    except LogVersionUnsupported as err:
        raise CliError(f"{log}: refused: the filename identifies v{version}, but its header identifies v{err.version}") from None
    except LogCorruption as err:
        raise CliError(f"{log}: refused: {err}") from None
    except (V0Unsupported, MigrationRefused) as err:
        raise CliError(f"{log}: refused: cannot migrate from v{version}: {err}; the source is unchanged") from None


def inspect_historical(log: str, version: int, compression: str, data: bytes) -> dict[str, Any]:
    """``dsh-sim inspect`` of a historical log: the migrated view, nothing written.

    Same shape as :func:`dsh_sim.cli.commands.inspect_log.inspect_path`; ``header`` and
    ``events`` are the migrated (current-format) ones, ``torn`` describes the source.
    """
    source, migrated = _migrate_in_memory(log, version, compression, data)
    target = generation_filename(SESSION_FORMAT_VERSION, compression)
    torn = source.torn
    return inspect_document(
        log, version, compression, data, migrated.header, migrated.events,
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


async def _publish(root: str, session_id: str, compression: str) -> tuple[str, int]:
    backend = JsonlBackend(root, production_ports(), compression=compression)
    handle = await backend.open(session_id, "write")  # publishes before it returns
    try:
        return handle.paths.log, len(await handle.read())
    finally:
        await handle.close()


def main(args: Any) -> int:
    log, version, compression = locate_log(args.path)
    if version == SESSION_FORMAT_VERSION:
        result: dict[str, Any] = {"path": log, "published": None, "note": f"already v{SESSION_FORMAT_VERSION}; nothing to migrate"}
        if args.json:
            emit_json(result)
        else:
            print(f"{log}: {result['note']}")
        return 0
    try:
        with open(log, "rb") as handle:
            data = handle.read()
    except OSError as err:
        raise CliError(f"{log}: cannot read: {err.strerror}") from None
    source, migrated = _migrate_in_memory(log, version, compression, data)
    session_dir = os.path.dirname(os.path.abspath(log))
    root = os.path.dirname(os.path.dirname(session_dir))
    try:
        target, count = trio.run(_publish, root, migrated.header.id, compression)
    except SessionPersistenceError as err:
        raise CliError(f"{log}: {err}") from None
    result = {
        "path": log,
        "session": migrated.header.id,
        "from": version,
        "to": SESSION_FORMAT_VERSION,
        "published": target,
        "source_events": len(source.events),
        "events": count,
        "compression": compression,
    }
    if args.json:
        emit_json(result)
    else:
        print(f"published {target} ({count} events from {len(source.events)} v{version} events, {compression})")
        print(f"the v{version} source {log} is unchanged")
    return 0
