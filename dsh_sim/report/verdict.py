"""The few lines printed after a report is written, and whether the run failed.

The figures come from the :class:`~dsh_sim.report.headline.Summary` the report put in
coverage.json — the same ones CI gates on — so the terminal, the page and the JSON cannot
disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dsh_sim.evidence.view import CoverageView, Requirement
from dsh_sim.report.headline import Summary


def verdict(view: CoverageView, summary: Summary, unmet: Sequence[Requirement], paths: Mapping[str, str]) -> tuple[list[str], bool]:
    """The lines to print, and whether the report failed (a violation, an unmet requirement, an
    unsafe verdict or a surviving mutant)."""
    unsafe = summary.unsafe_verdicts
    lines = [
        f"report: {paths.get('html', '')}  (also {paths.get('md', '')}, {paths.get('json', '')})",
        f"  {summary.cases} crash recoveries classified; unsafe TOOL_NOT_STARTED with the effect applied: {unsafe}",
        f"  {summary.invariant_checks} invariant checks, {summary.violations} violation(s)",
        f"  {len(unmet)} unmet coverage requirement(s)",
    ]
    for violation in view.violations[:10]:
        lines.append(f"  VIOLATION {violation.invariant}: {violation.scenario or '(no scenario)'}")
    for req in unmet:
        lines.append(f"  NEVER HIT {req.kind} {req.row} / {req.col}")
    survivors = [row.mutant for row in view.kill_matrix if not row.killed]
    if summary.mutants:
        lines.append(f"  self-test: {summary.mutants_killed}/{summary.mutants} durability mutants killed")
    for survivor in survivors:
        lines.append(f"  MUTANT SURVIVED {survivor}")
    failed = bool(summary.violations) or bool(unmet) or unsafe > 0 or bool(survivors)
    return lines, failed
