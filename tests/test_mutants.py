"""Harness self-test, short version (CI): the committed corpus kills every durability mutant.

``dsh-sim mutants`` runs the full matrix (corpus, explore and fuzz, each timed); here the
deterministic part runs on every build, so a change that blinds the harness to a known bug
fails the suite.
"""

from __future__ import annotations

import os

import pytest

from dsh_sim.drivers.selftest import by_corpus, passing_corpus, run_mutants, summary
from runtime import mutants
from runtime.mutants import CATALOGUE


@pytest.fixture(scope="module")
def corpus():
    return passing_corpus(os.path.join(os.path.dirname(__file__), "..", "scenarios", "starter"))


def test_the_catalogue_has_at_least_twelve_realistic_bugs():
    assert len(CATALOGUE) >= 12


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_the_corpus_kills_the_mutant(name, corpus):
    result = by_corpus(name, corpus)
    assert result.killed, f"{name} survived the corpus ({CATALOGUE[name]})"


def test_mutants_are_off_by_default_and_refuse_unknown_names():
    assert mutants.active() == frozenset()
    with pytest.raises(KeyError, match="unknown mutant"):
        with mutants.enabled(["no.such.bug"]):
            pass


def test_the_kill_matrix_reports_fuzz_kills_with_a_shrunk_scenario(tmp_path):
    results = run_mutants(["checkpoint.no_flush_before_tool_body"], methods=("fuzz",), fuzz_budget=20, out_dir=str(tmp_path))
    row = results[0].row()
    assert row["killed"] and row["method"] == "fuzz" and row["invariant"] == "checkpoint_before_effect"
    assert row["scenario_steps"] is not None and row["scenario_steps"] <= 4
    assert summary(results)["survivors"] == []
