"""End to end: a deliberately broken runtime shows up red in the report, and the report fails."""

from __future__ import annotations

import os
import re

from dsh_sim import api
from dsh_sim.evidence.document import unstructure
from dsh_sim.evidence.results import meta
from tests.support.paths import ROOT


def read_text(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


UNSAFE = os.path.join(ROOT, "scenarios", "starter", "no-checkpoint-policy-unsafe.json")
SAFE = os.path.join(ROOT, "scenarios", "starter", "boundary-3-4-pay.json")


def unsafe_cell_class(html: str) -> str:
    tag = re.search(r'<td[^>]*id="unsafe-cell"[^>]*>', html)
    assert tag is not None, "the confusion matrix has no unsafe cell"
    return re.search(r'class="([^"]*)"', tag.group(0)).group(1)


def document(path: str) -> dict:
    row = api.replay(path).row()
    return {"meta": unstructure(meta("replay")), "cases": row["cases"], "checked": row["checked"], "violations": []}


def test_a_runtime_without_the_checkpoint_policy_turns_the_unsafe_cell_red(tmp_path):
    report = api.report([document(UNSAFE)], str(tmp_path))
    view, paths, lines, failed = report.document, report.paths, report.lines, report.failed
    assert view["confusion"]["TOOL_NOT_STARTED"]["applied"] >= 1
    assert unsafe_cell_class(read_text(paths["html"])) == "unsafe"
    assert failed and any("unsafe TOOL_NOT_STARTED with the effect applied: 1" in line for line in lines)


def test_the_correct_runtime_keeps_it_green(tmp_path):
    report = api.report([document(SAFE)], str(tmp_path))
    view, paths = report.document, report.paths
    assert view["confusion"]["TOOL_NOT_STARTED"]["applied"] == 0
    assert unsafe_cell_class(read_text(paths["html"])) == "ok"
