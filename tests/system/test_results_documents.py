"""Results documents as types (dsh_sim/evidence/document.py): one schema, one conversion each way.

A document written by each kind of run reads back as the value that was written, and its JSON
as the JSON (no key added or lost); a malformed file is refused in one line naming it and what
is wrong; and the report renders the same whether it is given the JSON or the typed documents.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import attrs
import pytest

from dsh_sim import api
from dsh_sim.campaign import dsh_phase
from dsh_sim.campaign.summary import CampaignCounts, counts
from dsh_sim.campaign.tasks import ExploreShard, FuzzShard, MutantKill, ReplayShard
from dsh_sim.campaign.work import run_task
from dsh_sim.drivers.selftest import KillResult, MethodResult, summary
from dsh_sim.dsh.explore_dsh import DshExploreResult, DshViolation, results_document
from dsh_sim.errors import InputError
from dsh_sim.evidence.coverage import aggregate
from dsh_sim.evidence.document import (
    DocumentError,
    DshRouteRow,
    Meta,
    ResultsDocument,
    read_document,
    structure,
    structure_as,
    unstructure,
)
from dsh_sim.evidence.results import merge_documents, meta, read, write
from dsh_sim.evidence.tally import CaseTally
from dsh_sim.report import write_report
from dsh_sim.report.sample import sample_results
from tests.support.campaign import QuietContext
from tests.support.paths import ROOT

STARTER = os.path.join(ROOT, "scenarios", "starter")
SCENARIO = os.path.join(STARTER, "boundary-2-3-pay.json")


def _dsh_documents(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, ResultsDocument]:
    """The DSH phase's documents, built without Node from results of the shapes DSH gives."""
    shape = DshExploreResult(
        "boundary-2-3-pay", "zstd", 37, 106, 27, (DshViolation("seq_dense", 4, "power", "a gap"),), 1.6, {"write": 27}, {"seq_dense": 26}
    )

    @attrs.frozen
    class Explored:  # what dsh_phase reads of an exploration
        states: tuple[int, ...] = (1, 2)
        seconds: float = 0.5
        violations: tuple[Any, ...] = ()

    before = {"compared": 1, "probes": 1, "no_log": 0, "not_projectable": 0, "differences": 0, "explained": {}}
    after = {**before, "compared": 9, "probes": 4, "explained": {"DSH-8": 2}}
    row = {"scenario": SCENARIO, "name": "boundary-2-3-pay", "crash_points": 56, "states": 56, "verdicts": {"TOOL_NOT_STARTED": 9}}
    monkeypatch.setattr(dsh_phase, "installed", lambda: None)
    (skipped,) = dsh_phase.run_dsh_phase([], [], str(tmp), "")
    return {
        "explore-dsh": results_document([(SCENARIO, shape)]),
        "against-dsh": dsh_phase._against_document(SCENARIO, Explored(), before, after),
        "dsh-route": ResultsDocument(meta=meta("dsh-route", seconds=1.1, skipped=2), dsh_route=(structure_as(row, DshRouteRow),)),
        "dsh-skipped": read([skipped])[0],
    }


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ResultsDocument]:
    """A document of each kind, made by the code that makes it (campaign tasks, commands, the DSH phase)."""
    tmp = tmp_path_factory.mktemp("docs")
    corpus = {SCENARIO: Path(SCENARIO).read_text(encoding="utf-8")}
    found = str(tmp / "found")
    tasks = {
        "replay": ReplayShard("replay-0", (SCENARIO,)),
        "explore-shard": ExploreShard("explore-0", (SCENARIO,), bound=1),
        "fuzz-shard": FuzzShard("fuzz-durability-0", "durability", 3, 60.0, examples=2),
        "mutant": MutantKill("mutant-persist.ack_before_fsync", "persist.ack_before_fsync", (SCENARIO,)),
    }
    docs = {name: run_task(task, corpus, QuietContext(), found).document for name, task in tasks.items()}
    explored = api.explore_files([SCENARIO], bound=1, found_dir=found, results=str(tmp / "explore.json"))
    docs["explore"] = explored.explored[0].document
    api.fuzz(examples=2, seed=4, found_dir=found, results=str(tmp / "fuzz.json"))
    (docs["fuzz"],) = read([str(tmp / "fuzz.json")])
    kill = KillResult(
        "persist.ack_before_fsync",
        "d",
        {"corpus": MethodResult(False, 0.2, examples=3), "fuzz": MethodResult(True, 0.5, "x", "f.json", 7, 4)},
    )
    docs["mutants"] = ResultsDocument(meta=meta("mutants", budget=1.0, **summary([kill])), kill_matrix=(kill.kill_row(),))
    with pytest.MonkeyPatch.context() as monkeypatch:
        docs.update(_dsh_documents(tmp, monkeypatch))
    return docs


@pytest.mark.slow
def test_a_document_of_every_kind_reads_back_as_written(written: dict[str, ResultsDocument], tmp_path: Path) -> None:
    for name, doc in written.items():
        path = write(doc, str(tmp_path / f"{name}.json"))
        text = json.loads(Path(path).read_text(encoding="utf-8"))
        assert text == unstructure(doc) == doc.to_json(), name
        assert read([path]) == [doc], name  # file -> typed: the value written
        assert unstructure(structure(text)) == text, name  # and its JSON: no key added or lost
        assert structure(unstructure(doc)) == doc, name


@pytest.mark.slow
def test_what_each_kind_keeps_and_leaves_out(written: dict[str, ResultsDocument]) -> None:
    """The JSON stays as the hand-built dictionaries made it: absent parts stay absent, empty ones stay."""
    keys = {name: sorted(doc.to_json()) for name, doc in written.items()}
    assert keys["explore"] == ["case_tally", "cells", "checked", "meta", "points", "sampled", "violations"]
    assert keys["explore-shard"] == ["case_tally", "cells", "checked", "determinism", "meta", "points", "sampled", "violations"]
    assert keys["replay"] == ["case_tally", "checked", "determinism", "meta", "moved_unjudged", "points", "violations"]
    assert keys["fuzz"] == keys["fuzz-shard"] == ["case_tally", "checked", "meta", "points", "violations"]
    assert keys["mutants"] == keys["mutant"] == ["kill_matrix", "meta"]
    assert keys["against-dsh"] == ["checked", "dsh_against", "meta", "violations"]
    assert keys["dsh-skipped"] == ["dsh_skipped", "meta"]
    assert written["explore"].to_json()["checked"] == {}  # empty, and written
    survivor = written["mutants"].to_json()["kill_matrix"][0]["by_method"]["corpus"]
    assert survivor["invariant"] is None and survivor["example"] is None  # nulls producers write stay
    fuzz = written["fuzz-shard"].to_json()["meta"]
    assert fuzz["examples_limit"] == 2 and fuzz["task"] == "fuzz-durability-0" and fuzz["kind"] == "fuzz"


@pytest.mark.slow
def test_the_report_is_the_same_from_the_json_and_from_the_typed_documents(written: dict[str, ResultsDocument], tmp_path: Path) -> None:
    typed = list(written.values())
    as_json = [doc.to_json() for doc in typed]
    assert aggregate(typed) == aggregate(as_json)
    a, b = api.report(typed, str(tmp_path / "a")), api.report(as_json, str(tmp_path / "b"))
    for fmt in ("json", "md", "html"):
        assert Path(a.paths[fmt]).read_text(encoding="utf-8") == Path(b.paths[fmt]).read_text(encoding="utf-8")
    totals = counts(typed)
    assert isinstance(totals, CampaignCounts) and totals.explore_shards == 2 and totals.fuzz_shards == 2 and totals.mutants == 2
    examples = sum(doc.meta.examples or 0 for doc in typed if doc.meta is not None and doc.kind == "fuzz")
    assert totals.replayed == 1 and totals.fuzz_examples == {"durability": examples} and examples >= 4


def test_the_sample_report_renders_the_same_from_typed_documents(tmp_path: Path) -> None:
    docs = sample_results()
    typed = [structure(doc) for doc in docs]
    assert [unstructure(doc) for doc in typed] == docs  # older documents (cases listed, no format) too
    a, b = write_report(aggregate(docs), str(tmp_path / "a")), write_report(aggregate(typed), str(tmp_path / "b"))
    for fmt in ("json", "md", "html"):
        assert Path(a[fmt]).read_text(encoding="utf-8") == Path(b[fmt]).read_text(encoding="utf-8")


def test_a_document_listing_cases_still_counts_them() -> None:
    docs = sample_results()
    listed = docs[0]["cases"]
    tally = CaseTally()
    tally.add_all(listed)
    assert structure(docs[0]).tally() == tally and tally.cases == len(listed)
    both = structure({"cases": listed[:3], "case_tally": tally.to_json()}).tally()
    assert both.cases == len(listed) + 3


OK = {"format": "dsh-sim-results", "kind": "explore"}


def test_meta_keys_no_field_names_survive() -> None:
    raw = {"format": "dsh-sim-results", "kind": "fuzz", "bound": None, "config": {"compression": "none"}, "seeds": [1, 2]}
    doc = read_document({"meta": raw})
    assert doc.meta is not None and doc.meta.kind == "fuzz" and doc.meta.bound is None
    assert doc.meta.extra == {"bound": None, "config": {"compression": "none"}, "seeds": [1, 2]}
    assert doc.to_json() == {"meta": raw}
    assert unstructure(attrs.evolve(doc.meta, bound=3))["bound"] == 3  # a value set since wins over the null
    assert unstructure(Meta(seconds=12)) == {"seconds": 12}  # an integer stays one
    with pytest.raises(ValueError, match="Meta.extra holds bound"):  # a value goes in its field, not in extra
        Meta(extra={"bound": 3})


def test_meta_mutants_is_a_count_or_a_list_of_names() -> None:
    """A mutants document counts its mutants; a fuzz document lists the mutants it enabled."""
    count = read_document({"meta": {**OK, "kind": "mutants", "mutants": 3}})
    names = read_document({"meta": {**OK, "kind": "fuzz", "mutants": ["persist.ack_before_fsync"]}})
    assert count.meta is not None and count.meta.mutants == 3
    assert names.meta is not None and names.meta.mutants == ("persist.ack_before_fsync",)
    assert names.to_json()["meta"]["mutants"] == ["persist.ack_before_fsync"]
    with pytest.raises(DocumentError, match=r"^meta\.mutants must be an integer or a list of strings, got 'x'$"):
        structure({"meta": {**OK, "mutants": "x"}})
    with pytest.raises(DocumentError, match=r"^meta\.mutants\[1\] must be a string, got 2$"):
        structure({"meta": {**OK, "mutants": ["a", 2]}})


MALFORMED = [
    ([], "not a dsh-sim results document (meta.format != 'dsh-sim-results')"),
    ({"meta": {"format": "other"}}, "not a dsh-sim results document"),
    ({"meta": OK, "violations": {"invariant": "x"}}, "violations must be a list, got {'invariant': 'x'}"),
    ({"meta": OK, "violations": ["x"]}, "violations[0] must be an object, got 'x'"),
    ({"meta": OK, "violations": [{"message": "m"}]}, "violations[0].invariant is required"),
    ({"meta": OK, "violations": [{"invariant": 7}]}, "violations[0].invariant must be a string, got 7"),
    ({"meta": OK, "checked": {"seq_dense": True}}, "checked['seq_dense'] must be an integer, got True"),
    ({"meta": OK, "points": {"fs.write": {"hits": "3"}}}, "points['fs.write'].hits must be an integer, got '3'"),
    (
        {"meta": OK, "cells": {"barrier": {"r": {"kill": {"possible": 1.5}}}}},
        "cells['barrier']['r']['kill']['possible'] must be an integer",
    ),
    ({"meta": {**OK, "seconds": "soon"}}, "meta.seconds must be a number, got 'soon'"),
    ({"meta": OK, "case_tally": {"cases": "many"}}, "case_tally.cases must be an integer, got 'many'"),
    (
        {"meta": OK, "cases": [{"kind": "kill", "phase": "kill", "barrier": "b", "calls": [{"outcome": "lost"}]}]},
        "cases[0].calls[0].boundary is required",
    ),
    ({"meta": OK, "kill_matrix": [{"killed": True}]}, "kill_matrix[0].mutant is required"),
    ({"meta": OK, "determinism": [{"scenario": "s", "same": "yes"}]}, "determinism[0].same must be true or false, got 'yes'"),
    ({"meta": OK, "dsh_against": {"compared": [1]}}, "dsh_against.compared must be an integer, got [1]"),
    ({"meta": OK, "dsh_explore": [{"violations": [{"invariant": "x"}]}]}, "dsh_explore[0].violations[0].point is required"),
]


@pytest.mark.parametrize(("doc", "problem"), MALFORMED, ids=[p.split(" ")[0] for _, p in MALFORMED])
def test_a_malformed_document_is_refused_in_one_line_naming_the_file(doc: Any, problem: str, tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError) as refused:
        read([str(tmp_path)])
    assert str(refused.value).startswith(f"{path}: {problem}") and "\n" not in str(refused.value)
    with pytest.raises(InputError) as also:
        api.read_results([str(path)])
    assert str(also.value) == str(refused.value)


def test_a_malformed_document_given_in_memory_is_refused_too(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^a results document given: violations\[0\]\.invariant must be a string, got 1$"):
        api.report([{"meta": OK, "violations": [{"invariant": 1}]}], str(tmp_path))
    with pytest.raises(DocumentError, match="meta must be an object"):
        structure({"meta": "x"})


def test_merging_documents_adds_them_up() -> None:
    one = structure(
        {"meta": OK, "checked": {"a": 1}, "points": {"p": {"possible": 2, "explored": 1, "hits": 0}}, "violations": [{"invariant": "i"}]}
    )
    two = structure({"meta": OK, "checked": {"a": 2, "b": 1}, "points": {"p": {"hits": 4}}, "cells": {"barrier": {}}})
    merged = merge_documents([one, two], meta("explore", task="explore-0")).to_json()
    assert merged["checked"] == {"a": 3, "b": 1} and merged["points"] == {"p": {"possible": 2, "explored": 1, "hits": 4}}
    assert merged["cells"] == {"barrier": {}} and merged["determinism"] == [] and len(merged["violations"]) == 1
    assert merged["violations"][0] == {"invariant": "i", "message": None, "scenario": None, "source": None}
