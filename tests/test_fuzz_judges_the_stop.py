"""Fuzz judges each example's graceful stop, as replay judges a scenario's.

A fuzz example ends in the machine's teardown, which stops the simulated process gracefully.
Before the teardown was judged, a bug that shows only there — a stop that loses what the
session holds — passed every example: the invariants run after each rule, and the stop comes
after the last one.  The bug used here stops the runtime and the host's commands at once
(see ``tests/test_teardown.py``): a turn in flight loses its closing events.
"""

from __future__ import annotations

from dsh_sim.drivers.fuzz import fuzz
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.mutation.patch import Edit, applied

AT_ONCE = Edit(
    "dsh_sim.engine.process",
    "SimProcess._driver",
    "                        commands.cancel_scope.cancel()\n                        break\n",
    "                        nursery.cancel_scope.cancel()\n                        break\n",
)
UNJUDGED_STOP = Edit(
    "dsh_sim.drivers.machines.base", "SimulationMachine.teardown", "        if judged:\n            self.no_violation()\n", ""
)


def _found(tmp_path, *edits: Edit):  # type: ignore[no-untyped-def]
    saved: list[str] = []

    def keep(scenario):  # type: ignore[no-untyped-def]
        saved.append(scenario.name)
        return str(tmp_path / f"{scenario.name}.json")

    with capture_runtime_logs(), applied(list(edits)):
        run = fuzz("durability", seed=3, examples=150, budget=1e9, on_found=keep, minimize_budget=0.0, shrink_budget=2.0)
    return run


def test_a_stop_that_loses_the_session_is_found(tmp_path) -> None:  # type: ignore[no-untyped-def]
    run = _found(tmp_path, AT_ONCE)
    assert run.found is not None, "fuzz ran 150 examples of a runtime whose graceful stop loses events and found nothing"
    assert run.found.invariant in ("eventually_durable", "log_grammar"), run.found.message


def test_the_same_examples_miss_it_when_the_stop_is_not_judged(tmp_path) -> None:  # type: ignore[no-untyped-def]
    run = _found(tmp_path, AT_ONCE, UNJUDGED_STOP)
    assert run.found is None, run.found.message if run.found else ""


def test_the_correct_stop_passes_the_same_examples(tmp_path) -> None:  # type: ignore[no-untyped-def]
    run = _found(tmp_path)
    assert run.found is None, run.found.message if run.found else ""
    assert run.checked.get("eventually_durable", 0) > 0
