"""The runtime's own ``write_file`` tool, run on the simulated disk (``config.file_tools``).

Its writes are filesystem operations through the process's port — named points under the
crash model, like the log's — and ``file_effects_durable`` holds every success the recovered
log reports to the medium.  Before, the simulated agent had only the world's tools: a
``write_file`` that reported success before syncing a new file's directory (a slip written
apart from the harness, round 4) ran under no method at all.
"""

from __future__ import annotations

import json
import os

import pytest

from dsh_sim.drivers.explore import explore
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.errors import InputError
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load, parse
from tests.support.paths import ROOT

WRITE = os.path.join(ROOT, "scenarios", "regressions", "write-file-survives-power-loss.json")
NO_DIR_FSYNC = Edit(
    "runtime.tools.files",
    "WriteFileTool.execute",
    "        # a new name is durable only after its directory is synced: report success only then\n"
    "        await self._fs.fsync_dir(posixpath.dirname(path))\n",
    "",
)
NO_FILE_FSYNC = Edit("runtime.tools.files", "WriteFileTool.execute", "            await self._fs.fsync(fd)\n", "")


def test_the_written_file_survives_and_is_judged():
    result, sim = run_scenario(load(WRITE))
    assert result.violations == () and result.not_applicable is None
    assert sim.disk.read_path("/sim/workspace/report.txt") == b"v2"
    assert sim.disk.read_path("/sim/outside.txt") is None  # confined: the escaping call failed
    assert result.stats["checked"]["file_effects_durable"] >= 2


@pytest.mark.parametrize("slip", [NO_DIR_FSYNC, NO_FILE_FSYNC], ids=["no-dir-fsync", "no-file-fsync"])
def test_a_write_reported_before_it_is_durable_is_caught(slip):
    with capture_runtime_logs(), applied([slip]):
        result, _ = run_scenario(load(WRITE))
    assert [v.invariant for v in result.violations][:1] == ["file_effects_durable"], result.violations


@pytest.mark.slow
def test_explore_finds_the_missing_directory_sync():
    with capture_runtime_logs(), applied([NO_DIR_FSYNC]):
        result = explore(load(WRITE), cache={}, stop_on_violation=True)
    assert [v.invariant for _, v in result.violations][:1] == ["file_effects_durable"]


def test_write_file_without_the_tool_mounted_is_refused_at_load(tmp_path):
    with open(WRITE, encoding="utf-8") as f:
        document = json.load(f)
    document["config"]["file_tools"] = False
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(InputError) as refused:
        load(str(path))
    assert "config.file_tools" in str(refused.value) and "tool_calls[0].name" in str(refused.value)


def test_a_file_the_harness_corrupted_on_purpose_is_not_held_against_the_runtime():
    with open(WRITE, encoding="utf-8") as f:
        document = json.load(f)
    corrupt = {
        "point": "agent.turn.end",
        "action": "corrupt",
        "hit": 1,
        "lifetime": 2,
        "corrupt_path": "/sim/workspace/report.txt",
        "corrupt_offset": 0,
    }
    document["steps"].insert(4, {"op": "arm", "args": {"rule": corrupt}})
    document.pop("trace_digest", None)
    result, _ = run_scenario(parse(document))
    assert result.violations == () and result.not_applicable is None


LONE = os.path.join(ROOT, "scenarios", "regressions", "write-file-refuses-a-lone-surrogate.json")
# the tool as it was: the file opened (and truncated) before the content failed to encode
TRUNCATES_FIRST = Edit(
    "runtime.tools.files",
    "WriteFileTool.execute",
    '        data = utf8_text(content, "content")  # before the file is opened (and truncated)\n',
    '        data = content.encode("utf-8", "surrogatepass")\n',
)
ENCODES_AFTER_OPENING = Edit(
    "runtime.tools.files",
    "WriteFileTool.execute",
    "            await self._fs.write(fd, data)\n",
    '            await self._fs.write(fd, utf8_text(content, "content"))\n',
)
PATH_UNCHECKED = Edit("runtime.tools.files", "confine_real", '        utf8_text(path, "path")\n', "        pass\n")
ARGV_UNCHECKED = Edit("runtime.tools.shell", "ShellTool.execute", '            utf8_text(arg, f"argv[{index}]")\n', "            pass\n")
WRITES_SURROGATES = Edit(
    "runtime.tools.arguments", "utf8_text", "        return text.encode()\n", '        return text.encode("utf-8", "surrogatepass")\n'
)


def test_a_lone_surrogate_is_refused_and_the_file_kept():
    result, sim = run_scenario(load(LONE))
    assert result.violations == () and result.not_applicable is None
    assert sim.disk.read_path("/sim/workspace/report.txt") == b"v1"
    assert result.stats["checked"]["file_effects_durable"] >= 1


@pytest.mark.parametrize(
    ("slip", "invariant"),
    [
        ([TRUNCATES_FIRST, ENCODES_AFTER_OPENING], "file_effects_durable"),
        ([WRITES_SURROGATES], "turn_progress"),
        ([PATH_UNCHECKED], "turn_progress"),
        ([ARGV_UNCHECKED], "turn_progress"),
    ],
    ids=["truncates-then-fails", "writes-surrogate-bytes", "path-unchecked", "argv-unchecked"],
)
def test_a_write_file_that_mishandles_a_lone_surrogate_is_caught(slip, invariant):
    with capture_runtime_logs(), applied(slip):
        result, _ = run_scenario(load(LONE))
    assert invariant in [v.invariant for v in result.violations], result.violations
