"""Writing scenarios by hand: the published schema and reference are current, every committed
scenario conforms to the schema, and a template from ``dsh-sim new`` replays as intended."""

from __future__ import annotations

import json
import os
from typing import Any

import jsonschema
import pytest

from dsh_sim import api
from dsh_sim.cli.main import main
from dsh_sim.engine.vocabulary import BOUNDARIES, BOUNDARY_ALIASES
from dsh_sim.errors import InputError
from dsh_sim.scenario.files import corpus, parse
from tests.support.paths import ROOT

DOCS = os.path.join(ROOT, "docs")


def read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def test_the_published_reference_and_schema_are_current() -> None:
    assert read(os.path.join(DOCS, "scenario-reference.md")) == api.reference(), (
        "regenerate: dsh-sim reference --out docs/scenario-reference.md"
    )
    assert json.loads(read(os.path.join(DOCS, "scenario.schema.json"))) == api.schema(), (
        "regenerate: dsh-sim schema --out docs/scenario.schema.json"
    )


@pytest.mark.slow
def test_every_committed_scenario_conforms_to_the_schema() -> None:
    validator = jsonschema.Draft202012Validator(api.schema())
    files, _ = corpus(os.path.join(ROOT, "scenarios"))
    for path in files:
        errors = list(validator.iter_errors(json.loads(read(path))))
        assert not errors, (path, errors[0].message)


def test_the_schema_refuses_a_match_key_the_point_never_carries() -> None:
    validator = jsonschema.Draft202012Validator(api.schema())
    obj = json.loads(read(os.path.join(ROOT, "scenarios", "starter", "boundary-2-3-pay.json")))
    obj["steps"][1]["args"]["rule"]["match"] = {"calid": "c1"}
    assert list(validator.iter_errors(obj))


@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("tool,crash", [("pay", "kill"), ("send_message", "power"), ("batch_pay", "kill"), ("shell", "power")])
def test_a_template_validates_and_replays_with_its_crash_fired(boundary: str, tool: str, crash: str) -> None:
    scenario = parse(json.loads(api.new_scenario(tool, boundary, crash)), "new.json")
    result = api.replay(scenario)
    assert result.ok, result.problems
    assert any(o.startswith("crashed:") for o in result.run.outcomes)


def test_a_boundary_may_be_spelled_as_the_file_names_spell_it(tmp_path: Any) -> None:
    for slug, boundary in BOUNDARY_ALIASES.items():
        assert api.new_scenario("pay", slug, "kill") == api.new_scenario("pay", boundary, "kill")
    assert main(["new", "--boundary", "3-4", "--out", str(tmp_path / "s.json")]) == 0
    assert main(["new", "--boundary", "3→4", "--out", str(tmp_path / "t.json")]) == 0
    assert (tmp_path / "s.json").read_bytes() == (tmp_path / "t.json").read_bytes()


def test_validate_lists_every_problem_with_its_path(tmp_path: Any) -> None:
    obj = json.loads(api.new_scenario())
    obj["steps"][0] = {"op": "advance", "args": {"secs": 1}}
    obj["expect"] = {"outcome": "violation", "invariant": "verdict_sound"}
    path = tmp_path / "two.json"
    path.write_text(json.dumps(obj))
    result = api.validate(str(path))
    assert not result.ok and len(result.problems) == 2
    assert any("$.steps[0].args: unknown key 'secs'" in p for p in result.problems)
    assert any("$.expect.invariant: unknown invariant 'verdict_sound'; did you mean 'verdict_soundness'?" in p for p in result.problems)


def test_the_committed_corpus_leaves_untracked_findings_out_and_names_them(tmp_path: Any) -> None:
    for directory, name in (("starter", "a.json"), ("regressions", "b.json"), ("found", "c.json"), ("found", "d.json")):
        (tmp_path / directory).mkdir(exist_ok=True)
        (tmp_path / directory / name).write_text("{}")
    files, skipped = corpus(str(tmp_path))
    assert sorted(os.path.basename(f) for f in files) == ["a.json", "b.json"]
    assert skipped == [(str(tmp_path / "found"), 2)]


@pytest.mark.parametrize(
    ("steps", "problem"),
    [
        (
            [{"op": "boot", "args": {}}, {"op": "seed_v0", "args": {}}],
            "seed_v0 after $.steps[0] (boot): it must come before the first boot",
        ),
        ([{"op": "seed_v0", "args": {}}, {"op": "seed_v0", "args": {}}, {"op": "boot", "args": {}}], "seed_v0 again"),
    ],
)
def test_a_misplaced_seed_v0_is_refused_at_load_not_failed_at_replay(tmp_path: Any, steps: list[Any], problem: str) -> None:
    """Held-out probe: these validated, then failed replay with exit 1 ("step 1 cannot run") —
    an invalid scenario reported like a failed check instead of refused input."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"format": "dsh-sim-scenario", "version": 1, "seed": 1, "machine": "storage", "steps": steps}))
    result = api.validate(str(path))
    assert not result.ok and any(problem in line for line in result.problems), result.problems
    with pytest.raises(InputError, match="seed_v0"):
        api.load(str(path))


def test_new_writes_a_name_from_argv_that_is_not_utf8_and_never_overwrites(tmp_path: Any) -> None:
    """A name typed as bytes that are not UTF-8 reaches Python as a lone surrogate (``\\udcff``):
    ``new`` died writing it and left an empty file that a retry then refused to replace."""
    out = tmp_path / "n.json"
    assert main(["new", "--name", "n\udcff", "--out", str(out)]) == 0
    assert json.loads(out.read_text(encoding="utf-8"))["name"] == "n\udcff"
    assert api.validate(str(out)).ok
    before = out.read_bytes()
    assert main(["new", "--out", str(out)]) == 2  # already exists: one line, nothing replaced
    assert out.read_bytes() == before
