"""``dsh-sim fuzz --steps``: the rules per example are the caller's to choose, and recorded.

The fuzz profile runs 50 rules per example (benchmarks/README.md, "sixth pass": it finds the
catalogue's mutants in no more CPU than 12, and misses fewer); a user reproducing an older
run, or fuzzing shorter histories on purpose, sets the count.
"""

from __future__ import annotations

import pytest

from dsh_sim import api
from dsh_sim.drivers import profiles
from dsh_sim.drivers.fuzz import fuzz
from dsh_sim.engine.config import SimConfig
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.errors import InputError
from dsh_sim.evidence.document import Meta


def _longest_example(tmp_path, steps: int | None) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """(rules per example recorded by the run, most steps any example took)."""
    longest = 0
    from dsh_sim.drivers import fuzz as fuzz_driver

    original = fuzz_driver._machine_class

    def machine_class(machine, config, run):  # type: ignore[no-untyped-def]
        cls = original(machine, config, run)
        teardown = cls.teardown

        def measured(self):  # type: ignore[no-untyped-def]
            nonlocal longest
            longest = max(longest, len(self.steps))
            teardown(self)

        cls.teardown = measured
        return cls

    fuzz_driver._machine_class = machine_class
    try:
        with capture_runtime_logs():
            run = fuzz("durability", seed=4, examples=12, budget=1e9, out_dir=str(tmp_path), steps=steps)
    finally:
        fuzz_driver._machine_class = original
    assert run.document(Meta()).to_json()["meta"]["max_rules_per_example"] == run.rules_per_example
    return run.rules_per_example, longest


def test_steps_bound_every_example_and_are_recorded(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rules, longest = _longest_example(tmp_path, 3)
    assert rules == 3
    # the machine's first boot is one recorded step besides the rules Hypothesis draws
    assert 0 < longest <= 3 + 1


@pytest.mark.slow
def test_the_profile_count_is_the_default(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rules, longest = _longest_example(tmp_path, None)
    assert rules == profiles.fuzz_settings().stateful_step_count == 50
    assert longest > 3 + 1  # longer examples than the bounded run above could hold


@pytest.mark.parametrize("steps", [0, -1])
def test_a_count_below_one_is_refused_in_one_line(tmp_path, steps: int) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=r"^fuzz: steps must be at least 1, got -?\d+$"):
        api.fuzz(steps=steps, examples=1, found_dir=str(tmp_path))


def test_the_command_line_passes_the_count_on_and_reports_it(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    from dsh_sim.cli.main import main

    results = tmp_path / "r.json"
    code = main(
        [
            "fuzz",
            "--steps",
            "3",
            "--examples",
            "2",
            "--seed",
            "4",
            "--found-dir",
            str(tmp_path / "found"),
            "--results",
            str(results),
            "--json",
        ]
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["max_rules_per_example"] == 3
    assert json.loads(results.read_text())["meta"]["max_rules_per_example"] == 3


def test_the_help_names_the_profile_count() -> None:
    from dsh_sim.cli.main import build_parser

    fuzz_parser = build_parser()._subparsers._group_actions[0].choices["fuzz"]  # type: ignore[union-attr]
    (steps,) = [a for a in fuzz_parser._actions if "--steps" in a.option_strings]
    assert f", {profiles.fuzz_settings().stateful_step_count})" in (steps.help or "")


def test_a_found_scenario_records_the_count(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from dsh_sim.drivers.fuzz import scenario_from

    class Instance:
        seed = 9
        steps = ()
        sim = None

    scenario = scenario_from("durability", Instance(), "eventually_durable", SimConfig(), (), 4, 7)
    assert scenario.origin["max_rules_per_example"] == 7 and "at most 7 rules" in scenario.description
