"""``dsh-sim inspect PATH [--json]``: read a session log and say what a resume would do.

It never writes.  PATH is a session directory (the highest canonical generation in it is
read) or a log file.  The JSON shape is a stable interface, documented in the README.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from dsh_sim.cli.commands.common import CliError, emit_json
from runtime.persistence.layout import parse_generation_filename
from runtime.persistence.log_format import LogCorruption, LogUnknownEventType, LogVersionUnsupported, decode_log
from runtime.session.repair import interrupted_turn_closers, verdicts
from runtime.session.vocabulary import SESSION_FORMAT_VERSION

INSPECT_SCHEMA = 1


def locate_log(path: str) -> tuple[str, int, str]:
    """(log file, version, compression) for a session directory or a log file path."""
    if os.path.isdir(path):
        found = []
        for name in sorted(os.listdir(path)):
            parsed = parse_generation_filename(name)
            if parsed is not None:
                found.append((parsed[0], name, parsed[1]))
        if not found:
            sessions = _sessions_under(path)
            if len(sessions) == 1:
                return locate_log(sessions[0])
            if sessions:
                listed = ", ".join(sessions[:5]) + (" ..." if len(sessions) > 5 else "")
                raise CliError(f"{path}: holds {len(sessions)} sessions; name one: {listed}")
            raise CliError(f"{path}: no session log (session[.vN].jsonl[.zstd]) in this directory or the root below it")
        version, name, compression = max(found)
        return os.path.join(path, name), version, compression
    if not os.path.exists(path):
        raise CliError(f"{path}: no such file or directory")
    parsed = parse_generation_filename(os.path.basename(path))
    if parsed is None:
        compression = "zstd" if path.endswith(".zstd") else "none"
        return path, SESSION_FORMAT_VERSION, compression
    return path, parsed[0], parsed[1]


def _sessions_under(root: str) -> list[str]:
    """Session directories of a persistence root (``<root>/<project>/<session>/``)."""
    out = []
    for project in sorted(os.listdir(root)):
        project_dir = os.path.join(root, project)
        if not os.path.isdir(project_dir):
            continue
        for session in sorted(os.listdir(project_dir)):
            session_dir = os.path.join(project_dir, session)
            if os.path.isdir(session_dir) and any(parse_generation_filename(n) for n in os.listdir(session_dir)):
                out.append(session_dir)
    return out


def inspect_path(path: str) -> dict[str, Any]:
    log, version, compression = locate_log(path)
    try:
        with open(log, "rb") as handle:
            data = handle.read()
    except OSError as err:
        raise CliError(f"{log}: cannot read: {err.strerror}") from None
    if version != SESSION_FORMAT_VERSION:
        from dsh_sim.cli.commands.migrate import inspect_historical

        return inspect_historical(log, version, compression, data)
    try:
        decoded = decode_log(data, compression)
    except LogCorruption as err:
        raise CliError(f"{log}: refused: {err}") from None
    except LogVersionUnsupported as err:
        raise CliError(f"{log}: refused: header says log format v{err.version}, this build reads v{SESSION_FORMAT_VERSION}") from None
    except LogUnknownEventType as err:
        raise CliError(f"{log}: refused: {err} (not marked ignorable; written by a newer harness?)") from None
    torn = decoded.torn
    return inspect_document(
        log, version, compression, data, decoded.header, decoded.events,
        torn=None if torn is None else (torn.truncate_to, torn.torn_bytes, len(torn.recovered)),
        migration=None,
    )


def inspect_document(
    log: str,
    version: int,
    compression: str,
    data: bytes,
    header: Any,
    events: list[Any],
    *,
    torn: tuple[int, int, int] | None,
    migration: dict[str, Any] | None,
) -> dict[str, Any]:
    """The stable ``inspect`` JSON shape (README) for a current or a migrated view.

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


def _summary(event: dict[str, Any]) -> str:
    data = event.get("data")
    kind = event["type"]
    if kind in ("turn/start", "turn/end", "step/start", "step/end"):
        extra = f" reason={data['reason']['kind']}" if kind == "turn/end" else ""
        return f"turn {data.get('turn')}" + (f" step {data['step']}" if "step" in data else "") + extra
    if kind == "tool/call":
        return f"{data['name']} {data['callId']} {data['arguments'][:60]}"
    if kind == "tool/result":
        err = data.get("error")
        return f"{data['message']['source']['callId']}" + (f" {err['code']}" if err else " ok")
    if kind in ("user/message", "assistant/message", "system/message"):
        message = data.get("message", data)
        texts = [b.get("text", "") for b in message.get("content", []) if b.get("type") == "text"]
        calls = [b["name"] for b in message.get("content", []) if b.get("type") == "tool-call"]
        return (" ".join(texts)[:70] + (f" [calls: {', '.join(calls)}]" if calls else "")).strip()
    return ""


def print_report(report: dict[str, Any]) -> None:
    fmt = report["format"]
    print(f"{report['path']}  (v{fmt['version']}, {fmt['compression']}, {fmt['bytes']} bytes)")
    header = report["header"]
    print(f"session {header['id']}  created {header['createdAt']}  cwd {header.get('cwd', '-')}")
    for event in report["events"]:
        print(f"  {event['seq']:>5}  {event['type']:<20} {_summary(event)}")
    torn = report["torn"]
    if torn is None:
        print("torn tail: none")
    else:
        print(f"torn tail: {torn['torn_bytes']} bytes from byte {torn['offset']}; {torn['recovered_records']} complete record(s) recovered")
    if report.get("migration"):
        print(f"migration: {report['migration']['note']}")
    if report["closers"]:
        print("a resume would append:")
        for event in report["closers"]:
            print(f"  {event['seq']:>5}  {event['type']:<20} {_summary(event)}")
    else:
        print("a resume would append nothing (the log is balanced)")


def main(args: Any) -> int:
    report = inspect_path(args.path)
    if args.json:
        emit_json(report)
    else:
        print_report(report)
    sys.stdout.flush()
    return 0
