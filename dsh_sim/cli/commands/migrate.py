"""``dsh-sim migrate PATH [--json]``: publish the current generation of a historical log.

PATH is a session directory or its log file.  The migration is the runtime's own write open
(lock, in-memory migration, staged temp file, verification, source recheck, no-overwrite
hard link, directory fsync) on the real filesystem; the v0 source is left byte-identical.
"""

from __future__ import annotations

import os
from typing import Any

import trio

from dsh_sim.cli.commands.common import CliError, emit_json
from dsh_sim.sessionlogs.inspect import inspect_bytes, migrate_in_memory
from dsh_sim.sessionlogs.locate import locate_log, read_log
from runtime.adapters import production_ports
from runtime.persistence.backend import JsonlBackend
from runtime.persistence.errors import SessionPersistenceError
from runtime.session.vocabulary import SESSION_FORMAT_VERSION


async def _publish(root: str, session_id: str, compression: str) -> tuple[str, int]:
    backend = JsonlBackend(root, production_ports(), compression=compression)
    handle = await backend.open(session_id, "write")  # publishes before it returns
    try:
        return handle.paths.log, len(await handle.read())
    finally:
        await handle.close()


def main(args: Any) -> int:
    log, version, compression = locate_log(args.path)
    data = read_log(log)
    if version == SESSION_FORMAT_VERSION:
        document = inspect_bytes(log, version, compression, data)  # a current log that does not read is refused, not "already v3"
        note = f"already v{SESSION_FORMAT_VERSION} ({len(document['events'])} events read); nothing to migrate"
        result: dict[str, Any] = {"path": log, "published": None, "note": note}
        if args.json:
            emit_json(result)
        else:
            print(f"{log}: {result['note']}")
        return 0
    source, migrated = migrate_in_memory(log, version, compression, data)
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
