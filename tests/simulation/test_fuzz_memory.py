"""Bounded memory while fuzzing: cases are counted, not kept, and no example outlives its run.

The soak benchmark (benchmarks/bench_soak.py) shows the effect over ten minutes; these tests
pin each cause down in seconds.
"""

from __future__ import annotations

import gc
import os

import attrs
import pytest
from hypothesis.stateful import RuleBasedStateMachine

from dsh_sim.drivers.fuzz import fuzz
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.engine.machine import Simulation
from dsh_sim.evidence.coverage import aggregate
from dsh_sim.evidence.document import Meta, read_document, structure
from dsh_sim.evidence.oracles.whole_records import readable_records
from dsh_sim.evidence.results import explore_document, merge_documents
from dsh_sim.evidence.tally import CaseTally
from dsh_sim.scenario.files import load
from runtime.persistence import log_format
from tests.support.case_listing import explore_listing_cases
from tests.support.paths import ROOT

STARTER = os.path.join(ROOT, "scenarios", "starter")


def _live_simulations() -> int:
    gc.collect()
    return sum(isinstance(o, Simulation) for o in gc.get_objects())


@pytest.mark.slow
def test_no_simulation_outlives_the_fuzz_run(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Hypothesis keeps every state-machine class it ran, and each class held its last
    instance (a whole simulation): a class per batch leaked one simulation per batch."""
    before = _live_simulations()
    # as dsh_sim.api.fuzz runs it.  pytest's log capture keeps every record until the test ends,
    # from non-propagating loggers too (pytest 9 attaches its handler to them), so a record
    # whose arguments held an exception — a failed background write's, whose traceback reaches
    # the simulation — kept simulations alive: seven at 50 rules per example.  The runtime logs
    # the error's text (tests/test_write_behind.py checks the record).
    with capture_runtime_logs():
        run = fuzz("durability", budget=600, examples=60, seed=3, out_dir=str(tmp_path))  # several batches
    assert run.batches >= 2
    assert _live_simulations() == before
    cached = getattr(RuleBasedStateMachine, "_setup_state_per_class", {})
    assert not [cls for cls in cached if cls.__name__.endswith("Fuzz")]


@pytest.mark.slow
def test_fuzz_counts_cases_instead_of_keeping_them(tmp_path) -> None:  # type: ignore[no-untyped-def]
    run = fuzz("durability", budget=600, examples=30, seed=5, out_dir=str(tmp_path))
    assert run.recoveries > 0
    assert not any(
        isinstance(v, list) and v and isinstance(v[0], dict) for v in attrs.asdict(run, recurse=False).values()
    )  # no list of cases
    doc = run.document(Meta(format="dsh-sim-results", kind="fuzz")).to_json()
    assert "cases" not in doc and doc["case_tally"]["cases"] == run.recoveries
    assert read_document(doc).to_json() == doc


@pytest.mark.slow
def test_the_decode_memos_are_emptied_between_examples(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """They filled to capacity over minutes of fuzzing (tens of MB); one example's logs are never read by the next."""
    fuzz("durability", budget=600, examples=20, seed=5, out_dir=str(tmp_path))
    assert len(log_format.FRAMES) == 0 and len(log_format.LINES) == 0
    assert readable_records.cache_info().currsize == 0


@pytest.mark.slow
def test_a_tally_counts_what_the_list_of_cases_counted() -> None:
    """Aggregating tallies gives the report exactly what aggregating the cases gave."""
    explored, cases = explore_listing_cases(load(os.path.join(STARTER, "torn-zstd-checksum.json")))
    assert len(cases) > 100
    listed = aggregate([{"meta": {"kind": "explore"}, "cases": cases}])
    tally = CaseTally()
    tally.add_all(cases[:40])
    half = CaseTally()
    half.add_all(cases[40:])
    tally.merge(half)
    tallied = aggregate([{"meta": {"kind": "explore"}, "case_tally": tally.to_json()}])
    assert tallied == listed
    doc = explore_document(explored, "s.json", 1.0)
    keys = ("cases", "cases_by_source", "boundary_matrix", "barrier_matrix", "confusion", "torn_classes")
    assert {k: getattr(aggregate([doc]), k) for k in keys} == {k: getattr(listed, k) for k in keys}
    assert aggregate([merge_documents([doc, doc], Meta(kind="explore"))]).cases == 2 * len(cases)
    assert structure({"meta": {"kind": "explore"}, "cases": cases}).tally() == tally
    assert CaseTally.from_json(tally.to_json()).to_json() == tally.to_json()


@pytest.mark.slow
def test_finished_examples_are_collected_by_the_rules_they_ran(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A full collection after every COLLECT_AFTER_RULES rules of finished examples, not only
    after each batch: at 50 rules per example a batch's dead simulations raised the process's
    peak (a 10-minute soak grew 17.6 MB after minute 1, against +1.3 MB at 12 rules)."""
    from dsh_sim.engine import collector

    collections: list[int] = []
    real = gc.collect
    monkeypatch.setattr(gc, "collect", lambda *a: collections.append(1) or real(*a))
    with capture_runtime_logs():
        run = fuzz("durability", budget=600, examples=20, seed=5, out_dir=str(tmp_path))
    assert run.batches == 1 and run.steps > 2 * collector.COLLECT_AFTER_RULES
    # one after the batch, and at least one per COLLECT_AFTER_RULES rules before it
    assert len(collections) >= 1 + run.steps // collector.COLLECT_AFTER_RULES
