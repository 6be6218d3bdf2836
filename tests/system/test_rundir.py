"""Run directories: one per run, locked while it runs, written whole, merged by id."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from unittest import mock

import attrs
import pytest

from dsh_sim import outputs
from dsh_sim.campaign.rundir import RunDir, list_runs, new_status, resolve_inputs
from dsh_sim.campaign.tasks import Campaign, FuzzShard, Options
from dsh_sim.errors import InputError
from dsh_sim.evidence.document import Meta, ResultsDocument
from dsh_sim.evidence.results import meta, unique


def _campaign() -> Campaign:
    options = Options(seed=1, budget=1.0, examples=1, workers=1, fuzz_shards=1, bound=None)
    return Campaign(options, (FuzzShard("fuzz-durability-0", "durability", 5, 1.0, 1),), {})


def _doc(run: str, task: str) -> ResultsDocument:
    return ResultsDocument(meta=attrs.evolve(meta("fuzz"), run=run, task=task), violations=(), checked={"x": 1})


def test_two_runs_in_one_directory_get_their_own_directories(tmp_path: Path) -> None:
    a, b = RunDir.create(str(tmp_path)), RunDir.create(str(tmp_path))
    try:
        assert a.id != b.id and os.path.isdir(a.path) and os.path.isdir(b.path)
    finally:
        a.release()
        b.release()


@pytest.mark.slow
def test_resuming_a_run_that_is_still_running_is_refused_in_one_line_naming_it(tmp_path: Path) -> None:
    run = RunDir.create(str(tmp_path))
    run.write_campaign(_campaign())
    run.write_status(new_status(run, "in process", 1, ["run"]))
    # the lock belongs to the open file description: another process must be refused
    probe = textwrap.dedent(
        f"""
        from dsh_sim.campaign.rundir import RunDir
        from dsh_sim.errors import InputError
        try:
            RunDir.resume({str(tmp_path)!r}, {run.id!r})
        except InputError as err:
            print(err)
        else:
            print("resumed")
        """
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert out.count("\n") == 0
    assert f"run {run.id} is still running (pid {os.getpid()}" in out
    run.release()
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "resumed"  # its process is gone (or done): the lock went with it


def test_a_task_is_done_only_when_its_whole_document_is_there(tmp_path: Path) -> None:
    run = RunDir.create(str(tmp_path))
    campaign = _campaign()
    run.write_campaign(campaign)
    assert run.finished(campaign) == {}
    os.makedirs(run.results, exist_ok=True)
    with open(run.result_path("fuzz-durability-0"), "w") as handle:
        handle.write('{"meta": {"format": "dsh-sim-res')  # a half-written file (what open("w") left)
    assert run.finished(campaign) == {}
    run.write_result("fuzz-durability-0", _doc(run.id, "fuzz-durability-0"))
    assert list(run.finished(campaign)) == ["fuzz-durability-0"]
    assert run.read_campaign() == campaign
    run.release()


def test_from_names_runs_by_id_and_a_task_counts_once(tmp_path: Path) -> None:
    run = RunDir.create(str(tmp_path))
    run.write_campaign(_campaign())
    run.write_result("fuzz-durability-0", _doc(run.id, "fuzz-durability-0"))
    run.release()
    assert list_runs(str(tmp_path)) == [run.id]
    by_id = resolve_inputs([run.id], str(tmp_path))
    assert by_id == [os.path.join(run.path, "results")]
    assert resolve_inputs(["latest"], str(tmp_path)) == by_id
    assert resolve_inputs([run.path], str(tmp_path)) == by_id
    with pytest.raises(InputError, match="no such run"):
        resolve_inputs(["20990101-000000-beef"], str(tmp_path))
    docs = [
        _doc(run.id, "fuzz-durability-0"),
        _doc(run.id, "fuzz-durability-0"),
        _doc("other", "fuzz-durability-0"),
        ResultsDocument(meta=Meta()),
    ]
    assert len(unique(docs)) == 3


def test_outputs_are_fsynced_before_they_get_their_name(tmp_path: Path) -> None:
    """A reader sees the whole file or none: the temp file is synced, then renamed or linked,
    then the directory is synced."""
    order: list[str] = []
    real_fsync, real_replace, real_link = os.fsync, os.replace, os.link
    with (
        mock.patch.object(outputs.os, "fsync", side_effect=lambda fd: (order.append("fsync"), real_fsync(fd))[1]),
        mock.patch.object(outputs.os, "replace", side_effect=lambda a, b: (order.append("rename"), real_replace(a, b))[1]),
        mock.patch.object(outputs.os, "link", side_effect=lambda a, b, **kw: (order.append("link"), real_link(a, b, **kw))[1]),
    ):
        outputs.write_replacing(str(tmp_path / "a.json"), "{}\n")
        assert order == ["fsync", "rename", "fsync"]
        order.clear()
        outputs.write_new(str(tmp_path / "b.json"), "{}\n")
        assert order == ["fsync", "link", "fsync"]
    with pytest.raises(FileExistsError):
        outputs.write_new(str(tmp_path / "b.json"), "other\n")
    assert sorted(os.listdir(tmp_path)) == ["a.json", "b.json"]  # no temp file left behind
    assert json.loads((tmp_path / "b.json").read_text()) == {}


def test_a_failed_replace_leaves_no_temp_file(tmp_path: Path) -> None:
    with mock.patch.object(outputs.os, "replace", side_effect=KeyboardInterrupt), pytest.raises(KeyboardInterrupt):
        outputs.write_replacing(str(tmp_path / "a.json"), "{}\n")
    assert os.listdir(tmp_path) == []
