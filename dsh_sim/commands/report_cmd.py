"""``dsh-sim report``: merge result documents into coverage.json / .md / .html."""

from __future__ import annotations

import os
from typing import Any

from dsh_sim.commands.common import EXIT_OK, EXIT_VIOLATION, CliError
from dsh_sim.coverage import aggregate, requirement_status
from dsh_sim.results import read


def render(docs: list[dict[str, Any]], out: str) -> tuple[dict[str, Any], dict[str, str], list[dict[str, Any]]]:
    from dsh_sim.report import write_report

    view = aggregate(docs)
    paths = write_report(view, out)
    return view, paths, [r for r in requirement_status(view) if not r["met"]]


def verdict_lines(view: dict[str, Any], unmet: list[dict[str, Any]], paths: dict[str, str]) -> tuple[list[str], bool]:
    unsafe = view["confusion"]["TOOL_NOT_STARTED"]["applied"]
    lines = [
        f"report: {paths.get('html', '')}  (also {paths.get('md', '')}, {paths.get('json', '')})",
        f"  {view['cases']} crash recoveries classified; unsafe TOOL_NOT_STARTED with the effect applied: {unsafe}",
        f"  {sum(view['checked'].values())} invariant checks, {len(view['violations'])} violation(s)",
        f"  {len([r for r in unmet])} unmet coverage requirement(s)",
    ]
    for violation in view["violations"][:10]:
        lines.append(f"  VIOLATION {violation['invariant']}: {violation.get('scenario') or '(no scenario)'}")
    for req in unmet:
        lines.append(f"  NEVER HIT {req['kind']} {req['row']} / {req['col']}")
    survivors = [row["mutant"] for row in view["kill_matrix"] if not row.get("killed")]
    if view["kill_matrix"]:
        lines.append(f"  self-test: {len(view['kill_matrix']) - len(survivors)}/{len(view['kill_matrix'])} durability mutants killed")
    for survivor in survivors:
        lines.append(f"  MUTANT SURVIVED {survivor}")
    failed = bool(view["violations"]) or bool(unmet) or unsafe > 0 or bool(survivors)
    return lines, failed


def main(args: Any) -> int:
    inputs = args.inputs if args.inputs else [os.path.join(args.out, "results")]
    try:
        docs = read(inputs)
    except ValueError as err:
        raise CliError(str(err)) from None
    if not docs:
        raise CliError(f"no result documents in {', '.join(inputs)}; run dsh-sim run, fuzz --results or explore --results first")
    view, paths, unmet = render(docs, args.out)
    lines, failed = verdict_lines(view, unmet, paths)
    print("\n".join(lines))
    return EXIT_VIOLATION if failed else EXIT_OK
