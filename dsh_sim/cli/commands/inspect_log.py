"""``dsh-sim inspect PATH [--json]``: read a session log and say what a resume would do
(:func:`dsh_sim.api.scan_log`; :func:`dsh_sim.api.inspect` holds the document in memory).

It never writes.  PATH is a session directory (the highest canonical generation in it is
read) or a log file.  The JSON shape is a stable interface, documented in the README.
"""

from __future__ import annotations

import datetime
import sys
import tempfile
from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import Encoded, emit_json_lines, encode_item


def _summary(event: dict[str, Any]) -> str:
    """A one-line gist of an event; a record of an unexpected shape gets none (it is still listed)."""
    try:
        return _gist(event)
    except (KeyError, TypeError, AttributeError, IndexError):
        return ""


def _gist(event: dict[str, Any]) -> str:
    data: Any = event.get("data")  # JSON of any shape
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


def when(epoch_ms: Any) -> str:
    """Epoch milliseconds as an ISO date (UTC); anything else as it was stored."""
    if isinstance(epoch_ms, bool) or not isinstance(epoch_ms, int | float):
        return str(epoch_ms)
    try:
        moment = datetime.datetime.fromtimestamp(epoch_ms / 1000, datetime.UTC)
    except (OverflowError, OSError, ValueError):
        return str(epoch_ms)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def event_line(event: dict[str, Any]) -> str:
    return f"  {event['seq']:>5}  {when(event.get('time')):<24}  {event['type']:<20} {_summary(event)}"


def print_report(report: dict[str, Any]) -> None:
    """The plain report of an inspect document; ``events`` may be lines already formatted."""
    fmt = report["format"]
    print(f"{report['path']}  (v{fmt['version']}, {fmt['compression']}, {fmt['bytes']} bytes)")
    header = report["header"]
    print(f"session {header['id']}  created {when(header['createdAt'])}  cwd {header.get('cwd', '-')}")
    events = report["events"]
    if isinstance(events, Encoded):
        sys.stdout.writelines(events.lines)
    else:
        for event in events:
            print(event_line(event))
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
    # The events stream through a spool file while the log is read: a log of any size in
    # bounded memory, and nothing printed before the whole log is known to read (later damage
    # refuses it all, in one line).  A lone surrogate (the format holds them) passes through the
    # spool as it is and reaches the output escaped (the CLI's streams write ``\ud800``).
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="surrogatepass") as spool:
        if args.json:
            scan = api.scan_log(args.path, lambda event: spool.write(encode_item(event.to_record()) + "\n"))
        else:
            scan = api.scan_log(args.path, lambda event: spool.write(event_line(event.to_record()) + "\n"))
        spool.seek(0)
        document = scan.document(Encoded(spool))
        if args.json:
            emit_json_lines(document, listed="events")
        else:
            print_report(document)
        sys.stdout.flush()
    return 0
