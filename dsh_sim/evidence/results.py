"""Result documents: what every run writes so that reports can merge runs.

A result document is plain JSON: ``meta`` (what ran, seeds, time), the coverage cases
counted (``case_tally``, :mod:`dsh_sim.evidence.tally`; older documents list ``cases``),
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
from dsh_sim.evidence.tally import CaseTally
from dsh_sim.evidence.tally import shape_problem as tally_problem
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


FRESH = "fresh"  # in a determinism entry's ``how``: re-run in fresh interpreters (recheck), not a recorded digest


def determinism_counts(entries: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Determinism entries split the way the run's summary line and the report say them:
    recorded digests replayed (and how many reproduced), scenarios re-checked in two fresh
    processes (and how many were the same), and the differences in all."""
    recorded = recorded_same = fresh = fresh_same = 0
    for entry in entries:
        same = bool(entry.get("same"))
        if FRESH in str(entry.get("how", "")):
            fresh, fresh_same = fresh + 1, fresh_same + same
        else:
            recorded, recorded_same = recorded + 1, recorded_same + same
    return {
        "recorded": recorded,
        "recorded_same": recorded_same,
        "fresh": fresh,
        "fresh_same": fresh_same,
        "differences": recorded - recorded_same + fresh - fresh_same,
    }


def determinism_text(counts: dict[str, int]) -> str:
    """The one wording of :func:`determinism_counts` (the terminal and the report use it both)."""
    return (
        f"{counts['recorded_same']}/{counts['recorded']} recorded digest(s) reproduced, "
        f"{counts['fresh_same']}/{counts['fresh']} re-checked in two fresh processes the same, "
        f"{counts['differences']} difference(s)"
    )


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
    if result.not_applicable:  # the steps after it were never explored: a gap, reported as replay reports it
        message = f"NOT EXPLORED past {result.not_applicable} (the steps after it never ran)"
        violations.append({"invariant": "expectation", "message": message, "scenario": scenario_path, "source": "explore-record"})
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
        "case_tally": _tally(result.cases),
        "checked": checked,
        "points": points,
        "cells": result.cells,
        "sampled": dict(result.sampled),
        "violations": violations,
    }


def merge_documents(docs: Iterable[dict[str, Any]], meta_: dict[str, Any]) -> dict[str, Any]:
    """One results document adding up ``docs`` (the explore documents of a campaign shard),
    under ``meta_``: counts summed, lists concatenated; what the report reads is unchanged."""
    tally = CaseTally()
    out: dict[str, Any] = {"meta": meta_, "checked": {}, "points": {}, "cells": {}, "sampled": {}, "violations": [], "determinism": []}

    def add(into: dict[str, Any], counts: dict[str, Any]) -> None:
        for key, value in counts.items():
            if isinstance(value, dict):
                add(into.setdefault(key, {}), value)
            else:
                into[key] = into.get(key, 0) + value

    for doc in docs:
        tally.merge(CaseTally.of_document(doc))
        for key in ("checked", "points", "cells", "sampled"):
            add(out[key], doc.get(key, {}))
        out["violations"] += doc.get("violations", [])
        out["determinism"] += doc.get("determinism", [])
    out["case_tally"] = tally.to_json()
    return out


def unique(docs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Documents without repeats: a task of a campaign run (``meta.run`` and ``meta.task``)
    counts once however often its run is named in ``--from``."""
    seen: set[tuple[str, str]] = set()
    out = []
    for doc in docs:
        run, task = doc.get("meta", {}).get("run"), doc.get("meta", {}).get("task")
        if isinstance(run, str) and isinstance(task, str):
            if (run, task) in seen:
                continue
            seen.add((run, task))
        out.append(doc)
    return out


def _tally(cases: Any) -> dict[str, Any]:
    tally = CaseTally()
    tally.add_all(cases)
    return tally.to_json()


def write(doc: dict[str, Any], path: str) -> str:
    """Write a results document (replacing it; never through a symbolic link)."""
    write_replacing(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return path


def _is(value: Any, kind: type | tuple[type, ...]) -> bool:
    return isinstance(value, kind) and not (isinstance(value, bool) and kind in (int, (int, float)))


def _counts(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and _is(n, int) for k, n in value.items())


def shape_problem(doc: Any) -> str | None:
    """What makes ``doc`` unusable as a results document (``None``: the report can read it)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("meta"), dict) or doc["meta"].get("format") != RESULTS_FORMAT:
        return f"not a dsh-sim results document (meta.format != {RESULTS_FORMAT!r})"
    for key in ("cases", "violations", "determinism", "kill_matrix"):
        if not isinstance(doc.get(key, []), list) or not all(isinstance(item, dict) for item in doc.get(key, [])):
            return f"{key!r} must be a list of objects"
    for case in doc.get("cases", []):
        calls = case.get("calls")
        if not all(isinstance(case.get(k), str) for k in ("kind", "phase", "barrier")) or not isinstance(calls, list):
            return "a case needs kind, phase, barrier (strings) and calls (a list)"
        for call in calls:
            if not isinstance(call, dict) or not isinstance(call.get("boundary"), str) or not isinstance(call.get("outcome"), str):
                return "a call of a case needs boundary and outcome (strings)"
    for key in ("dsh_explore", "dsh_route", "sweep"):
        if not isinstance(doc.get(key, []), list) or not all(isinstance(s, dict) for s in doc.get(key, [])):
            return f"{key!r} must be a list of objects"
    if not isinstance(doc.get("dsh_against", {}), dict) or not _counts(
        {k: v for k, v in doc.get("dsh_against", {}).items() if k != "explained"}
    ):
        return "'dsh_against' must map names to integers"
    if not isinstance(doc.get("readers", {}), dict) or not isinstance(doc.get("campaign", {}), dict):
        return "'readers' and 'campaign' must be objects"
    if "case_tally" in doc and (problem := tally_problem(doc["case_tally"])) is not None:
        return problem
    if not all(isinstance(v.get("invariant"), str) for v in doc.get("violations", [])):
        return "a violation needs an invariant (string)"
    if not all(isinstance(k.get("mutant"), str) for k in doc.get("kill_matrix", [])):
        return "a kill-matrix row needs a mutant (string)"
    if not _counts(doc.get("checked", {})) or not _counts(doc.get("sampled", {})):
        return "'checked' and 'sampled' must map names to integers"
    points = doc.get("points", {})
    if not isinstance(points, dict) or not all(_counts(v) for v in points.values()):
        return "'points' must map names to objects of integer counts"
    cells = doc.get("cells", {})
    if not isinstance(cells, dict) or not all(
        isinstance(rows, dict) and all(isinstance(cols, dict) and all(_counts(c) for c in cols.values()) for cols in rows.values())
        for rows in cells.values()
    ):
        return "'cells' must map matrix → row → column → integer counts"
    return None


def read(paths: Iterable[str]) -> list[dict[str, Any]]:
    """Load result documents; a directory means every ``*.json`` in it.  A file that is not
    a readable, well-formed results document is a :class:`ValueError` naming it."""
    from dsh_sim.errors import InputError
    from dsh_sim.inputs import read_json

    docs = []
    for path in paths:
        if not os.path.exists(path):
            raise ValueError(f"{path}: no such file or directory")
        files = sorted(glob.glob(os.path.join(path, "*.json"))) if os.path.isdir(path) else [path]
        for file in files:
            try:
                doc = read_json(file, "results document")
            except InputError as err:
                raise ValueError(str(err)) from None
            problem = shape_problem(doc)
            if problem is not None:
                raise ValueError(f"{file}: {problem}")
            docs.append(doc)
    return docs
