"""``dsh-sim explore --runtime dsh SCENARIO...``: the DSH writer explored on SimFS."""

from __future__ import annotations

import os
from typing import Any

from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, CliError, emit_json
from dsh_sim.dsh.explore_dsh import DshExploreResult, explore_dsh, results_document
from dsh_sim.dsh.report import write_findings
from dsh_sim.dsh.shapes import shape_of
from dsh_sim.evidence.results import write
from dsh_sim.scenario.codec import to_json
from dsh_sim.scenario.files import load
from dsh_sim.scenario.model import ScenarioError


def run_explore_dsh(args: Any, paths: list[str]) -> int:
    from dsh_sim.cli.commands.dsh_cmd import require_installation

    install = require_installation(None)
    results: list[tuple[str, DshExploreResult]] = []
    for path in paths:
        try:
            scenario = load(path)
        except ScenarioError as err:
            raise CliError(str(err)) from None
        log = shape_of([to_json(step) for step in scenario.steps], "dsh-explore")
        if not log.batches:
            print(f"{path}: no prompt steps, nothing for the DSH writer to write")
            continue
        compression = scenario.config.compression
        result = explore_dsh(install, log, compression, name=scenario.name, crash=args.crash, bound=args.bound)
        results.append((path, result))
        if not args.json:
            print(
                f"{path}: DSH writer ({compression}) crashed at {result.points} filesystem operations, {result.states} crash states, "
                f"{result.recoveries} distinct DSH recoveries in {result.seconds:.1f}s; {len(result.violations)} violation(s)"
            )
            for v in result.violations[:10]:
                print(f"  {v.invariant} at point {v.point} ({v.crash}): {v.detail}")
    doc = results_document(results)
    if args.results:
        write(doc, args.results)
    explore_items = [
        {
            "finding": None,
            "where": f"{r.shape} ({r.compression}) point {v.point} {v.crash}",
            "detail": f"{v.invariant}: {v.detail}",
            "reproduce": f"dsh-sim explore --runtime dsh <scenario of {r.shape}>",
        }
        for _, r in results
        for v in r.violations
    ]
    findings = getattr(args, "findings", None) or os.path.join("reports", "dsh-findings.md")
    write_findings(findings, explore=explore_items, explore_summary=[r.document() for _, r in results])
    if args.json:
        emit_json(doc)
    return EXIT_OK if not any(r.violations for _, r in results) else EXIT_VIOLATION
