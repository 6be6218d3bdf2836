"""Result documents: what every run writes so that reports can merge runs.

A result document is plain JSON: ``meta`` (what ran, seeds, time), coverage ``cases``,
``checked`` invariant counts, ``points`` (possible/explored/hits per named point),
``violations`` (each with the scenario that replays it), ``determinism`` re-checks and,
for self-tests, the mutant ``kill_matrix``.  Runs split across processes or machines merge
by simply reading all their documents (:func:`dsh_sim.evidence.coverage.aggregate`).
"""

from __future__ import annotations

import datetime
import glob
import json
import os
import sys
from collections.abc import Iterable
from typing import Any

from dsh_sim import __version__
from dsh_sim.outputs import write_replacing

RESULTS_FORMAT = "dsh-sim-results"


def meta(kind: str, **extra: Any) -> dict[str, Any]:
    return {
        "format": RESULTS_FORMAT,
        "kind": kind,
        "dsh_sim": __version__,
        "python": sys.version.split()[0],
        "argv": sys.argv[1:],
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        **extra,
    }


def explore_document(result: Any, scenario_path: str, seconds: float) -> dict[str, Any]:
    points: dict[str, dict[str, int]] = {}
    for name, n in result.possible.items():
        points.setdefault(name, {"possible": 0, "explored": 0, "hits": 0})["possible"] += n
    for name, n in result.explored.items():
        points.setdefault(name, {"possible": 0, "explored": 0, "hits": 0})["explored"] += n
    violations = [
        {"invariant": v.invariant, "message": v.describe(), "scenario": state.repro, "source": "explore"} for state, v in result.violations
    ]
    violations += [
        {"invariant": v.invariant, "message": v.describe(), "scenario": scenario_path, "source": "explore-record"}
        for v in result.record_violations
    ]
    checked: dict[str, int] = {}
    return {
        "meta": meta(
            "explore",
            scenario=scenario_path,
            seconds=round(seconds, 3),
            states=len(result.states),
            crash_points=len(result.points),
            sampled=result.sampled,
        ),
        "cases": list(result.cases),
        "checked": checked,
        "points": points,
        "cells": result.cells,
        "sampled": dict(result.sampled),
        "violations": violations,
    }


def write(doc: dict[str, Any], path: str) -> str:
    """Write a results document (replacing it; never through a symbolic link)."""
    write_replacing(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return path


def read(paths: Iterable[str]) -> list[dict[str, Any]]:
    """Load result documents; a directory means every ``*.json`` in it."""
    docs = []
    for path in paths:
        files = sorted(glob.glob(os.path.join(path, "*.json"))) if os.path.isdir(path) else [path]
        for file in files:
            try:
                with open(file, encoding="utf-8") as handle:
                    doc = json.load(handle)
            except (OSError, ValueError) as err:
                raise ValueError(f"{file}: not a readable results document: {err}") from None
            if not isinstance(doc, dict) or doc.get("meta", {}).get("format") != RESULTS_FORMAT:
                raise ValueError(f"{file}: not a dsh-sim results document (meta.format != {RESULTS_FORMAT!r})")
            docs.append(doc)
    return docs
