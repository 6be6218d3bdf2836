"""A tool's classifier may answer in its own words: the runtime runs a call in parallel only when
the answer is exactly ``True``, for the arguments parsed as the spec says (empty text is ``{}``;
text that is not JSON stays text).  ``lookup_payment`` answers ``True`` for an object and echoes
anything else, so the scheduler judge sees both slips the corpus could not show before."""

from __future__ import annotations

import os

import pytest

from dsh_sim.adapters.world_tools import declared_concurrency_safe
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.evidence.oracles.schedule import runs_alone
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load
from tests.support.paths import ROOT

SCENARIO = os.path.join(
    ROOT,
    "scenarios",
    "regressions",
    "tools-classifier-answers-in-its-own-words.json",
)

TRUTHY = Edit(
    "runtime.tools.registry",
    "ToolRegistry.execution_mode",
    'return "parallel" if tool.is_concurrency_safe(arguments) is True else "exclusive"',
    'return "parallel" if tool.is_concurrency_safe(arguments) else "exclusive"',
)
# a careless colleague's edit: only the error a missing argument raises means "run alone"
KEYERROR_ONLY = Edit(
    "runtime.tools.registry",
    "ToolRegistry.execution_mode",
    '        except Exception:\n            return "exclusive"',
    '        except KeyError:\n            return "exclusive"',
)
EMPTY_AS_NONE = Edit(
    "runtime.tools.registry", "parse_arguments", '    if raw == "":\n        return {}\n', '    if raw == "":\n        return None\n'
)


def test_the_lookup_classifier_answers_with_what_it_got():
    assert declared_concurrency_safe("lookup_payment", {"key": "c1"}) is True
    assert declared_concurrency_safe("lookup_payment", {}) is True
    assert declared_concurrency_safe("lookup_payment", "lookup c0") == "lookup c0"
    with pytest.raises(TypeError):
        declared_concurrency_safe("get_balance", "balance of bob")
    assert (
        runs_alone("lookup_payment", "lookup c0")
        and not runs_alone("lookup_payment", "")
        and not runs_alone("lookup_payment", '{"key":"c1"}')
    )


def test_the_shipped_scheduler_holds():
    result, _ = run_scenario(load(SCENARIO))
    assert result.violations == () and result.stats["checked"]["tool_schedule"] > 0


@pytest.mark.parametrize(
    ("slip", "said"),
    [
        (TRUTHY, "get_balance call c3 started while the exclusive call c2 (lookup_payment) was running"),
        (EMPTY_AS_NONE, "the concurrency-safe calls ['c4', 'c5', 'c6'] run in parallel, but ['c5', 'c6'] started only after"),
    ],
    ids=["truthy-answer-runs-parallel", "empty-arguments-parsed-as-none"],
)
def test_each_slip_is_named_by_the_schedule_judge(slip, said):
    with applied([slip]):
        result, _ = run_scenario(load(SCENARIO))
    assert {v.invariant for v in result.violations} == {"tool_schedule"}
    assert said in result.violations[0].message


def test_a_registry_that_runs_alone_only_on_a_key_error_fails_the_turn():
    """get_balance's classifier, handed raw text, raises a TypeError: the call must still run alone."""
    with applied([KEYERROR_ONLY]):
        result, _ = run_scenario(load(SCENARIO))
    assert {"turn_progress", "log_grammar"} <= {v.invariant for v in result.violations}
