"""``dsh-sim repair PATH [--json]``: commit the closers a resume would append.

This is the runtime's own repair path (write open with the lock, torn-tail truncation and
re-append, closers as one durable batch) on the real filesystem.
"""

from __future__ import annotations

import os
from typing import Any

import trio

from dsh_sim.cli.commands.common import CliError, emit_json
from dsh_sim.sessionlogs.locate import locate_log, read_log
from runtime.adapters import production_ports
from runtime.agent.resume import repair_and_seed
from runtime.persistence.backend import JsonlBackend
from runtime.persistence.errors import SessionPersistenceError
from runtime.persistence.log_format import LogCorruption, decode_log


async def _repair(root: str, session_id: str, compression: str) -> dict[str, Any]:
    backend = JsonlBackend(root, production_ports(), compression=compression)
    handle = await backend.open(session_id, "write")
    try:
        report = await repair_and_seed(handle)
    finally:
        await handle.close()
    return {
        "session": session_id,
        "stored_events": len(report.events),
        "torn": None if report.torn is None else {"offset": report.torn.truncate_to, "recovered_records": len(report.torn.recovered)},
        "appended": [e.to_record() for e in report.closers],
        "verdicts": report.verdicts,
    }


def main(args: Any) -> int:
    log, version, compression = locate_log(args.path)
    session_dir = os.path.dirname(os.path.abspath(log))
    root = os.path.dirname(os.path.dirname(session_dir))
    data = read_log(log)
    try:
        header = decode_log(data, compression).header
    except (LogCorruption, ValueError) as err:
        raise CliError(f"{log}: refused: {err}") from None
    try:
        result = trio.run(_repair, root, header.id, compression)
    except SessionPersistenceError as err:
        raise CliError(f"{log}: {err}") from None
    if args.json:
        emit_json(result)
    else:
        appended = result["appended"]
        if not appended and result["torn"] is None:
            print(f"{log}: balanced, nothing to repair")
        else:
            if result["torn"]:
                print(
                    f"truncated a torn tail at byte {result['torn']['offset']} ({result['torn']['recovered_records']} record(s) re-appended)"
                )
            for event in appended:
                print(f"appended {event['seq']:>5}  {event['type']}")
            for call, code in sorted(result["verdicts"].items()):
                print(f"  {call}: {code}")
    return 0
