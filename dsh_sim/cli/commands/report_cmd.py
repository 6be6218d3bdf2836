"""``dsh-sim report``: merge result documents into coverage.json / .md / .html."""

from __future__ import annotations

import os
from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION
from dsh_sim.outputs import check_output_dir


def main(args: Any) -> int:
    check_output_dir(args.out)
    inputs = args.inputs if args.inputs else [os.path.join(args.out, "results")]
    result = api.report(inputs, args.out)
    print("\n".join(result.lines))
    return EXIT_VIOLATION if result.failed else EXIT_OK
