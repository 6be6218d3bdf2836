"""``dsh-sim dsh {setup,diff,generate}``: the published DSH, side by side with dsh-sim.

``setup`` installs the pinned npm set into the cache (once; later runs need no network);
``diff PATH...`` reads each log with the real DSH and with dsh-sim and prints every
difference (known DSH findings are labelled, anything else fails); ``generate DIR`` writes
the damaged-log corpus with the real DSH writer.  Each is one function of :mod:`dsh_sim.api`
(:func:`~dsh_sim.api.dsh_setup`, :func:`~dsh_sim.api.dsh_diff`, :func:`~dsh_sim.api.dsh_generate`).
"""

from __future__ import annotations

import sys
from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, emit_json
from dsh_sim.outputs import check_output_dir


def against_line(summary: dict[str, Any]) -> str:
    """One line: what the comparison with DSH covered and found (``oracle.summary()``)."""
    s = summary
    explained = ", ".join(f"{k} x{n}" for k, n in s["explained"].items()) or "none"
    return (
        f"against DSH: {s['compared']} crash image(s) compared ({s['probes']} distinct DSH probes), "
        f"{s['differences']} unexplained difference(s); known findings: {explained}; "
        f"{s['no_log']} without a log, {s['not_projectable']} not projectable to v0"
    )


def _setup(args: Any) -> int:
    done = api.dsh_setup(args.home, force=args.force)
    if args.json:
        emit_json(done.document())
    else:
        state = "installed" if done.installed_now else "already installed (no network used)"
        print(f"DSH {done.dsh} {state} in {done.home} (node {done.node_version}: {done.node})")
    return EXIT_OK


def _diff(args: Any) -> int:
    result = api.dsh_diff(args.paths, findings=args.findings, workers=args.workers, home=args.home)
    if args.json:
        emit_json(result.document())
    else:
        diffs = result.logs
        for d in diffs:
            if not d.differences:
                continue
            print(d.path)
            for diff in d.differences:
                label = f"[{diff.finding}]" if diff.finding else "[UNEXPLAINED]"
                print(f"  {label} {diff.kind}: {diff.detail}")
        same = sum(not d.differences for d in diffs)
        explained = sum(bool(d.differences) and not d.unexplained for d in diffs)
        report = result.findings_report
        print(
            f"{len(diffs)} logs: {same} read alike, {explained} differ only by known DSH findings, "
            f"{sum(bool(d.unexplained) for d in diffs)} with unexplained differences" + (f"; findings: {report}" if report else "")
        )
    return EXIT_OK if result.unexplained == 0 else EXIT_VIOLATION


def _generate(args: Any) -> int:
    check_output_dir(args.out, "DIR")
    corpus = api.dsh_generate(args.out, seed=args.seed, held_out=args.held_out, home=args.home)
    if args.json:
        emit_json(corpus.document())
    else:
        print(f"{len(corpus.logs)} logs written by the real DSH under {args.out}")
    return EXIT_OK


def main(args: Any) -> int:
    handlers = {"setup": _setup, "diff": _diff, "generate": _generate}
    try:
        return handlers[args.dsh_command](args)
    except BrokenPipeError:
        sys.stderr.close()
        return EXIT_VIOLATION
