"""The JSON of a results document, byte for byte (dsh_sim/evidence/document.py).

Each document is given twice: as the typed value a producer builds and as the dictionary the
producers wrote by hand before the documents were typed.  The file :func:`write` makes must be
exactly that dictionary's ``json.dumps(indent=1, sort_keys=True)``, and reading the file must
give the typed value back — so a conversion that renames, drops or adds a key, turns an
integer into a float or leaves out a ``null`` a producer writes fails here.  A document printed
by ``--json`` is not sorted: its keys keep the order the producers wrote them in.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh_sim.drivers.selftest import KillResult, MethodResult, summary
from dsh_sim.dsh.explore_dsh import DshExploreResult, DshViolation, results_document
from dsh_sim.evidence import document as doc_mod
from dsh_sim.evidence.document import (
    Case,
    CaseCall,
    Determinism,
    DshAgainst,
    DshExploreRow,
    DshRouteRow,
    KillRow,
    Meta,
    PointCounts,
    ResultsDocument,
    Violation,
    structure,
    unstructure,
)
from dsh_sim.evidence.document import DshViolation as DshViolationRecord
from dsh_sim.evidence.document import MethodResult as MethodRecord
from dsh_sim.evidence.results import read, write
from dsh_sim.evidence.tally import CaseTally

STARTED = "2026-01-02T03:04:05+00:00"  # a fixed time: nothing here reads the clock


def _base(kind: str) -> dict[str, Any]:
    """What :func:`dsh_sim.evidence.results.meta` writes first, in its order."""
    return {"format": "dsh-sim-results", "kind": kind, "dsh_sim": "0.1.0", "python": "3.11.7", "argv": ["run"], "started": STARTED}


def _meta(kind: str, **fields: Any) -> Meta:
    return Meta(format="dsh-sim-results", kind=kind, dsh_sim="0.1.0", python="3.11.7", argv=("run",), started=STARTED, **fields)


TALLY = {
    "cases": 2,
    "boundary": {"after 2": {"kill": {"TOOL_OUTCOME_UNKNOWN": 1}}},
    "barrier": {"window write": {"kill": {"TOOL_OUTCOME_UNKNOWN": 1}}, "none": {"fsync": {"no call": 1}}},
    "confusion": {"TOOL_NOT_STARTED": {"applied": 0, "not applied": 0}, "TOOL_OUTCOME_UNKNOWN": {"applied": 1, "not applied": 0}},
    "torn": {"mid-line": 1},
}

# (the typed value, the JSON the producers wrote) for each kind of document
PAIRS: dict[str, tuple[ResultsDocument, dict[str, Any]]] = {
    "explore": (
        ResultsDocument(
            meta=_meta("explore", scenario="s.json", seconds=1.25, states=3, crash_points=2, sampled={"fs.write": 1}),
            case_tally=CaseTally.from_json(TALLY),
            checked={},
            points={"fs.write": PointCounts(2, 1, 0), "fs.fsync": PointCounts(1, 1, 0)},
            cells={"barrier": {"window write": {"kill": {"possible": 2, "explored": 1}}}, "boundary": {}},
            sampled={"fs.write": 1},
            violations=(Violation("seq_dense", "a gap at 3", "found/x.json", "explore"), Violation("expectation")),
        ),
        {
            "meta": {**_base("explore"), "scenario": "s.json", "seconds": 1.25, "states": 3, "crash_points": 2, "sampled": {"fs.write": 1}},
            "case_tally": TALLY,
            "checked": {},
            "points": {"fs.write": {"possible": 2, "explored": 1, "hits": 0}, "fs.fsync": {"possible": 1, "explored": 1, "hits": 0}},
            "cells": {"barrier": {"window write": {"kill": {"possible": 2, "explored": 1}}}, "boundary": {}},
            "sampled": {"fs.write": 1},
            "violations": [
                {"invariant": "seq_dense", "message": "a gap at 3", "scenario": "found/x.json", "source": "explore"},
                {"invariant": "expectation", "message": None, "scenario": None, "source": None},
            ],
        },
    ),
    "replay": (
        ResultsDocument(
            meta=_meta("replay", run="20260102-030405-beef", task="replay-0", worker="local", scenarios=2, seconds=3),
            case_tally=CaseTally.from_json(TALLY),
            checked={"seq_dense": 4},
            points={"fs.write": PointCounts(hits=7)},
            violations=(),
            moved_unjudged=("b.json",),
            determinism=(
                Determinism("a.json", True, "d1", "d1", "recorded vs this process"),
                Determinism("b.json", False, "d1", "d2", "two fresh processes"),
            ),
        ),
        {
            "meta": {**_base("replay"), "run": "20260102-030405-beef", "task": "replay-0", "worker": "local", "scenarios": 2, "seconds": 3},
            "case_tally": TALLY,
            "checked": {"seq_dense": 4},
            "points": {"fs.write": {"hits": 7}},
            "violations": [],
            "moved_unjudged": ["b.json"],
            "determinism": [
                {"scenario": "a.json", "same": True, "digest_a": "d1", "digest_b": "d1", "how": "recorded vs this process"},
                {"scenario": "b.json", "same": False, "digest_a": "d1", "digest_b": "d2", "how": "two fresh processes"},
            ],
        },
    ),
    "fuzz": (
        ResultsDocument(
            meta=_meta(
                "fuzz",
                machine="durability",
                seed=4,
                examples=12,
                steps=300,
                max_rules_per_example=50,
                seconds=0.5,
                mutants=("persist.ack_before_fsync",),
                extra={"config": {"compression": "zstd"}, "examples_limit": None},
            ),
            case_tally=CaseTally(),
            checked={"durable_when_acknowledged": 9},
            points={},
            violations=(),
            dsh_against=DshAgainst(compared=2, probes=1, no_log=0, not_projectable=0, differences=0, explained={}),
        ),
        {
            "meta": {
                **_base("fuzz"),
                "machine": "durability",
                "seed": 4,
                "examples": 12,
                "steps": 300,
                "max_rules_per_example": 50,
                "seconds": 0.5,
                "mutants": ["persist.ack_before_fsync"],
                "config": {"compression": "zstd"},
                "examples_limit": None,
            },
            "case_tally": {**CaseTally().to_json()},
            "checked": {"durable_when_acknowledged": 9},
            "points": {},
            "violations": [],
            "dsh_against": {"compared": 2, "probes": 1, "no_log": 0, "not_projectable": 0, "differences": 0, "explained": {}},
        },
    ),
    "cases listed (older documents)": (
        ResultsDocument(
            meta=_meta("explore"),
            cases=(
                Case(
                    "kill",
                    "append",
                    "window write",
                    (CaseCall("after 2", "TOOL_OUTCOME_UNKNOWN", "c1", True),),
                    "explore",
                    "fs.write",
                    "fs",
                    None,
                    True,
                    (),
                ),
            ),
        ),
        {
            "meta": _base("explore"),
            "cases": [
                {
                    "kind": "kill",
                    "phase": "append",
                    "barrier": "window write",
                    "calls": [{"boundary": "after 2", "outcome": "TOOL_OUTCOME_UNKNOWN", "id": "c1", "applied": True}],
                    "source": "explore",
                    "point": "fs.write",
                    "layer": "fs",
                    "torn_class": None,
                    "recovered": True,
                    "violations": [],
                }
            ],
        },
    ),
    "mutants": (
        ResultsDocument(
            meta=_meta("mutants", budget=1.0, mutants=1, killed=0, extra={"median_time_to_kill": None}, survivors=("m",)),
            kill_matrix=(KillRow("m", "a bug", False, by_method={"corpus": MethodRecord(False, 0.25, examples=3)}),),
        ),
        {
            "meta": {**_base("mutants"), "budget": 1.0, "mutants": 1, "killed": 0, "median_time_to_kill": None, "survivors": ["m"]},
            "kill_matrix": [
                {
                    "mutant": "m",
                    "description": "a bug",
                    "killed": False,
                    "method": None,
                    "time_to_kill": None,
                    "invariant": None,
                    "examples": None,
                    "scenario": None,
                    "scenario_steps": None,
                    "by_method": {
                        "corpus": {
                            "killed": False,
                            "seconds": 0.25,
                            "invariant": None,
                            "example": None,
                            "examples": 3,
                            "scenario_steps": None,
                        }
                    },
                }
            ],
        },
    ),
    "dsh": (
        ResultsDocument(
            meta=_meta("explore-dsh", shapes=1, states=5, seconds=0.75),
            dsh_explore=(
                DshExploreRow(
                    shape="pay",
                    compression="zstd",
                    crash_points=4,
                    states=5,
                    recoveries_run=2,
                    per_op={"write": 4},
                    points_by_op={"write": 4},
                    checked={"seq_dense": 2},
                    violations=(DshViolationRecord("seq_dense", 3, "power", "a gap"),),
                    seconds=0.75,
                    scenario="s.json",
                ),
            ),
            violations=(Violation("seq_dense", "the DSH writer", "s.json", "explore-dsh"),),
            dsh_route=(DshRouteRow(scenario="s.json", name="pay", verdicts={"TOOL_NOT_STARTED": 1}, confusion={"a": {"b": 1}}),),
            dsh_skipped="not installed",
        ),
        {
            "meta": {**_base("explore-dsh"), "shapes": 1, "states": 5, "seconds": 0.75},
            "dsh_explore": [
                {
                    "shape": "pay",
                    "compression": "zstd",
                    "crash_points": 4,
                    "states": 5,
                    "recoveries_run": 2,
                    "per_op": {"write": 4},
                    "points_by_op": {"write": 4},
                    "checked": {"seq_dense": 2},
                    "violations": [{"invariant": "seq_dense", "point": 3, "crash": "power", "detail": "a gap"}],
                    "seconds": 0.75,
                    "scenario": "s.json",
                }
            ],
            "violations": [{"invariant": "seq_dense", "message": "the DSH writer", "scenario": "s.json", "source": "explore-dsh"}],
            "dsh_route": [{"scenario": "s.json", "name": "pay", "verdicts": {"TOOL_NOT_STARTED": 1}, "confusion": {"a": {"b": 1}}}],
            "dsh_skipped": "not installed",
        },
    ),
}


@pytest.mark.parametrize("name", list(PAIRS))
def test_the_file_written_is_the_json_the_producers_wrote(name: str, tmp_path: Path) -> None:
    typed, written = PAIRS[name]
    text = json.dumps(written, indent=1, sort_keys=True) + "\n"
    path = write(typed, str(tmp_path / "r.json"))
    assert Path(path).read_text(encoding="utf-8") == text
    assert read([path]) == [typed]  # and the file reads back as the value written
    assert structure(written) == typed and unstructure(typed) == written
    # read and written again, byte for byte (3 == 3.0 in Python, not in the file)
    assert Path(write(read([path])[0], str(tmp_path / "again.json"))).read_text(encoding="utf-8") == text


@pytest.mark.parametrize("name", ["mutants", "dsh"])
def test_a_document_printed_unsorted_keeps_the_producers_order(name: str) -> None:
    typed, written = PAIRS[name]
    as_json = typed.to_json()
    assert list(as_json) == list(written)
    for key, value in written.items():
        if isinstance(value, dict):
            assert list(as_json[key]) == list(value), key
        elif isinstance(value, list):
            assert [list(item) for item in as_json[key]] == [list(item) for item in value], key


def test_what_dsh_sim_mutants_and_explore_dsh_print_keeps_its_order() -> None:
    """The two commands that print a results document with ``--json`` (unsorted)."""
    kill = KillResult("m", "d", {"corpus": MethodResult(True, 0.5, "i", "s.json", 1)})
    stats = summary([kill])
    meta = unstructure(doc_mod.structure_as({**_base("mutants"), "budget": 2.0, **stats}, Meta))
    assert list(meta) == [*_base("mutants"), "budget", "mutants", "killed", "median_time_to_kill", "survivors"]
    explored = DshExploreResult("pay", "zstd", 4, 5, 2, (DshViolation("seq_dense", 3, "power", "a gap"),), 0.75, {"write": 4}, {"write": 4})
    doc = results_document([("s.json", explored)]).to_json()
    assert list(doc) == ["meta", "dsh_explore", "violations"]
    assert list(doc["meta"])[-3:] == ["shapes", "states", "seconds"]
    assert list(doc["dsh_explore"][0]) == [*explored.document(), "scenario"]
