"""The differential against the published DSH: setup, the reader diff over logs the real DSH
wrote and damaged (every class), real SIGKILLs, and the DSH writer explored on SimFS."""

from __future__ import annotations

import os
import random
import subprocess
from collections import Counter

import pytest

from dsh_sim.cli.main import main
from dsh_sim.dsh.bridge import Bridge
from dsh_sim.dsh.diff import collect, diff_log
from dsh_sim.dsh.explore_dsh import explore_dsh, record
from dsh_sim.dsh.generate import generate_corpus, sigkill_crashes
from dsh_sim.dsh.install import Installation, setup
from dsh_sim.dsh.shapes import shape
from tests.dsh_fixtures import dsh_install

pytestmark = pytest.mark.dsh
__all__ = ["dsh_install"]


def test_setup_reuses_the_cache_without_npm(dsh_install: Installation, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("setup ran npm although the cache is complete")

    monkeypatch.setattr(subprocess, "run", no_network)
    again, installed_now = setup(dsh_install.home)
    assert not installed_now and again.home == dsh_install.home


def test_bridge_runs_the_pinned_release(dsh_install: Installation) -> None:
    with Bridge(dsh_install) as bridge:
        assert bridge.hello["versions"]["@deepseek-ai/dsh-session-persistence-jsonl"] == "0.1.0-rc.8"
        assert bridge.hello["formatVersion"] == 0
        assert tuple(map(int, bridge.hello["node"].lstrip("v").split(".")[:2])) >= (22, 15)


@pytest.fixture(scope="module")
def corpus_diffs(dsh_install: Installation, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = str(tmp_path_factory.mktemp("dsh") / "corpus")
    generate_corpus(dsh_install, out, seed=3, sigkills=0)
    with Bridge(dsh_install) as bridge:
        return {
            os.path.relpath(p, out).split(os.sep)[1] + "/" + os.path.relpath(p, out).split(os.sep)[0]: diff_log(bridge, p)
            for p in collect([out])
        }


def test_every_generated_log_reads_alike_or_differs_by_a_listed_finding(corpus_diffs: dict[str, object]) -> None:
    unexplained = {name: d.unexplained for name, d in corpus_diffs.items() if d.unexplained}  # type: ignore[attr-defined]
    assert not unexplained
    found = Counter(x.finding for d in corpus_diffs.values() for x in d.differences)  # type: ignore[attr-defined]
    assert {"DSH-1", "DSH-2", "DSH-3", "DSH-4"} <= set(found)


@pytest.mark.parametrize(
    "case",
    [
        "balanced/none",
        "interrupted/zstd",
        "not-started/none",
        "outcome-unknown/zstd",
        "mixed/none",
        "torn-outcome-unknown-mid-line/none",
        "torn-outcome-unknown-before-newline/none",
        "torn-outcome-unknown-magic/zstd",
        "torn-outcome-unknown-frame-header/zstd",
        "torn-outcome-unknown-block/zstd",
        "torn-outcome-unknown-checksum/zstd",
        "torn-big-50/zstd",
        "corrupt-frame-mid-balanced/zstd",
        "corrupt-record-early-balanced/none",
        "header-version-99/zstd",
        "unknown-type/none",
    ],
)
def test_class_reads_alike(corpus_diffs: dict[str, object], case: str) -> None:
    diff = corpus_diffs[case]
    assert not [d for d in diff.differences if d.kind != "list"], diff.differences  # type: ignore[attr-defined]


def test_torn_zstd_frame_keeps_its_complete_records_in_both(corpus_diffs: dict[str, object]) -> None:
    diff = corpus_diffs["torn-big-90/zstd"]
    assert diff.dsh.refusal is None and diff.dsh.events == diff.ours.events  # type: ignore[attr-defined]


def test_dsh_drops_committed_records_where_dsh_sim_refuses(corpus_diffs: dict[str, object]) -> None:
    diff = corpus_diffs["corrupt-record-open-turn-outcome-unknown/none"]
    assert diff.ours.refusal.klass == "committed-damage"  # type: ignore[attr-defined]
    assert diff.dsh.refusal is None and [d.finding for d in diff.differences] == ["DSH-1"]  # type: ignore[attr-defined]


def test_real_sigkill_of_a_dsh_writer(dsh_install: Installation, tmp_path: os.PathLike[str]) -> None:
    logs = sigkill_crashes(dsh_install, str(tmp_path), random.Random(11), 2)
    assert logs
    with Bridge(dsh_install) as bridge:
        for path in logs:
            assert not diff_log(bridge, path).unexplained


def test_dsh_writer_on_simfs_records_deterministically(dsh_install: Installation) -> None:
    log = shape("outcome-unknown", "det", turns=1)
    a = record(dsh_install, log, "zstd", "seed")
    b = record(dsh_install, log, "zstd", "seed")
    assert [(p.op, p.path, p.image) for p in a] == [(p.op, p.path, p.image) for p in b]
    assert any(".tmp" in p.path for p in a)  # the first publication's temporary file (named from the simulator)


def test_explore_the_dsh_writer_on_simfs(dsh_install: Installation) -> None:
    result = explore_dsh(dsh_install, shape("outcome-unknown", "ex", turns=1), "none", crash="both", bound=6)
    assert result.points > 20 and result.states > result.points
    assert {"write", "fsync", "link", "mkdir"} <= set(result.per_op)
    assert not result.violations


def test_cli_refuses_a_missing_path_in_one_line(dsh_install: Installation, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dsh", "diff", "/nonexistent/dsh-log"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err
