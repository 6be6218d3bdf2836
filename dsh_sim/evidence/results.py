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
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

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

__all__ = [
    "FRESH",
    "RESULTS_FORMAT",
    "DeterminismCounts",
    "determinism_counts",
    "determinism_text",
    "explore_document",
    "merge_documents",
    "meta",
    "read",
    "unique",
    "write",
    "write_json",
]


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


FRESH = "fresh"  # in a determinism entry's ``how``: re-run in fresh interpreters (recheck), not a recorded digest


@attrs.frozen
class DeterminismCounts:
    """Determinism entries split the way the run's summary line and the report say them:
    recorded digests replayed (and how many reproduced), scenarios re-checked in two fresh
    processes (and how many were the same), and the differences in all."""

    recorded: int = 0
    recorded_same: int = 0
    fresh: int = 0
    fresh_same: int = 0

    @property
    def differences(self) -> int:
        return self.recorded - self.recorded_same + self.fresh - self.fresh_same


def determinism_counts(entries: Iterable[Determinism | Mapping[str, Any]]) -> DeterminismCounts:
    """:class:`DeterminismCounts` of typed entries (a campaign's documents) or of the report's
    view (their JSON)."""
    recorded = recorded_same = fresh = fresh_same = 0
    for entry in entries:
        same, how = (entry.same, entry.how) if isinstance(entry, Determinism) else (bool(entry.get("same")), entry.get("how"))
        if FRESH in str(how or ""):
            fresh, fresh_same = fresh + 1, fresh_same + bool(same)
        else:
            recorded, recorded_same = recorded + 1, recorded_same + bool(same)
    return DeterminismCounts(recorded, recorded_same, fresh, fresh_same)


def determinism_text(counts: DeterminismCounts) -> str:
    """The one wording of :func:`determinism_counts` (the terminal and the report use it both)."""
    return (
        f"{counts.recorded_same}/{counts.recorded} recorded digest(s) reproduced, "
        f"{counts.fresh_same}/{counts.fresh} re-checked in two fresh processes the same, "
        f"{counts.differences} difference(s)"
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
    tally.merge(result.tally)
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
