"""``--against dsh``: our runtime's crash states read by the real DSH too.

The projection (v3 crash state → the v0 log DSH reads) is tested without Node: it must be
the exact inverse of the runtime's migration on whole logs, keep a torn zstd tail's complete
records and nothing more, and keep a torn raw record one torn line.  With DSH installed: the
corpus reads alike, a mutated reader is caught as a ``dsh_agrees`` violation saved as a
scenario that ``replay --against dsh`` reproduces (and that passes again without the mutant),
and the report shows the DSH section.
"""

from __future__ import annotations

import glob
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import zstandard

from dsh_sim import api
from dsh_sim.adapters.simfs.disk import Disk
from dsh_sim.cli.main import main
from dsh_sim.drivers.explore import record
from dsh_sim.dsh import against
from dsh_sim.dsh.install import Installation
from dsh_sim.dsh.project import _torn_position, project, torn_v0_frame
from dsh_sim.evidence.oracles.spec_log import read_recoverable
from dsh_sim.mutants.patch import Edit, applied
from runtime.persistence.migration import migrate_v0
from runtime.persistence.v0_format import decode_v0
from tests.support.dsh import dsh_install
from tests.support.paths import ROOT

__all__ = ["dsh_install"]
STARTER = "scenarios/starter"
# our reader drops the complete records of a torn zstd frame (the spec keeps them; so does DSH)
DROP_TORN_RECORDS = Edit("runtime.persistence.log_records", "recover_torn", "        out.append(event)\n", "        break\n")


def _normal(record: dict[str, Any]) -> dict[str, Any]:
    """Ids the round trip cannot keep: the migration names system messages by a hash, and a
    closer is named by its own seq, which the projection renumbers to the v0 seq on purpose."""
    record = json.loads(json.dumps(record))
    if record["type"] == "system/message":
        record["data"] = {"text": record["data"]["message"]["content"]}
    message = record["data"].get("message") if record["type"] == "tool/result" else None
    if message and message["id"].startswith("interrupted-tool-result-"):
        message["id"] = message["id"].rsplit("-", 1)[0]
    return record


@pytest.mark.parametrize("name", ["boundary-2-3-pay", "torn-none-mid-line", "approval-never", "two-writers"])
def test_projection_is_the_inverse_of_the_migration(name: str) -> None:
    scenario = api.load(os.path.join(STARTER, f"{name}.json"))
    points, sim, _, _ = record(scenario)
    compression, checked = sim.config.compression, 0
    for cp in points[:: max(1, len(points) // 12)] + points[-1:]:
        data = Disk.from_image(cp.image).read_path(sim.config.log_path)
        if data is None or (data.count(b"\n") < 2 and compression == "none"):
            continue
        v3 = read_recoverable(data, compression)
        v0 = project(data, compression)
        assert v0 is not None
        migrated = migrate_v0(decode_v0(v0, compression))
        assert [_normal(e.to_record()) for e in migrated.events] == [_normal(r) for r in v3.records], cp.point
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("position", ["block-header", "block", "checksum"])
@pytest.mark.parametrize("lines", [0, 1, 3000])
def test_a_torn_v0_frame_holds_exactly_the_complete_records(position: str, lines: int) -> None:
    complete = b'{"type":"todo/write","seq":0}\n' * lines
    torn = torn_v0_frame(complete, position)
    assert _torn_position(torn) == position
    plain = zstandard.ZstdDecompressor().decompressobj().decompress(torn)
    assert plain[: plain.rfind(b"\n") + 1] == complete


def test_a_torn_raw_record_stays_one_torn_line() -> None:
    """An assistant message with a stream, whole but without its newline: in v0 only the message
    line stands for it, still without its newline (its chunks as whole lines would be kept)."""
    scenario = api.load(os.path.join(STARTER, "torn-none-before-newline.json"))
    points, sim, _, _ = record(scenario)
    data = Disk.from_image(points[-1].image).read_path(sim.config.log_path)
    assert data is not None
    lines = data.split(b"\n")
    cut = next(i for i, line in enumerate(lines) if b'"stream"' in line)
    torn = b"\n".join(lines[:cut]) + b"\n" + lines[cut]  # the message line without its newline
    v0 = project(torn, "none")
    assert v0 is not None and not v0.endswith(b"\n") and json.loads(v0[v0.rfind(b"\n") + 1 :])["type"] == "assistant/message"
    log = decode_v0(v0, "none")
    assert log.torn is not None and [e.type for e in log.events][-1] != "assistant/chunk"


def test_the_report_shows_dsh_results_only_when_present() -> None:
    from dsh_sim.evidence.coverage import aggregate
    from dsh_sim.report import render_html, render_markdown

    plain = aggregate([])
    assert plain.dsh is None and "## DSH" not in render_markdown(plain, []) and "sec-dsh" not in render_html(plain, [], 1)
    shape = {"shape": "s", "scenario": "a.json", "compression": "zstd", "crash_points": 37, "states": 288, "recoveries_run": 83}
    view = aggregate(
        [
            {
                "meta": {"kind": "explore-dsh"},
                "dsh_explore": [{**shape, "points_by_op": {"write": 9}, "checked": {"seq_dense": 83}, "violations": []}],
            },
            {
                "meta": {"kind": "against-dsh", "scenario": "b.json"},
                "dsh_against": {"compared": 40, "probes": 12, "differences": 0, "explained": {}},
            },
        ]
    )
    md, page = render_markdown(view, []), render_html(view, [], 1)
    assert "## DSH (the published reference)" in md and "| s (a.json) | zstd | 37 | write 9 | 288 | 83 | 83 | 0 |" in md
    assert 'id="sec-dsh"' in page and 'href="#sec-dsh"' in page and "40 crash image(s) compared" in page


def test_run_says_in_one_line_that_dsh_is_skipped(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    from dsh_sim.campaign import dsh_phase as run_phase
    from dsh_sim.evidence.coverage import aggregate
    from dsh_sim.operations.results import read_results
    from dsh_sim.report import render_html, render_markdown

    monkeypatch.setattr(run_phase, "installed", lambda: None)
    written = run_phase.run_dsh_phase([], [], str(tmp_path), "")
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "dsh-sim dsh setup" in out and "skipped" in out
    # ...and the report says it too: the section is there, saying why nothing was compared (a
    # report without it read as if DSH had nothing to report, dsh_agrees at 0 checks)
    view = aggregate(read_results(written))
    md, page = render_markdown(view, []), render_html(view, [], 1)
    assert "## DSH (the published reference)" in md and "Skipped: not installed" in md
    assert 'id="sec-dsh"' in page and "dsh_agrees and route_agrees were not run" in page
    assert "| dsh_agrees | not run: DSH phase skipped" in md  # not 0 checks, 0 violations, as if it held


# -- with the real DSH ---------------------------------------------------------------------------


# every SPREAD-th passing scenario of the sorted corpus (starter, then regressions): a fixed spread
# over every kind of scenario at a quarter of the cost; `dsh-sim run` compares its own sample and
# `dsh-sim explore --against dsh scenarios` the whole corpus
SPREAD = 4


@pytest.mark.dsh
@pytest.mark.slow
def test_a_spread_of_the_corpus_reads_alike_in_dsh(dsh_install: Installation, tmp_path: Any) -> None:
    """Passing corpus scenarios explored (one sampled crash state per point: kill or power) with every
    recovered crash image read by DSH too: no unexplained difference."""
    found = str(tmp_path / "found")
    violated: Counter[str] = Counter()
    paths = sorted(glob.glob(f"{STARTER}/*.json")) + sorted(glob.glob("scenarios/regressions/*.json"))
    passing = [scenario for scenario in map(api.load, paths) if scenario.passes_clean]
    with against.session(dsh_install) as oracle:
        for scenario in passing[::SPREAD]:
            result = api.explore(scenario, bound=1, found_dir=found)
            violated.update(v.invariant for _, v in result.violations)
        stats = oracle.summary()
    assert not violated, violated
    assert stats["differences"] == 0 and stats["compared"] > 150
    assert stats["probes"] < stats["compared"]  # identical crash images are asked about once


@pytest.mark.dsh
@pytest.mark.slow
def test_the_run_phase_explores_the_dsh_writer_and_compares_its_sample(
    dsh_install: Installation, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """`dsh-sim run`'s DSH phase with DSH installed: the writer over the corpus's distinct shapes and
    the against-DSH sample, both written as result documents with no violation."""
    from dsh_sim.campaign import dsh_phase as run_phase

    files = [os.path.join(STARTER, "boundary-2-3-pay.json")]
    written = run_phase.run_dsh_phase(files, [api.load(f) for f in files], str(tmp_path), "")
    out = capsys.readouterr().out
    assert "DSH writer explored over 1 distinct session shape(s)" in out and "0 violation(s)" in out
    assert "against DSH: 1 scenario(s)" in out and "0 unexplained difference(s)" in out
    docs = [json.loads(Path(path).read_text()) for path in written]
    assert [doc["meta"]["kind"] for doc in docs] == ["explore-dsh", "against-dsh", "dsh-route"]
    assert all(not doc["violations"] for doc in docs)
    assert docs[1]["dsh_against"]["compared"] > 0
    # the route part: the scenario crashed at every point of DSH's route, each kill compared with dsh-sim
    assert "DSH route explored over 1 starter scenario(s)" in out and "0 unexplained" in out
    [row] = docs[2]["dsh_route"]
    assert row["states"] > 20 and row["kills_compared"] > 10 and row["kills_unexplained"] == 0
    assert docs[2]["checked"]["route_agrees"] == row["kills_compared"]


@pytest.mark.slow
@pytest.mark.dsh
def test_a_mutated_reader_is_caught_saved_and_replayed(
    dsh_install: Installation, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    found = str(tmp_path / "found")
    scenario = api.load(os.path.join(STARTER, "torn-zstd-multiblock-partial-records.json"))
    with against.session(dsh_install) as oracle, applied([DROP_TORN_RECORDS]):
        result = api.explore(scenario, found_dir=found)
        assert oracle.summary()["differences"] > 0
    caught = [v for _, v in result.violations if v.invariant == against.NAME]
    assert caught and "DSH reads the crash image otherwise (events)" in caught[0].message
    # the scenario's own cut now lands in the frame's second block, so many crash states hold
    # whole records of the first block that the slip drops (143 violating states, saved as 26
    # distinct scenarios); each saved one replays the difference
    saved = sorted(glob.glob(os.path.join(found, f"*{against.NAME}*")))
    assert 1 <= len(saved) <= len(caught)
    with applied([DROP_TORN_RECORDS]):
        assert main(["replay", "--against", "dsh", saved[0]]) == 0  # reproduces the difference
    assert main(["replay", "--against", "dsh", saved[0]]) == 1  # the unmutated reader agrees with DSH
    capsys.readouterr()
    assert main(["replay", saved[0]]) == 2  # without DSH the difference cannot show: refused in one line
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--against dsh" in err


@pytest.mark.slow
@pytest.mark.dsh
def test_fuzz_against_dsh_compares_its_crashes(dsh_install: Installation, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    results = str(tmp_path / "fuzz.json")
    args = ["fuzz", "--against", "dsh", "--examples", "12", "--seed", "5", "--found-dir", str(tmp_path), "--results", results]
    assert main(args) == 0
    assert "against DSH:" in capsys.readouterr().out
    with open(results, encoding="utf-8") as handle:
        doc = json.load(handle)
    assert doc["dsh_against"]["compared"] > 0 and doc["dsh_against"]["differences"] == 0
    assert doc["checked"][against.NAME] == doc["dsh_against"]["compared"]


def test_ci_runs_exactly_the_readme_test_command_with_dsh_set_up() -> None:
    root = ROOT
    with open(os.path.join(root, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    with open(os.path.join(root, ".ci", "run"), encoding="utf-8") as handle:
        ci = [line for line in handle.read().splitlines() if line.startswith("python3 -m venv")]
    assert len(ci) == 1 and "dsh-sim dsh setup" in ci[0] and "[test,dsh]" in ci[0]
    assert f"# install and run the tests\n{ci[0]}\n" in readme


@pytest.mark.slow
@pytest.mark.dsh
def test_explore_cli_against_dsh_writes_the_comparison(
    dsh_install: Installation, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    results = str(tmp_path / "explore.json")
    scenario = os.path.join(STARTER, "torn-none-mid-line.json")
    assert main(["explore", "--against", "dsh", "--bound", "2", "--found-dir", str(tmp_path), "--results", results, scenario]) == 0
    assert "0 unexplained difference(s)" in capsys.readouterr().out
    with open(results, encoding="utf-8") as handle:
        doc = json.load(handle)
    assert doc["dsh_against"]["compared"] > 0 and doc["dsh_against"]["differences"] == 0
    assert main(["explore", "--against", "dsh", "--runtime", "dsh", scenario]) == 2
    assert "does not go with --runtime dsh" in capsys.readouterr().err
