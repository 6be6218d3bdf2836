"""The few lines printed after a report is written, and whether the run failed.

The figures come from the ``summary`` the report put in coverage.json — the same ones CI
gates on — so the terminal, the page and the JSON cannot disagree.
"""

from __future__ import annotations

from typing import Any


def verdict(view: dict[str, Any], unmet: list[dict[str, Any]], paths: dict[str, str]) -> tuple[list[str], bool]:
    summary = view.get("summary")
    if summary is None:
        from dsh_sim.report.model import summary as summarize

        summary = summarize(view, unmet)  # counts the unmet rows given; the met ones do not matter
    unsafe = summary["unsafe_verdicts"]
    lines = [
        f"report: {paths.get('html', '')}  (also {paths.get('md', '')}, {paths.get('json', '')})",
        f"  {summary['cases']} crash recoveries classified; unsafe TOOL_NOT_STARTED with the effect applied: {unsafe}",
        f"  {summary['invariant_checks']} invariant checks, {summary['violations']} violation(s)",
        f"  {len(unmet)} unmet coverage requirement(s)",
    ]
    for violation in view["violations"][:10]:
        lines.append(f"  VIOLATION {violation['invariant']}: {violation.get('scenario') or '(no scenario)'}")
    for req in unmet:
        lines.append(f"  NEVER HIT {req['kind']} {req['row']} / {req['col']}")
    survivors = [row["mutant"] for row in view["kill_matrix"] if not row.get("killed")]
    if summary["mutants"]:
        lines.append(f"  self-test: {summary['mutants_killed']}/{summary['mutants']} durability mutants killed")
    for survivor in survivors:
        lines.append(f"  MUTANT SURVIVED {survivor}")
    failed = bool(summary["violations"]) or bool(unmet) or unsafe > 0 or bool(survivors)
    return lines, failed
