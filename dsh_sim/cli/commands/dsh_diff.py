"""``dsh-sim dsh diff PATH... [--workers N] [--json]``: the reader differential over many logs, a
few Node bridges for them all."""

from __future__ import annotations

import os
from typing import Any

from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, CliError, emit_json
from dsh_sim.dsh.bridge import BridgeError
from dsh_sim.dsh.diff import collect, diff_logs, summary
from dsh_sim.dsh.install import Installation
from dsh_sim.dsh.report import write_findings
from dsh_sim.outputs import check_output_file


def run_diff(args: Any, install: Installation) -> int:
    if args.findings:
        check_output_file(args.findings, "--findings")  # before Node starts, not after every log was read
    paths = list(collect(args.paths))
    for path in args.paths:
        if not os.path.exists(path):
            raise CliError(f"{path}: no such file or directory")
    if not paths:
        raise CliError(f"no v0 session logs (session.jsonl, session.jsonl.zstd) under {' '.join(args.paths)}")
    try:
        diffs = diff_logs(install, paths, args.workers)
    except ValueError as err:
        raise CliError(str(err)) from None
    except BridgeError as err:
        raise CliError(str(err)) from None
    report = write_findings(args.findings, diffs=diffs) if args.findings else None
    unexplained = sum(len(d.unexplained) for d in diffs)
    if args.json:
        emit_json({"logs": [summary(d) for d in diffs], "unexplained": unexplained, "findings_report": report})
    else:
        for d in diffs:
            if not d.differences:
                continue
            print(d.path)
            for diff in d.differences:
                label = f"[{diff.finding}]" if diff.finding else "[UNEXPLAINED]"
                print(f"  {label} {diff.kind}: {diff.detail}")
        same = sum(not d.differences for d in diffs)
        explained = sum(bool(d.differences) and not d.unexplained for d in diffs)
        print(
            f"{len(diffs)} logs: {same} read alike, {explained} differ only by known DSH findings, "
            f"{sum(bool(d.unexplained) for d in diffs)} with unexplained differences" + (f"; findings: {report}" if report else "")
        )
    return EXIT_OK if unexplained == 0 else EXIT_VIOLATION
