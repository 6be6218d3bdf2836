"""Edge values of JSON in event data: the spec refuses some at append and the rest must read
back exactly (``lossless_refused``, ``eventually_durable``, the recovery judges).

Written because a slip in the runtime's write-side check — forgetting negative zero, while the
read side still refuses it — passed every method (round 4 of bugs written apart from the
harness): no event the harness appended ever held anything but short text and small integers.
"""

from __future__ import annotations

import os

import pytest

from dsh_sim.drivers.fuzz import fuzz
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.engine.json_values import EDGE_VALUES, REFUSAL_TEXT
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load
from runtime.session.lossless import lossless_copy
from tests.support.paths import ROOT

EDGES = os.path.join(ROOT, "scenarios", "regressions", "append-edge-values-of-json.json")
FORGETS_NEGATIVE_ZERO = Edit(
    "runtime.session.lossless",
    "_check_leaf",
    "        if value == 0.0 and math.copysign(1.0, value) < 0:\n",
    "        if False:\n",
)
REFUSES_SUBNORMALS = Edit(
    "runtime.session.lossless",
    "_check_leaf",
    "        if not math.isfinite(value):\n",
    "        if not math.isfinite(value) or 0 < abs(value) < 1e-300:\n",
)
REFUSES_LONE_SURROGATES = Edit(
    "runtime.session.lossless", "holds_split_pair", "        return _SPLIT_PAIR.search(text) is not None\n", "        return True\n"
)
ACCEPTS_SPLIT_PAIRS = Edit(
    "runtime.session.lossless", "holds_split_pair", "        return _SPLIT_PAIR.search(text) is not None\n", "        return False\n"
)
WRITES_SURROGATES_RAW = Edit(
    "runtime.session.lossless",
    "encode_utf8",
    '    return text.encode("utf-8", "backslashreplace")\n',
    '    return text.encode("utf-8", "surrogatepass")\n',
)


@pytest.mark.parametrize("name", list(EDGE_VALUES))
def test_the_catalogue_says_what_the_shipped_runtime_does(name):
    edge = EDGE_VALUES[name]
    if edge.refused:
        with pytest.raises(TypeError, match=REFUSAL_TEXT):
            lossless_copy(edge.make())
    else:
        lossless_copy(edge.make())


def test_every_edge_value_is_judged():
    result, _ = run_scenario(load(EDGES))
    assert result.violations == () and result.not_applicable is None
    assert result.stats["checked"]["lossless_refused"] == len(EDGE_VALUES)
    assert result.outcomes.count("error:TypeError") == sum(e.refused for e in EDGE_VALUES.values())


@pytest.mark.parametrize(
    ("slip", "invariant"),
    [
        (FORGETS_NEGATIVE_ZERO, "lossless_refused"),
        (REFUSES_SUBNORMALS, "lossless_refused"),
        (REFUSES_LONE_SURROGATES, "lossless_refused"),
        (ACCEPTS_SPLIT_PAIRS, "lossless_refused"),
        (WRITES_SURROGATES_RAW, "format_conformance"),
    ],
    ids=["stores-minus-zero", "refuses-subnormal", "refuses-lone-surrogates", "stores-a-split-pair", "writes-surrogates-raw"],
)
def test_a_check_that_refuses_the_wrong_values_is_caught(slip, invariant):
    with capture_runtime_logs(), applied([slip]):
        result, _ = run_scenario(load(EDGES))
    assert [v.invariant for v in result.violations][:1] == [invariant], result.violations


@pytest.mark.slow
def test_the_storage_fuzz_finds_a_check_that_forgets_negative_zero(tmp_path):
    with capture_runtime_logs(), applied([FORGETS_NEGATIVE_ZERO]):
        run = fuzz("storage", budget=1e9, examples=200, seed=1, out_dir=str(tmp_path), minimize_budget=0.0, shrink_budget=2.0)
    assert run.found is not None and run.found.invariant in ("lossless_refused", "format_conformance"), run.found


def test_the_dsh_differential_compares_numbers_as_javascript_holds_them():
    """DSH (JavaScript) reads ``0.0`` as ``0``: one number.  Without this the differential
    reported every recovery of ``append-edge-values-of-json`` as a difference."""
    from dsh_sim.dsh.normalize import canonical

    assert canonical({"v": [0.0, 2.0, -3.0]}) == canonical({"v": [0, 2, -3]})
    assert canonical([1e20]) == canonical([10**20])  # JavaScript writes 1e20 without an exponent
    assert canonical([0.5]) != canonical([0]) and canonical([True]) != canonical([1]) and canonical([1e21]) != canonical([10**21])


AT_HANDLE = os.path.join(ROOT, "scenarios", "regressions", "append-edge-values-at-the-write-handle.json")
# the persistence seam's own walk (a caller's event is not copied: the handle walks it), found
# surviving by mutmut: the harness appended only through Session.append
HANDLE_WALK_SKIPPED = Edit(
    "runtime.session.lossless", "check_lossless", "            _walk_container(value, kind, set())\n", "            pass\n"
)
HANDLE_KEYS_UNCHECKED = Edit(
    "runtime.session.lossless", "_walk_container", "            if not key.isascii():\n", "            if key.isascii():\n"
)


def test_every_edge_value_is_judged_at_the_write_handle_too():
    result, _ = run_scenario(load(AT_HANDLE))
    assert result.violations == () and result.not_applicable is None
    refused = sum(e.refused for e in EDGE_VALUES.values())
    assert result.stats["checked"]["lossless_refused"] == refused + 3  # every refused value, three accepted ones
    assert result.outcomes.count("error:TypeError") == refused


@pytest.mark.parametrize("slip", [HANDLE_WALK_SKIPPED, HANDLE_KEYS_UNCHECKED], ids=["walk-skipped", "keys-unchecked"])
def test_a_write_handle_that_checks_less_is_caught(slip):
    with capture_runtime_logs(), applied([slip]):
        result, _ = run_scenario(load(AT_HANDLE))
    assert [v.invariant for v in result.violations][:1] == ["lossless_refused"], result.violations
