"""The published DSH route under the simulator (``--runtime dsh-route``): the host composes DSH's
own plugins, crashes them from outside, recovers with DSH's repair; the judges and the route
differential catch DSH behaviour broken from outside; runs are deterministic; exploration finds
DSH-8 and its standalone reproduction reproduces it on the real file system."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from dsh_sim import api
from dsh_sim.cli.main import main
from dsh_sim.dsh.install import Installation
from dsh_sim.dsh.route.explore import explore_route
from dsh_sim.dsh.route.findings import ROUTE_FINDINGS
from dsh_sim.dsh.route.program import Skip, translate
from dsh_sim.dsh.route.run import run_route
from dsh_sim.scenario.files import load
from tests.support.dsh import dsh_install

pytestmark = pytest.mark.dsh
__all__ = ["dsh_install"]

PLUGINS = Path(__file__).parent / "route_plugins"
STARTER = Path("scenarios/starter")
CRASH_3_4 = str(STARTER / "boundary-3-4-pay.json")  # the payment applied, its result not yet durable
CRASH_2_3 = str(STARTER / "boundary-2-3-pay.json")  # the payment's call durable, the request not yet sent


def test_the_host_runs_the_pinned_route(dsh_install: Installation) -> None:
    program = translate(load(CRASH_3_4))
    assert not isinstance(program, Skip)
    run = run_route(dsh_install, program)
    for package in ("dsh-agent-loop", "dsh-session-checkpoint-policy", "dsh-tools", "dsh-user-approval", "dsh-llm", "dsh-agent"):
        assert run.versions[f"@deepseek-ai/{package}"] == "0.1.0-rc.8"
    # a real crash at the world's response, a fresh process that resumed with DSH's repair
    assert [c.point for c in run.crashes] == ["world.respond"]
    assert len(run.recoveries) == 1 and run.recoveries[0].error is None
    assert [(e.service, e.call_id, e.key, e.applied) for e in run.ledger if e.applied] == [("payments", "c1", "c1", True)]


@pytest.mark.parametrize(
    ("option", "plugin", "scenario", "invariant", "aspect"),
    [
        ("policy", "flush-after-body.mjs", CRASH_3_4, "checkpoint_before_effect", "verdicts"),
        ("extra", "repair-not-started.mjs", CRASH_3_4, "verdict_soundness", "verdicts"),
        ("extra", "repair-not-started.mjs", CRASH_2_3, "verdict_soundness", "verdicts"),
        ("tools", "tools-drop-key.mjs", CRASH_3_4, "world_agreement", "ledger"),
    ],
)
def test_broken_dsh_behaviour_is_caught_by_a_named_invariant_and_the_differential(
    dsh_install: Installation, option: str, plugin: str, scenario: str, invariant: str, aspect: str
) -> None:
    path = str(PLUGINS / plugin)
    broken = api.route_replay([scenario], **{option: [path] if option == "extra" else path}).results[0]
    assert not broken.ok
    assert invariant in {v.invariant for v in broken.violations}, [v.line() for v in broken.violations]
    if plugin == "repair-not-started.mjs":  # the repair is not the spec's closers either
        assert "reference_model" in {v.invariant for v in broken.violations}
    assert broken.comparison is not None and aspect in {d.aspect for d in broken.comparison.unexplained}
    # the same scenario on DSH as published: every invariant holds and dsh-sim agrees
    clean = api.route_replay([scenario]).results[0]
    assert clean.ok and not clean.violations and clean.comparison is not None and not clean.comparison.differences


@pytest.mark.slow
def test_the_corpus_on_the_route_agrees_with_dsh_sim(dsh_install: Installation) -> None:
    replays = api.route_replay([str(STARTER), "scenarios/regressions"])
    summary = replays.summary()
    failed = [(r.path, r.error, [v.line() for v in r.violations], r.run.unfired if r.run else ()) for r in replays.results if not r.ok]
    assert not failed, failed
    assert summary["ran"] >= 45 and summary["compared"] >= 44, summary
    assert summary["unexplained_differences"] == 0
    # every difference there is is ROUTE-1 (reads by parallel calls), each skip has its reason
    assert {d.finding for r in replays.results if r.comparison for d in r.comparison.differences} <= {"ROUTE-1"}
    assert all(reason for reason in summary["skip_reasons"])
    # the expected violation of the policy-less scenario is reproduced on DSH as on dsh-sim
    unsafe = next(r for r in replays.results if r.name == "no-checkpoint-policy-unsafe")
    assert unsafe.expected == "verdict_soundness" and unsafe.ok


def test_a_scenario_the_route_cannot_express_is_skipped_with_its_reason(dsh_install: Installation) -> None:
    result = api.route_replay([str(STARTER / "two-writers-storage.json"), str(STARTER / "sandbox-unavailable.json")])
    assert [r.skipped for r in result.results] == [
        "machine 'storage' drives the storage API, not the route",
        "point sandbox.confine has no counterpart on the DSH route",
    ]
    assert not result.failed


@pytest.mark.slow
def test_one_seed_and_one_scenario_give_the_same_bytes_in_new_processes(dsh_install: Installation) -> None:
    check = api.route_determinism(CRASH_3_4)
    assert check.same, (check.digests, check.sessions)


@pytest.mark.slow
def test_exploration_finds_dsh_8_and_its_reproduction_reproduces_it(dsh_install: Installation, tmp_path: Path) -> None:
    program = translate(load(CRASH_2_3))
    assert not isinstance(program, Skip)
    result, points = explore_route(dsh_install, program, crash="kill")
    assert result.states == len(points) and result.recoveries > 10
    assert result.verdicts["TOOL_OUTCOME_UNKNOWN"] > 0 and result.verdicts["TOOL_NOT_STARTED"] > 0
    # the only violations: kills that left the log's name (between the first publication's link and
    # its directory fsync) or its last batch (between write and fsync) unsynced — DSH-8
    assert result.violations and {(v.invariant, v.finding) for v in result.violations} == {("eventually_durable", "DSH-8")}
    assert {v.name for v in result.violations} == {"fs.fsync_dir", "fs.fsync"}
    repro = ROUTE_FINDINGS["DSH-8"].repro_path()
    assert repro is not None
    proc = subprocess.run(
        [dsh_install.node.node, repro, dsh_install.home], capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "OBSERVED (DSH-8)" in proc.stdout


def test_the_command_line(dsh_install: Installation, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--runtime", "dsh-route", CRASH_2_3]) == 0
    out = capsys.readouterr().out
    assert "PASS" in out and "dsh-sim agrees" in out
    assert main(["replay", "--runtime", "dsh-route", "--no-differential", "--json", CRASH_2_3]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["runtime"] == "dsh-route" and row["ok"] and "differential" not in row
    assert main(["points", "--runtime", "dsh-route"]) == 0
    assert "route.tools.body" in capsys.readouterr().out
    assert main(["replay", "--runtime", "dsh-route", "--update-digest", CRASH_2_3]) == 2
    assert "does not go with --runtime dsh-route" in capsys.readouterr().err


def test_the_broken_plugins_are_plain_cordis_plugins() -> None:
    """The fixtures patch nothing of DSH's code: each is a plugin module (name, apply)."""
    for path in PLUGINS.glob("*.mjs"):
        text = path.read_text()
        assert "export const name" in text and "export function apply" in text, path
        assert "node_modules" not in text, path
    assert os.path.exists(PLUGINS / "flush-after-body.mjs")


@pytest.mark.slow
def test_fuzz_finds_and_shrinks_a_broken_repair_and_nothing_on_dsh_as_published(dsh_install: Installation, tmp_path: Path) -> None:
    clean = api.route_fuzz(examples=6, budget=300, seed=4, found_dir=str(tmp_path / "clean"))
    assert clean.found is None and clean.examples == 6 and clean.crashes > 0
    broken = api.route_fuzz(
        examples=30, budget=300, seed=3, found_dir=str(tmp_path / "found"), extra=[str(PLUGINS / "repair-not-started.mjs")]
    )
    assert broken.found is not None and any(p.startswith("verdict_soundness") for p in broken.problems), broken.problems
    # the saved scenario is minimal (one drawn prompt, the crash, the recovery and its prompt: the
    # shrink is bounded by a count, not by time, so a loaded machine saves the same) and replays it
    scenario = load(broken.found)
    assert len([s for s in scenario.steps if s.op == "prompt"]) == 2
    assert sum(len(r.tool_calls) for s in scenario.steps if s.op == "prompt" for r in s.args.responses) == 1
    again = api.route_replay([broken.found], extra=[str(PLUGINS / "repair-not-started.mjs")]).results[0]
    assert not again.ok and "verdict_soundness" in {v.invariant for v in again.violations}
    assert api.route_replay([broken.found]).results[0].ok


def test_every_route_point_names_a_point_of_dsh_sims_registry() -> None:
    """One vocabulary: a route point's counterpart, and every fs/world point, is in the registry."""
    from dsh_sim.dsh.route.points import POINTS as ROUTE_POINTS
    from dsh_sim.engine.points import POINTS

    for point in ROUTE_POINTS.values():
        assert point.ours is None or point.ours in POINTS, point
        if not point.name.startswith("route."):
            assert point.name == point.ours, point
