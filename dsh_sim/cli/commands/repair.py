"""``dsh-sim repair PATH [--json]``: commit the closers a resume would append
(:func:`dsh_sim.api.repair`).

This is the runtime's own repair path (write open with the lock, torn-tail truncation and
re-append, closers as one durable batch) on the real filesystem.
"""

from __future__ import annotations

from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import emit_json


def main(args: Any) -> int:
    result = api.repair(args.path)
    if args.json:
        emit_json(result.document())
    elif result.balanced:
        print(f"{result.log}: balanced, nothing to repair")
    else:
        if result.torn:
            print(f"truncated a torn tail at byte {result.torn['offset']} ({result.torn['recovered_records']} record(s) re-appended)")
        for event in result.appended:
            print(f"appended {event['seq']:>5}  {event['type']}")
        for call, code in sorted(result.verdicts.items()):
            print(f"  {call}: {code}")
    return 0
