"""Fuzz judges each example's graceful stop, as replay judges a scenario's.

A fuzz example ends in the machine's teardown, which stops the simulated process gracefully.
Before the teardown was judged, a bug that shows only there — a stop that loses what the
session holds — passed every example: the invariants run after each rule, and the stop comes
after the last one.  The bug used here stops the runtime and the host's commands at once
(see ``tests/test_teardown.py``): a turn in flight loses its closing events.

About a quarter of the examples end when Hypothesis runs out of data for them: their teardown
runs while Hypothesis' ``StopTest`` unwinds, and Hypothesis discards the example with any
error the teardown raises.  Those stops are judged too, and their failures reach the driver
another way (``SimulationMachine.unreported``).
"""

from __future__ import annotations

import pytest

from dsh_sim.drivers.fuzz import fuzz
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.mutants.patch import Edit, applied

AT_ONCE = Edit(
    "dsh_sim.engine.process",
    "SimProcess._driver",
    "                        commands.cancel_scope.cancel()\n                        break\n",
    "                        nursery.cancel_scope.cancel()\n                        break\n",
)
UNREPORTED_STOP = Edit(
    "dsh_sim.drivers.fuzz", "fuzz", "                    if cls.unreported is not None:", "                    if False:"
)
UNJUDGED_STOP = Edit(
    "dsh_sim.drivers.machines.base", "SimulationMachine.teardown", "        if not judged:\n            return\n", "        return\n"
)


def _found(tmp_path, *edits: Edit, seed: int = 2, saved: list | None = None):  # type: ignore[no-untyped-def]
    def keep(scenario):  # type: ignore[no-untyped-def]
        if saved is not None:
            saved.append(scenario)
        return str(tmp_path / f"{scenario.name}.json")

    with capture_runtime_logs(), applied(list(edits)):
        # 12 rules per example, the fuzz profile's count when these seeds were chosen: at seed 11 the
        # only failing stop is in an example Hypothesis discards (the profile's 50 draws others;
        # seeds are re-chosen when the draw changes — at 6bebc92 it was seed 8, at c31625a 24, then
        # 22; the draw moved again with the route's generators: gates and guards that raise or
        # answer late, approval timing, cancellations).  The draw also follows the literals of the
        # simulator's code (Hypothesis' constants pool): at 2f56b7a seed 1 stopped finding the bug
        # in 150 examples while seeds 2-6 and 8 found it, so the default is 2
        run = fuzz("durability", seed=seed, examples=150, budget=1e9, on_found=keep, minimize_budget=0.0, shrink_budget=2.0, steps=12)
    return run


@pytest.mark.slow
def test_a_stop_that_loses_the_session_is_found(tmp_path) -> None:  # type: ignore[no-untyped-def]
    run = _found(tmp_path, AT_ONCE)
    assert run.found is not None, "fuzz ran 150 examples of a runtime whose graceful stop loses events and found nothing"
    assert run.found.invariant in ("eventually_durable", "log_grammar"), run.found.message


@pytest.mark.slow
def test_the_same_examples_miss_it_when_the_stop_is_not_judged(tmp_path) -> None:  # type: ignore[no-untyped-def]
    run = _found(tmp_path, AT_ONCE, UNJUDGED_STOP)
    assert run.found is None, run.found.message if run.found else ""


@pytest.mark.slow
def test_the_correct_stop_passes_the_same_examples(tmp_path) -> None:  # type: ignore[no-untyped-def]
    run = _found(tmp_path)
    assert run.found is None, run.found.message if run.found else ""
    assert run.checked.get("eventually_durable", 0) > 0


@pytest.mark.slow
def test_a_failed_stop_of_an_example_hypothesis_discards_is_found_and_replays(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """At seed 11 the only example of the 150 whose stop loses events is one Hypothesis ran out
    of data for: found through ``unreported``, saved, and its replay fails the same way."""
    saved: list = []
    with applied([AT_ONCE]):
        run = _found(tmp_path, seed=11, saved=saved)
        assert run.found is not None, "the failed stop of a discarded example went unreported"
        assert run.found.invariant == "eventually_durable", run.found.message
        (scenario,) = saved
        result, _ = run_scenario(scenario)
    assert [v.invariant for v in result.violations][:1] == ["eventually_durable"]


@pytest.mark.slow
def test_the_same_examples_miss_it_when_the_discarded_stop_is_not_reported(tmp_path) -> None:  # type: ignore[no-untyped-def]
    run = _found(tmp_path, AT_ONCE, UNREPORTED_STOP, seed=11)
    assert run.found is None, run.found.message if run.found else ""


@pytest.mark.slow
def test_a_machine_run_outside_the_driver_keeps_no_unreported_simulation() -> None:
    """Run directly (as the machine tests run it), nobody reads ``unreported``: the class must
    not keep a discarded example's simulation for the rest of the process.  At seed 11 the
    only failing stop of 150 examples of 12 rules is in a discarded one (a class that kept it
    would hold it)."""
    from hypothesis import Phase, settings
    from hypothesis.stateful import run_state_machine_as_test

    from dsh_sim.drivers import profiles
    from dsh_sim.drivers.constants import fixed_constants
    from dsh_sim.drivers.machines.durability import DurabilityMachine

    class Direct(DurabilityMachine):
        pass

    class Keeping(DurabilityMachine):
        keeps_unreported = True

    for cls in (Direct, Keeping):
        cls._hypothesis_internal_use_seed = 11  # type: ignore[attr-defined]
        with capture_runtime_logs(), applied([AT_ONCE]), fixed_constants():
            run_state_machine_as_test(cls, settings=settings(profiles.fuzz_settings(12), max_examples=150, phases=(Phase.generate,)))
    assert Keeping.unreported is not None  # the discarded failing stop is there
    assert Direct.unreported is None
    Keeping.unreported = None
