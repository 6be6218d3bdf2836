"""``dsh-sim points``: the named points, grouped by layer."""

from __future__ import annotations

from typing import Any

import attrs

from dsh_sim.cli.commands.common import emit_json
from dsh_sim.engine.points import LAYERS, POINTS, UNIVERSAL_ACTIONS


def main(args: Any) -> int:
    if args.json:
        emit_json([attrs.asdict(p) for p in POINTS.values()])
        return 0
    print(f"every point allows: {', '.join(UNIVERSAL_ACTIONS)}; the full language: docs/scenario-reference.md")
    for layer in LAYERS:
        print(f"\n[{layer}]")
        for point in POINTS.values():
            if point.layer == layer:
                faults = f"  (+ {', '.join(point.faults)})" if point.faults else ""
                print(f"  {point.name:<26} {point.doc}{faults}")
                print(f"  {'':<26} match keys: {', '.join(point.details) or '-'}")
    return 0
