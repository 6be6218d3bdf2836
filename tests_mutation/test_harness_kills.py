"""The mutation test command: dsh-sim's own methods as pytest items (not in the default suite).

Run by ``dsh-sim mutants --tool`` (see :mod:`dsh_sim.mutation.tool`); by hand:
``pytest -x -q tests_mutation``.  Every item passes on the runtime as shipped; an item fails
when an invariant or oracle fails (progress included: ``turn_progress``), or the harness breaks
under a mutant (the selection and the rules are in
:mod:`dsh_sim.mutation.harness`).  One item per scenario, so a tool with
per-test selection (mutmut) runs only the scenarios that reach the mutated function.
"""

from __future__ import annotations

import pytest

from dsh_sim.mutation import harness

CORPUS = harness.corpus()


@pytest.mark.parametrize("scenario", CORPUS, ids=[s.name for s in CORPUS])
def test_replay(scenario):
    """Every invariant and oracle holds (safety and progress)."""
    harness.check_replay(scenario)


@pytest.mark.parametrize(("machine", "examples", "seed"), harness.FUZZ_RUNS, ids=[m for m, _, _ in harness.FUZZ_RUNS])
def test_fuzz(machine, examples, seed):
    harness.check_fuzz(machine, examples, seed)


@pytest.mark.parametrize("scenario", harness.explore_set(CORPUS), ids=list(harness.EXPLORE_SET))
def test_explore(scenario):
    harness.check_explore(scenario)
