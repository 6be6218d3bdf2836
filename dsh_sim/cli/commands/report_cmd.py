"""``dsh-sim report``: merge result documents into coverage.json / .md / .html.

``--from`` names runs by id (``OUT/runs/<id>``, or ``latest``) or result files and
directories; a task of a run counts once however often its run is named.  Without it, the
latest run under OUT (or, from before run directories, ``OUT/results``).
"""

from __future__ import annotations

import os
from typing import Any

from dsh_sim import api
from dsh_sim.campaign.rundir import list_runs, resolve_inputs
from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION
from dsh_sim.evidence.results import unique
from dsh_sim.outputs import check_output_dir


def main(args: Any) -> int:
    check_output_dir(args.out)
    if args.inputs:
        inputs = resolve_inputs(args.inputs, args.out)
    elif list_runs(args.out):
        inputs = resolve_inputs(["latest"], args.out)
    else:
        inputs = [os.path.join(args.out, "results")]
    result = api.report(unique(api.read_results(inputs)), args.out)
    print("\n".join(result.lines))
    return EXIT_VIOLATION if result.failed else EXIT_OK
