"""``dsh-sim mutants``: the kill matrix of the durability mutant catalogue."""

from __future__ import annotations

from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, emit_json
from dsh_sim.drivers.selftest import summary
from dsh_sim.evidence.results import meta, write
from dsh_sim.mutation.catalogue import CATALOGUE
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


def main(args: Any) -> int:
    if args.list:
        for name, description in sorted(CATALOGUE.items()):
            print(f"{name:<42} {description}")
        return EXIT_OK
    if args.results:
        check_output_file(args.results, "--results")
    results = api.mutants(args.only, budget=args.budget, progress=None if args.json else lambda r: print(_line(r), flush=True))
    stats = summary(results)
    doc = {"meta": meta("mutants", budget=args.budget, **stats), "kill_matrix": [r.row() for r in results]}
    if args.results:
        write(doc, args.results)
    if args.json:
        emit_json(doc)
    else:
        print(f"{stats['killed']}/{stats['mutants']} mutants killed; median time-to-kill {stats['median_time_to_kill']}s")
        for survivor in stats["survivors"]:
            print(f"  survivor: {survivor}")
    return EXIT_OK if not stats["survivors"] else EXIT_VIOLATION
