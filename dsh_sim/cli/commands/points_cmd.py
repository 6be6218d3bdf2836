"""``dsh-sim points``: the named points, grouped by layer (:func:`dsh_sim.api.points`)."""

from __future__ import annotations

from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import emit_json


def main(args: Any) -> int:
    if getattr(args, "runtime", "dsh-sim") == "dsh-route":
        from dsh_sim.cli.commands import route_cmd

        return route_cmd.points(args)
    table = api.points()
    if args.json:
        emit_json(table.rows())
        return 0
    print(f"every point allows: {', '.join(table.universal_actions)}; the full language: docs/scenario-reference.md")
    for layer in table.layers:
        print(f"\n[{layer}]")
        for point in table.in_layer(layer):
            faults = f"  (+ {', '.join(point.faults)})" if point.faults else ""
            print(f"  {point.name:<26} {point.doc}{faults}")
            print(f"  {'':<26} match keys: {', '.join(point.details) or '-'}")
    return 0
