"""A post-execute plugin that replaces content (config ``post_execute_note``): the log must
carry the replacement for every result that passed post-execute, and no final result has it.
Without such a plugin the registry's content replacement is never exercised."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_sim.drivers.replay import run_scenario
from dsh_sim.evidence.oracles.spec_log import read_recoverable
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load
from tests.support.paths import ROOT

SCENARIO = Path(ROOT) / "scenarios" / "regressions" / "tools-post-execute-replaces-content.json"
REPLACE = "        return attrs.evolve(result, content=verdict.content)"


def test_an_error_result_that_passed_post_execute_carries_the_replacement_too():
    """A careless colleague applies replacement content to successes only: the rejected
    message's denial passed post-execute and must carry it as well."""
    successes_only = Edit(
        "runtime.tools.registry",
        "ToolRegistry.finalize",
        "        if isinstance(verdict, Accept) and verdict.content is not None:",
        "        if isinstance(verdict, Accept) and verdict.content is not None and not result.is_error:",
    )
    with applied([successes_only]):
        result, _ = run_scenario(load(str(SCENARIO)))
    assert "post_execute_once" in {v.invariant for v in result.violations}


def test_the_shipped_pipeline_writes_the_replacement():
    result, sim = run_scenario(load(str(SCENARIO)))
    assert not result.violations
    log = read_recoverable(sim.disk.read_path(sim.config.log_path), sim.config.compression)
    assert any("[noted by post-execute]" in str(record) for record in log.records)


@pytest.mark.parametrize(
    ("replacement", "invariant"),
    [
        ("        return attrs.evolve(result, )", "post_execute_once"),  # the replacement is dropped
        ("        return attrs.evolve(content=verdict.content)", "log_grammar"),  # TypeError: the calls get no result
    ],
    ids=["replacement-ignored", "replacement-raises"],
)
def test_a_pipeline_that_loses_the_replacement_is_caught(replacement, invariant):
    with applied([Edit("runtime.tools.registry", "ToolRegistry.finalize", REPLACE, replacement)]):
        result, _ = run_scenario(load(str(SCENARIO)))
    assert invariant in {v.invariant for v in result.violations}
