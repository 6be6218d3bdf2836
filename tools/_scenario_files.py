"""What the hand-written scenario generators (``tools/*_scenarios.py``) share: a fault rule's
step, and writing each scenario as a committed regression file (digest recorded afterwards by
``dsh-sim replay --update-digest``)."""

from __future__ import annotations

import json
import os
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "scenarios", "regressions")


def arm(point: str, action: str, lifetime: int = 1, **rule: Any) -> dict[str, Any]:
    """Arm ``action`` at the first hit of ``point`` in ``lifetime``."""
    return {"op": "arm", "args": {"rule": {"point": point, "action": action, "hit": 1, "lifetime": lifetime, **rule}}}


def write_scenarios(
    scenarios: dict[str, tuple[str, dict[str, Any], list[dict[str, Any]]]], *, machine: str, seed: int, generator: str, out: str = OUT
) -> None:
    """One file per scenario: ``name -> (description, config, steps)``, each expected to pass."""
    for name, (description, config, steps) in scenarios.items():
        doc = {
            "format": "dsh-sim-scenario",
            "version": 1,
            "name": name,
            "description": description,
            "machine": machine,
            "seed": seed,
            "config": config,
            "fault_plan": [],
            "steps": steps,
            "expect": {"outcome": "pass"},
            "trace_digest": None,
            "origin": {"found_by": "hand", "generator": generator},
        }
        path = os.path.join(out, f"{name}.json")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(doc, indent=2) + "\n")
        print("wrote", os.path.relpath(path, ROOT))
