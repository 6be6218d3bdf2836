"""``dsh-sim migrate PATH [--json]``: publish the current generation of a historical log
(:func:`dsh_sim.api.migrate`).

PATH is a session directory or its log file.  The migration is the runtime's own write open
(lock, in-memory migration, staged temp file, verification, source recheck, no-overwrite
hard link, directory fsync) on the real filesystem; the v0 source is left byte-identical.
"""

from __future__ import annotations

from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import emit_json


def main(args: Any) -> int:
    result = api.migrate(args.path)
    if args.json:
        emit_json(result.document())
    elif result.published is None:
        print(f"{result.path}: {result.note}")
    else:
        print(
            f"published {result.published} ({result.events} events from {result.source_events} v{result.from_version} events, {result.compression})"
        )
        print(f"the v{result.from_version} source {result.path} is unchanged")
    return 0
