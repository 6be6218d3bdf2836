"""``dsh-sim mutants``: the kill matrix of the durability mutant catalogue
(:func:`dsh_sim.api.mutants`); ``--tool``: mutmut (:func:`dsh_sim.api.mutation_tool`)."""

from __future__ import annotations

from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, CliError, emit_json
from dsh_sim.outputs import check_output_file


def _line(result: api.KillResult) -> str:
    fastest = result.fastest
    if fastest is None:
        return f"SURVIVED  {result.mutant:<42} (no method caught it)"
    method, m = fastest
    by = ", ".join(f"{name} {r.seconds:.1f}s" for name, r in result.methods.items() if r.killed)
    size = result.methods.get("fuzz")
    steps = f", shrunk to {size.scenario_steps} steps" if size and size.killed and size.scenario_steps else ""
    return f"killed    {result.mutant:<42} {m.invariant:<26} fastest: {method} {m.seconds:.1f}s  (by {by}{steps})"


def tool_main(args: Any) -> int:
    """Run (or continue) mutmut over the modules, then print the survivor report's totals."""
    try:
        run = api.mutation_tool(
            modules=args.modules,
            max_children=args.max_children,
            workdir=args.workdir,
            sample=args.sample,
            seed=args.seed,
            retest_survivors=args.retest_survivors,
            report_only=args.report_only,
            triage=args.triage,
            snapshot=args.snapshot,
            results=args.results,
            notice=lambda line: print(line, flush=True),
        )
    except api.MutationToolFailed as err:
        raise CliError(str(err), EXIT_VIOLATION) from None
    doc = run.document
    if args.json:
        emit_json(doc)
        return EXIT_OK
    totals = doc["totals"]
    rate = doc["kill_rate"]
    print(
        f"{totals.get('total', 0)} mutants: {totals.get('killed', 0)} killed, {totals.get('timeout', 0)} timeout, "
        f"{totals.get('survived', 0)} survived, {totals.get('no tests', 0)} not reached; "
        f"kill rate {'n/a' if rate is None else f'{rate:.1%}'} of non-equivalent"
    )
    print(
        f"survivors: {totals.get('equivalent', 0)} equivalent, {totals.get('not-relevant', 0)} not relevant, {totals.get('gap', 0)} gaps, {totals.get('untriaged', 0)} untriaged"
    )
    print(f"report: {run.results} and {run.markdown}")
    return EXIT_OK


TOOL_ONLY = ("report_only", "retest_survivors", "sample", "snapshot")


def main(args: Any) -> int:
    if getattr(args, "tool", False):
        if args.list:
            raise CliError("--list and --tool do not go together (--list prints the catalogue of the durability mutants)")
        if args.only:
            raise CliError("--only names catalogue mutants; with --tool use --modules")
        return tool_main(args)
    used = [name for name in TOOL_ONLY if getattr(args, name, None)]
    if used:
        raise CliError(f"--{used[0].replace('_', '-')} needs --tool (mutation testing with mutmut)")
    if args.list:
        for name, description in api.mutant_catalogue().items():
            print(f"{name:<42} {description}")
        return EXIT_OK
    if args.results:
        check_output_file(args.results, "--results")
    matrix = api.mutants(
        args.only, budget=args.budget, results=args.results, progress=None if args.json else lambda r: print(_line(r), flush=True)
    )
    stats = matrix.stats
    if args.json:
        emit_json(matrix.document.to_json())
    else:
        print(f"{stats['killed']}/{stats['mutants']} mutants killed; median time-to-kill {stats['median_time_to_kill']}s")
        for survivor in stats["survivors"]:
            print(f"  survivor: {survivor}")
    return EXIT_OK if not matrix.survivors else EXIT_VIOLATION
