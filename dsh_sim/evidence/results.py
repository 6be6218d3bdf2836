"""Result documents: what every run writes so that reports can merge runs.

A result document is plain JSON: ``meta`` (what ran, seeds, time), the coverage cases
counted (``case_tally``, :mod:`dsh_sim.evidence.tally`; older documents list ``cases``),
``checked`` invariant counts, ``points`` (possible/explored/hits per named point),
``violations`` (each with the scenario that replays it), ``determinism`` re-checks and,
for self-tests, the mutant ``kill_matrix``.  Runs split across processes or machines merge
by simply reading all their documents (:func:`dsh_sim.evidence.coverage.aggregate`).

In memory a document is a :class:`~dsh_sim.evidence.document.ResultsDocument`: producers
build one, :func:`write` writes its JSON and :func:`read` reads and checks it, both through
the one conversion of :mod:`dsh_sim.evidence.document`.
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
from dsh_sim.evidence.document import (
    RESULTS_FORMAT,
    Counts,
    Determinism,
    DocumentError,
    Grid,
    Meta,
    PointCounts,
    ResultsDocument,
    Violation,
    read_document,
    structure_as,
    unstructure,
)
from dsh_sim.evidence.tally import CaseTally
from dsh_sim.outputs import write_replacing

__all__ = ["RESULTS_FORMAT", "explore_document", "merge_documents", "meta", "read", "unique", "write", "write_json"]


def meta(kind: str, **extra: Any) -> Meta:
    """The meta of a new document: what runs, in which versions, since when, and ``extra``."""
    return structure_as(
        {
            "format": RESULTS_FORMAT,
            "kind": kind,
            "dsh_sim": __version__,
            "python": sys.version.split()[0],
            "argv": sys.argv[1:],
            "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            **extra,
        },
        Meta,
    )


def explore_document(result: Any, scenario_path: str, seconds: float) -> ResultsDocument:
    points: dict[str, PointCounts] = {}
    for name, n in result.possible.items():
        points[name] = points.get(name, _NO_POINT).plus(PointCounts(possible=n))
    for name, n in result.explored.items():
        points[name] = points.get(name, _NO_POINT).plus(PointCounts(explored=n))
    violations = [Violation(v.invariant, v.describe(), state.repro, "explore") for state, v in result.violations]
    violations += [Violation(v.invariant, v.describe(), scenario_path, "explore-record") for v in result.record_violations]
    if result.not_applicable:  # the steps after it were never explored: a gap, reported as replay reports it
        message = f"NOT EXPLORED past {result.not_applicable} (the steps after it never ran)"
        violations.append(Violation("expectation", message, scenario_path, "explore-record"))
    tally = CaseTally()
    tally.add_all(result.cases)
    return ResultsDocument(
        meta=meta(
            "explore",
            scenario=scenario_path,
            seconds=round(seconds, 3),
            states=len(result.states),
            crash_points=len(result.points),
            sampled=result.sampled,
        ),
        case_tally=tally,
        checked={},
        points=points,
        cells=result.cells,
        sampled=dict(result.sampled),
        violations=tuple(violations),
    )


# every count of a point present (explore writes possible, explored and hits, all zero at first)
_NO_POINT = PointCounts(0, 0, 0)


def _add(into: Counts, counts: Counts) -> None:
    for name, n in counts.items():
        into[name] = into.get(name, 0) + n


def merge_documents(docs: Iterable[ResultsDocument], meta_: Meta) -> ResultsDocument:
    """One results document adding up ``docs`` (the explore documents of a campaign shard),
    under ``meta_``: counts summed, lists concatenated; what the report reads is unchanged."""
    tally = CaseTally()
    checked: Counts = {}
    sampled: Counts = {}
    points: dict[str, PointCounts] = {}
    cells: dict[str, Grid] = {}
    violations: list[Violation] = []
    determinism: list[Determinism] = []
    for doc in docs:
        tally.merge(doc.tally())
        _add(checked, doc.checked or {})
        _add(sampled, doc.sampled or {})
        for name, point in (doc.points or {}).items():
            points[name] = points[name].plus(point) if name in points else point
        for matrix, rows in (doc.cells or {}).items():
            grid = cells.setdefault(matrix, {})
            for row, cols in rows.items():
                line = grid.setdefault(row, {})
                for col, counts in cols.items():
                    _add(line.setdefault(col, {}), counts)
        violations += doc.violations or ()
        determinism += doc.determinism or ()
    return ResultsDocument(
        meta=meta_,
        case_tally=tally,
        checked=checked,
        points=points,
        cells=cells,
        sampled=sampled,
        violations=tuple(violations),
        determinism=tuple(determinism),
    )


def unique(docs: Iterable[ResultsDocument]) -> list[ResultsDocument]:
    """Documents without repeats: a task of a campaign run (``meta.run`` and ``meta.task``)
    counts once however often its run is named in ``--from``."""
    seen: set[tuple[str, str]] = set()
    out = []
    for doc in docs:
        if doc.meta is not None and doc.meta.run is not None and doc.meta.task is not None:
            if (doc.meta.run, doc.meta.task) in seen:
                continue
            seen.add((doc.meta.run, doc.meta.task))
        out.append(doc)
    return out


def write_json(obj: Any, path: str) -> str:
    """Write a JSON document as results documents are written (replacing it; never through a
    symbolic link)."""
    write_replacing(path, json.dumps(obj, indent=1, sort_keys=True) + "\n")
    return path


def write(doc: ResultsDocument, path: str) -> str:
    """Write a results document (replacing it; never through a symbolic link)."""
    return write_json(unstructure(doc), path)


def read(paths: Iterable[str]) -> list[ResultsDocument]:
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
                docs.append(read_document(read_json(file, "results document")))
            except InputError as err:
                raise ValueError(str(err)) from None
            except DocumentError as err:
                raise ValueError(f"{file}: {err}") from None
    return docs
