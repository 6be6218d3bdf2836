"""``dsh-sim report``: merge result documents into coverage.json / .md / .html
(:func:`dsh_sim.api.report_runs`).

``--from`` names runs by id (``OUT/runs/<id>``, or ``latest``) or result files and
directories; a task of a run counts once however often its run is named.  Without it, the
latest run under OUT (or, from before run directories, ``OUT/results``).
"""

from __future__ import annotations

from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION


def main(args: Any) -> int:
    result = api.report_runs(args.inputs, args.out)
    print("\n".join(result.lines))
    return EXIT_VIOLATION if result.failed else EXIT_OK
