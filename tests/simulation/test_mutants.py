"""Harness self-test, short version (CI): the committed corpus kills every durability mutant.

``dsh-sim mutants`` runs the full matrix (corpus, explore and fuzz, each timed); here the
deterministic part runs on every build, so a change that blinds the harness to a known bug
fails the suite.
"""

from __future__ import annotations

import os

import pytest

from dsh_sim.drivers.selftest import by_corpus, passing_corpus, run_mutants, summary
from dsh_sim.mutants import catalogue as mutants
from dsh_sim.mutants.catalogue import CATALOGUE
from dsh_sim.mutants.patch import Edit, StaleMutant, applied
from runtime.persistence import durable
from runtime.session.events import Event
from tests.support.paths import ROOT


@pytest.fixture(scope="module")
def corpus():
    return passing_corpus(os.path.join(ROOT, "scenarios", "starter"))


def test_the_catalogue_has_at_least_twelve_realistic_bugs():
    assert len(CATALOGUE) >= 12


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_the_corpus_kills_the_mutant(name, corpus):
    result = by_corpus(name, corpus)
    assert result.killed, f"{name} survived the corpus ({CATALOGUE[name]})"


def test_unknown_mutant_names_are_refused():
    with pytest.raises(KeyError, match="unknown mutant"), mutants.enabled(["no.such.bug"]):
        pass


def test_a_mutant_swaps_code_for_every_caller_and_restores_it():
    """Substitution reaches callers that imported the function by name, and is undone on exit."""
    from runtime.persistence import handles
    from runtime.session import repair

    events = [Event("turn/start", 0, 0, {"turn": 1}), Event("step/start", 1, 0, {"turn": 1, "step": 1})]
    clean = [e.seq for e in repair.interrupted_turn_closers(events)]
    original = repair.interrupted_turn_closers.__code__
    with mutants.enabled(["repair.seq_gap"]):
        assert [e.seq for e in repair.interrupted_turn_closers(events)] == [2, 4]
    assert [e.seq for e in repair.interrupted_turn_closers(events)] == clean == [2, 3]
    assert repair.interrupted_turn_closers.__code__ is original
    assert handles.append_durable.__code__ is durable.append_durable.__code__


def test_a_stale_edit_is_an_error_not_a_silent_no_op():
    stale = Edit("runtime.session.repair", "interrupted_turn_closers", "this text is not in the function", "x")
    with pytest.raises(StaleMutant, match="occurs 0 times"), applied([stale]):
        pass


def test_the_runtime_carries_no_mutant_switch():
    root = os.path.join(ROOT, "runtime")
    for dirpath, _, files in os.walk(root):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(dirpath, name), encoding="utf-8") as handle:
                    assert "mutant" not in handle.read(), os.path.join(dirpath, name)


@pytest.mark.slow
def test_the_kill_matrix_reports_fuzz_kills_with_a_shrunk_scenario(tmp_path):
    results = run_mutants(["checkpoint.no_flush_before_tool_body"], methods=("fuzz",), fuzz_budget=20, out_dir=str(tmp_path))
    row = results[0].row()
    assert row["killed"] and row["method"] == "fuzz" and row["invariant"] == "checkpoint_before_effect"
    assert row["scenario_steps"] is not None and row["scenario_steps"] <= 4
    assert summary(results)["survivors"] == []
