"""``dsh-sim report``: merge result documents into coverage.json / .md / .html."""

from __future__ import annotations

import os
from typing import Any

from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, CliError
from dsh_sim.evidence.coverage import aggregate
from dsh_sim.evidence.results import read
from dsh_sim.outputs import check_output_dir


def render(docs: list[dict[str, Any]], out: str) -> tuple[dict[str, Any], dict[str, str], list[dict[str, Any]]]:
    """Aggregate ``docs`` and write the report into ``out``.

    Returns the coverage document (the aggregated view plus the ``summary`` and
    ``requirements`` the report derived from it), the paths written, and the unmet
    requirements.
    """
    from dsh_sim.report import write_coverage

    document, paths = write_coverage(aggregate(docs), out)
    return document, paths, [r for r in document["requirements"] if not r["met"]]


def verdict_lines(view: dict[str, Any], unmet: list[dict[str, Any]], paths: dict[str, str]) -> tuple[list[str], bool]:
    """The lines printed after a report, and whether the run failed.

    The figures come from the ``summary`` :func:`render` put in the document, the same ones
    coverage.json gates on; a bare view gets its summary computed here.
    """
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


def read_documents(inputs: list[str]) -> list[dict[str, Any]]:
    """The result documents under ``inputs``; an unreadable one is one CLI error line."""
    try:
        return read(inputs)
    except ValueError as err:
        raise CliError(str(err)) from None


def report_and_judge(docs: list[dict[str, Any]], out: str) -> int:
    """Write the report of ``docs`` into ``out``, print the verdict, return the exit code
    (shared by ``dsh-sim report`` and the end of ``dsh-sim run``)."""
    view, paths, unmet = render(docs, out)
    lines, failed = verdict_lines(view, unmet, paths)
    print("\n".join(lines))
    return EXIT_VIOLATION if failed else EXIT_OK


def main(args: Any) -> int:
    check_output_dir(args.out)
    inputs = args.inputs if args.inputs else [os.path.join(args.out, "results")]
    docs = read_documents(inputs)
    if not docs:
        raise CliError(f"no result documents in {', '.join(inputs)}; run dsh-sim run, fuzz --results or explore --results first")
    return report_and_judge(docs, args.out)
