"""The crash-coverage report: coverage.json / coverage.md / coverage.html from a view.

Unit tests render synthetic views and read the files back (JSON parsed, Markdown tables,
HTML parsed with the stdlib parser).  The ``browser`` tests open coverage.html in a real
headless Chromium: the dumped DOM must hold the matrices, and a screenshot must show the
unsafe confusion cell as a red block when it is non-zero and a green one when it is zero.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import struct
import subprocess
import tempfile
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

import pytest

from dsh_sim.engine.vocabulary import BOUNDARIES, TORN_CLASSES
from dsh_sim.evidence.coverage import (
    REQUIREMENTS,
    aggregate,
    requirement_status,
)
from dsh_sim.evidence.document import DocumentError, unstructure
from dsh_sim.evidence.view import CoverageView, as_view
from dsh_sim.report import SCHEMA, coverage_document, write_report
from dsh_sim.report.sample import kill_row as sample_kill_row
from dsh_sim.report.sample import main as sample_main
from dsh_sim.report.sample import sample_view

TORN = [r for k, r, _ in REQUIREMENTS if k == "torn"]


def make_view(unsafe: int = 0, torn_missing: tuple[str, ...] = (), inject: str = "") -> dict[str, Any]:
    """A small hand-written view whose numbers the tests can state exactly."""
    kill_and_power = lambda outcome, n: {"kill": {outcome: n}, "power:torn": {outcome: 1}}  # noqa: E731
    boundary = {
        "before 1": kill_and_power("not emitted", 2),
        "1→2": {"kill": {"TOOL_NOT_STARTED": 3, "lost": 1}, "power:unsynced-dropped": {"lost": 2}},
        "2→3": kill_and_power("TOOL_OUTCOME_UNKNOWN", 5),
        "3→4": {"kill": {"TOOL_OUTCOME_UNKNOWN": 4, "TOOL_NOT_STARTED": unsafe}, "power:synced": {"closed": 1}},
        "after 4": kill_and_power("closed", 6),
    }
    barriers = ("pre-step", "llm/stream", "tools/execute", "window write", "first publication", "torn-tail rewrite", "repair append")
    view: dict[str, Any] = {
        "cases": 42,
        "boundary_matrix": boundary,
        "barrier_matrix": {b: {"kill": {"closed": 1, "no call": 1}, "power:torn": {"TOOL_OUTCOME_UNKNOWN": 1}} for b in barriers},
        "confusion": {"TOOL_NOT_STARTED": {"applied": unsafe, "not applied": 3}, "TOOL_OUTCOME_UNKNOWN": {"applied": 4, "not applied": 7}},
        "torn_classes": {c: 2 for c in TORN if c not in torn_missing},
        "points": {"fs.write": {"possible": 10, "explored": 7, "hits": 90}, "llm.request": {"possible": 4, "explored": 4, "hits": 0}},
        "checked": {"seq_dense": 11, "verdict_soundness": 12},
        "violations": [],
        "runs": [
            {"kind": "fuzz", "seed": 1234, "examples": 100, "seconds": 12.5},
            {"kind": "explore", "seeds": [1, 2], "scenarios": 3, "seconds": 4.0},
        ],
        "determinism": [{"scenario": "corpus/a.json", "digest_a": "abc123", "digest_b": "abc123", "same": True}],
        "kill_matrix": [
            kill_row(
                "skip-fsync",
                "ack before fsync",
                corpus=(False, 0.8, None),
                explore=(True, 1.5, "acked_events_survive"),
                fuzz=(True, 3.25, "seq_dense", 4),
            ),
            kill_row("double-result", "second result on resume", corpus=(False, 0.9, None), fuzz=(False, 20.0, None)),
            kill_row(
                "no-dir-fsync",
                "skip the directory fsync",
                corpus=(True, 0.5, "recovery_maximal"),
                explore=(True, 2.0, "recovery_maximal"),
                fuzz=(False, 20.0, None),
            ),
        ],
        # Exploration's crash states per cell: one sampled cell (300 of 1,024 checked), a
        # "no call" row the outcome matrix lacks, and fuzz-only cells without states.
        "cell_states": {
            "boundary": {
                "1→2": {"kill": {"possible": 4, "explored": 4}},
                "2→3": {"kill": {"possible": 5, "explored": 5}, "power:torn": {"possible": 1024, "explored": 300}},
                "no call": {"kill": {"possible": 2, "explored": 2}},
            },
            "barrier": {
                "tools/execute": {"kill": {"possible": 7, "explored": 7}, "power:torn": {"possible": 1024, "explored": 300}},
                "window write": {"kill": {"possible": 4, "explored": 4}},
            },
        },
        "sampled": {"fs.write": 3},
    }
    if unsafe:
        view["violations"].append(
            {
                "invariant": "verdict_soundness",
                "message": "call c1 applied but TOOL_NOT_STARTED",
                "scenario": "scenarios/v1.json",
                "source": "fuzz",
            }
        )
    if inject:
        view["violations"].append({"invariant": "seq_dense", "message": inject, "scenario": inject, "source": inject})
        view["kill_matrix"][0]["description"] = inject
        view["kill_matrix"][0]["by_method"]["fuzz"]["invariant"] = inject
        view["kill_matrix"][0]["by_method"][inject] = {
            "killed": False,
            "seconds": 1.0,
            "invariant": None,
            "example": inject,
            "examples": 1,
            "scenario_steps": None,
        }
        view["cell_states"]["boundary"][inject] = {inject: {"possible": 2, "explored": 1}}
        view["sampled"][inject] = 1
        view["runs"].append({"kind": inject, inject: inject})
        view["determinism"].append({"scenario": inject, "digest_a": inject, "digest_b": "x", "same": False})
        view["boundary_matrix"][inject] = {inject: {inject: 1}}
        view["torn_classes"][inject] = 1
    return view


def kill_row(mutant: str, description: str, **methods: tuple[Any, ...]) -> dict[str, Any]:
    """A kill-matrix row shaped like ``selftest.KillResult.row()``: (killed, seconds, invariant[, steps])."""
    by_method = {
        name: {
            "killed": r[0],
            "seconds": r[1],
            "invariant": r[2],
            "example": f"scenarios/{mutant}-{name}.json" if r[0] else None,
            "examples": 3,
            "scenario_steps": r[3] if len(r) > 3 else None,
        }
        for name, r in methods.items()
    }
    return {**sample_kill_row(mutant, by_method), "description": description}


class Elements(HTMLParser):
    """Every element with its attributes and text content, for assertions on the page."""

    VOID: ClassVar[set[str]] = {"meta", "br", "img", "input", "link", "hr", "wbr", "rect", "line", "path", "circle"}

    def __init__(self, text: str) -> None:
        super().__init__()
        self.all: list[dict[str, Any]] = []
        self.stack: list[dict[str, Any]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = {"tag": tag, "attrs": dict(attrs), "text": "", "ancestors": list(self.stack)}
        el["classes"] = set((el["attrs"].get("class") or "").split())
        self.all.append(el)
        if tag not in self.VOID:
            self.stack.append(el)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.all.append({"tag": tag, "attrs": dict(attrs), "text": "", "classes": set((dict(attrs).get("class") or "").split())})

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i]["tag"] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data: str) -> None:
        for el in self.stack:
            el["text"] += data

    def by_id(self, id_: str) -> dict[str, Any]:
        found = [e for e in self.all if e["attrs"].get("id") == id_]
        assert len(found) == 1, f"expected one element #{id_}, found {len(found)}"
        return found[0]

    def with_class(self, cls: str, tag: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.all if cls in e["classes"] and (tag is None or e["tag"] == tag)]


def headline_value(page: Elements, key: str) -> str:
    card = page.by_id(f"headline-{key}")
    value = page.all[page.all.index(card) + 1]
    assert "value" in value["classes"]
    return value["text"]


def render(tmp_path: Path, view: CoverageView | dict[str, Any]) -> tuple[dict[str, str], str, str, dict[str, Any]]:
    paths = write_report(view, str(tmp_path / "out"))
    return (
        paths,
        Path(paths["md"]).read_text(encoding="utf-8"),
        Path(paths["html"]).read_text(encoding="utf-8"),
        json.loads(Path(paths["json"]).read_text(encoding="utf-8")),
    )


# -- coverage.json ------------------------------------------------------------------------


def test_writes_the_three_files_and_returns_their_paths(tmp_path: Path) -> None:
    paths = write_report(make_view(), str(tmp_path / "new" / "dir"))
    assert set(paths) == {"json", "md", "html"}
    for fmt, path in paths.items():
        assert os.path.basename(path) == f"coverage.{fmt}" and os.path.getsize(path) > 0


def test_json_is_the_view_plus_requirements_schema_and_summary(tmp_path: Path) -> None:
    view = make_view(unsafe=2, torn_missing=("magic",))
    before = copy.deepcopy(view)
    paths, _, _, doc = render(tmp_path, view)
    assert view == before, "write_report must not modify the view"
    assert doc["schema"] == SCHEMA
    for key, value in view.items():
        assert doc[key] == value
    assert doc["requirements"] == [unstructure(r) for r in requirement_status(as_view(view))]
    assert doc["summary"]["unsafe_verdicts"] == 2
    assert doc["summary"]["unmet_requirements"] == 1
    assert doc["summary"]["violations"] == 1
    assert doc["summary"]["mutants"] == 3 and doc["summary"]["mutants_killed"] == 2
    assert doc["summary"]["median_time_to_kill"] == 1.0
    assert (
        doc["summary"]["crash_states_explored"],
        doc["summary"]["crash_states_possible"],
        doc["summary"]["crash_states_exhaustive"],
    ) == (311, 1035, False)
    text = Path(paths["json"]).read_text(encoding="utf-8")
    assert text == json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def test_output_is_deterministic(tmp_path: Path) -> None:
    a = write_report(make_view(unsafe=1), str(tmp_path / "a"))
    b = write_report(make_view(unsafe=1), str(tmp_path / "b"))
    for fmt in ("json", "md", "html"):
        assert Path(a[fmt]).read_bytes() == Path(b[fmt]).read_bytes(), fmt


def test_a_view_that_already_has_report_keys_is_refused() -> None:
    with pytest.raises(ValueError, match="schema"):
        coverage_document({**make_view(), "schema": 0})


def test_the_view_is_typed_and_its_json_reads_back_as_it_was() -> None:
    """coverage.json's view part is the typed view through the one converter, and back."""
    view = sample_view()
    assert isinstance(view, CoverageView) and view.dsh is None
    assert as_view(unstructure(view)) == view
    assert coverage_document(view).to_json() == coverage_document(unstructure(view)).to_json()
    with pytest.raises(DocumentError, match="a coverage view has no key casez"):
        as_view({**make_view(), "casez": 1})
    with pytest.raises(DocumentError, match=r"kill_matrix\[0\]\.mutant must be a string"):
        as_view({**make_view(), "kill_matrix": [{"mutant": 5}]})


# -- coverage.md ---------------------------------------------------------------------------


def test_markdown_has_the_matrices_as_tables(tmp_path: Path) -> None:
    _, md, _, _ = render(tmp_path, make_view())
    lines = md.splitlines()
    header = next(line for line in lines if line.startswith("| boundary |"))
    assert header.split(" | ")[1] == "kill", "kill is the first crash column"
    assert "power:torn" in header and "power:synced" in header and header.rstrip(" |").endswith("all")
    for boundary in BOUNDARIES:
        assert any(line.startswith(f"| {boundary} |") for line in lines), boundary
    assert any(line.startswith("| 1→2 | NS 3 · lost 1 (4/4 states) |") for line in lines)
    assert any(line.startswith("| barrier |") for line in lines)
    assert any(line.startswith("| tools/execute | closed 1 · none 1 (7/7 states) |") for line in lines)
    assert "| verdict \\\\ effect | applied | not applied |" in md
    assert "| TOOL_NOT_STARTED | 0 (safe) | 3 |" in md
    for section in ("## Invariants checked", "## Violations", "## Determinism re-checks", "## Kill matrix", "## Runs", "## Named points"):
        assert section in md
    assert "| seq_dense | 11 | 0 |" in md
    assert "| fs.write | fs | 7/10 | 3 | 90 |" in md
    assert "1234" in md and "their own seconds add up to 16.5 s" in md


def test_markdown_flags_the_unsafe_cell_and_lists_unmet_requirements(tmp_path: Path) -> None:
    _, md, _, _ = render(tmp_path, make_view(unsafe=2, torn_missing=("magic", "checksum")))
    assert "| TOOL_NOT_STARTED | **2 UNSAFE** | 3 |" in md
    assert "must be 0: **FAIL** (2)" in md
    assert "| torn | magic | any | 0 |" in md and "| torn | checksum | any | 0 |" in md
    assert "scenarios/v1.json" in md
    assert "**SURVIVED**" in md


def test_markdown_escapes_table_breaking_text(tmp_path: Path) -> None:
    _, md, _, _ = render(tmp_path, make_view(inject="a|b\n<script>x</script>"))
    assert "a\\|b &lt;script&gt;x&lt;/script&gt;" in md
    assert "<script>" not in md


# -- coverage.html -------------------------------------------------------------------------


@pytest.mark.parametrize("unsafe", [0, 1, 7])
def test_unsafe_cell_is_red_iff_not_started_and_applied(tmp_path: Path, unsafe: int) -> None:
    _, _, html, _ = render(tmp_path, make_view(unsafe=unsafe))
    page = Elements(html)
    cell = page.by_id("unsafe-cell")
    assert cell["attrs"]["data-cell"] == "TOOL_NOT_STARTED×applied"
    assert cell["text"].strip().startswith(str(unsafe))
    assert ("unsafe" in cell["classes"]) == (unsafe > 0)
    assert ("ok" in cell["classes"]) == (unsafe == 0)
    # the colours themselves: red for .unsafe, green for .ok
    assert "table.confusion td.unsafe { background: var(--red-bg)" in html and "--red-bg: #d93025" in html
    assert "table.confusion td.ok { background: var(--green-bg)" in html
    headline = page.by_id("headline-unsafe")
    assert ("alarm" in headline["classes"]) == (unsafe > 0)


def test_html_has_every_section_with_stable_ids(tmp_path: Path) -> None:
    _, _, html, _ = render(tmp_path, make_view(unsafe=1))
    page = Elements(html)
    for id_ in (
        "coverage-matrix",
        "barrier-matrix",
        "confusion-matrix",
        "requirements",
        "kill-matrix",
        "invariants",
        "violations",
        "determinism",
        "runs",
        "points",
        "torn-classes",
    ):
        assert page.by_id(id_)["tag"] == "table", id_
    assert headline_value(page, "cases") == "42"
    assert "alarm" in page.by_id("headline-violations")["classes"]
    cell = next(e for e in page.all if e["attrs"].get("data-row") == "2→3" and e["attrs"].get("data-col") == "kill")
    assert cell["text"] == "UNK 5" + "5/5 states"
    rows = [e["text"] for e in page.all if e["tag"] == "th" and "rowhead" in e["classes"]]
    assert rows[:5] == list(BOUNDARIES)
    assert "scenarios/v1.json" in page.by_id("violations")["text"]
    assert "SURVIVED" in page.by_id("kill-matrix")["text"]
    assert "1234" in page.by_id("runs")["text"]
    assert len(page.with_class("chart", "svg")) >= 3


def test_html_lists_unmet_requirements_in_red(tmp_path: Path) -> None:
    _, _, html, _ = render(tmp_path, make_view(torn_missing=("magic", "mid-line")))
    page = Elements(html)
    unmet = page.with_class("unmet", "tr")
    in_table = [r for r in unmet if "UNMET" in r["text"]]
    assert sorted(r["text"] for r in in_table) == ["tornmagicany0UNMET", "tornmid-lineany0UNMET"]
    assert "alarm" in page.by_id("headline-unmet")["classes"] and headline_value(page, "unmet") == "2"
    assert "tr.unmet td, tr.unmet th { background: var(--red-pale); color: var(--red); }" in html


def test_all_met_means_no_red_requirement_rows(tmp_path: Path) -> None:
    _, _, html, _ = render(tmp_path, make_view())
    page = Elements(html)
    assert [r for r in page.with_class("unmet", "tr") if "UNMET" in r["text"]] == []
    assert "alarm" not in page.by_id("headline-unmet")["classes"]


def test_html_escapes_injected_text(tmp_path: Path) -> None:
    evil = '<script>alert("x")</script><img src=x onerror=alert(1)>"\'&'
    _, _, html, _ = render(tmp_path, make_view(inject=evil))
    assert "<script" not in html and "<img" not in html and "onerror=alert(1)>" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    page = Elements(html)
    assert evil in page.by_id("violations")["text"]
    assert evil in page.by_id("kill-matrix")["text"] and evil in page.by_id("points")["text"]
    assert evil in page.by_id("coverage-matrix")["text"]
    assert any(e["attrs"].get("data-method") == evil for e in page.all)
    assert any(e["attrs"].get("title") == evil for e in page.all), "attribute values are escaped, not cut"


def test_html_is_self_contained(tmp_path: Path) -> None:
    _, _, html, _ = render(tmp_path, sample_view())
    assert "<script" not in html and "<link" not in html and "@import" not in html and "url(" not in html
    assert " src=" not in html
    stripped = html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "http://" not in stripped and "https://" not in stripped
    assert html.startswith("<!DOCTYPE html>") and "<style>" in html


def test_renders_an_empty_and_a_real_aggregate(tmp_path: Path) -> None:
    _, md, html, doc = render(tmp_path / "empty", aggregate([{"cases": []}]))
    assert doc["cases"] == 0 and doc["summary"]["unmet_requirements"] == len(REQUIREMENTS)
    assert Elements(html).by_id("coverage-matrix") and "## Coverage matrix" in md
    assert doc["runs"] == [] and 'id="runs"' not in html, "a document without meta is not a run row"
    _, _, html, doc = render(tmp_path / "clean", sample_view(flaws=False))
    assert doc["summary"]["unmet_requirements"] == 0 and doc["summary"]["unsafe_verdicts"] == 0
    assert "ok" in Elements(html).by_id("unsafe-cell")["classes"]
    _, _, html, doc = render(tmp_path / "flawed", sample_view(flaws=True))
    assert doc["summary"]["unsafe_verdicts"] == 1 and doc["summary"]["unmet_requirements"] == 1
    assert "unsafe" in Elements(html).by_id("unsafe-cell")["classes"]
    assert sample_main([str(tmp_path / "cli")]) == 0 and (tmp_path / "cli" / "coverage.html").is_file()


def test_columns_are_ordered_kill_then_power_phases_then_unknown(tmp_path: Path) -> None:
    view = make_view()
    view["boundary_matrix"]["2→3"]["power:zzz-new"] = {"lost": 1}
    view["boundary_matrix"]["2→3"]["power:no-log"] = {"lost": 1}
    _, _, html, _ = render(tmp_path, view)
    page = Elements(html)
    table_start = page.all.index(page.by_id("coverage-matrix"))
    phases = [e["attrs"]["title"] for e in page.all[table_start:] if "phase" in e["classes"]]
    first_matrix = phases[: len(phases) // 2]
    assert first_matrix == ["power:no-log", "power:unsynced-dropped", "power:torn", "power:synced", "power:zzz-new"]


def test_rows_and_torn_classes_follow_the_exported_order(tmp_path: Path) -> None:
    view = make_view()
    view["cell_states"]["boundary"]["zzz-new"] = {"kill": {"possible": 1, "explored": 1}}
    view["cell_states"]["barrier"]["explicit flush"] = {"power:zzz-new": {"possible": 1, "explored": 1}}
    view["torn_classes"]["aaa-new"] = 1
    _, _, html, _ = render(tmp_path, view)
    page = Elements(html)
    rows = [e["text"] for e in page.all if e["tag"] == "th" and "rowhead" in e["classes"]]
    assert rows[:7] == [*BOUNDARIES, "no call", "zzz-new"], "states-only rows follow the boundaries"
    phases = [e["attrs"]["title"] for e in page.all[page.all.index(page.by_id("coverage-matrix")) :] if "phase" in e["classes"]]
    assert phases[-1] == "power:zzz-new", "a phase known only from cell_states still gets a column, after the known ones"
    torn = page.by_id("torn-classes")
    cells = [e["text"] for e in page.all[page.all.index(torn) :] if e["tag"] == "code"][: len(TORN_CLASSES) + 1]
    assert cells == [*TORN_CLASSES, "aaa-new"]


# -- crash states per cell, headline totals, kill matrix ----------------------------------


def matrix_cell(page: Elements, row: str, col: str, table: str = "coverage-matrix") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``td`` of one matrix cell and the elements inside it."""
    start = page.all.index(page.by_id(table))
    cell = next(e for e in page.all[start:] if e["attrs"].get("data-row") == row and e["attrs"].get("data-col") == col)
    i = page.all.index(cell)
    inside = []
    for e in page.all[i + 1 :]:
        if e["tag"] in ("td", "th", "tr"):
            break
        inside.append(e)
    return cell, inside


def test_cells_show_outcomes_and_explored_over_possible_states(tmp_path: Path) -> None:
    _, md, html, _ = render(tmp_path, make_view())
    page = Elements(html)
    cell, inside = matrix_cell(page, "2→3", "kill")
    assert [e["text"] for e in inside if "chip" in e["classes"]] == ["UNK 5"]
    states = [e for e in inside if "states" in e["classes"]]
    assert [e["text"] for e in states] == ["5/5 states"] and "sampled" not in states[0]["classes"] and "sampled" not in cell["classes"]
    assert (cell["attrs"]["data-explored"], cell["attrs"]["data-possible"]) == ("5", "5")

    # Fewer explored than possible: the cell and its states line are marked as sampled.
    cell, inside = matrix_cell(page, "2→3", "power:torn")
    assert "sampled" in cell["classes"] and (cell["attrs"]["data-explored"], cell["attrs"]["data-possible"]) == ("300", "1024")
    states = [e for e in inside if "states" in e["classes"]]
    assert [e["text"] for e in states] == ["300/1,024 sampled"] and "sampled" in states[0]["classes"]
    assert "300 of the 1,024" in states[0]["attrs"]["title"]
    assert [e["text"] for e in inside if "chip" in e["classes"]] == ["UNK 1"]
    cell, _ = matrix_cell(page, "tools/execute", "power:torn", "barrier-matrix")
    assert "sampled" in cell["classes"] and cell["text"] == "UNK 1" + "300/1,024 sampled"

    # States without outcomes ("no call" row), outcomes without states (fuzz only), neither.
    cell, inside = matrix_cell(page, "no call", "kill")
    assert cell["text"] == "2/2 states" and not [e for e in inside if "chip" in e["classes"]]
    cell, _ = matrix_cell(page, "after 4", "kill")
    assert cell["text"] == "closed 6" and "data-possible" not in cell["attrs"]
    cell, _ = matrix_cell(page, "no call", "power:synced")
    assert cell["text"] == "·" and "empty" in cell["classes"]

    # Row and column totals add the states up too (rows "all" column, then the "all" row).
    row_2_3 = next(e for e in page.all if e["tag"] == "tr" and e["text"].startswith("2→3"))
    assert "305/1,029 sampled" in row_2_3["text"]
    assert "2→3 | UNK 5 (5/5 states) |" in md
    assert "| UNK 1 (300/1,024 **sampled**) |" in md
    assert any(line.startswith("| no call | (2/2 states) |") for line in md.splitlines())
    assert "(311/1,035 **sampled**) |" in md, "barrier matrix grand total"
    legend = [e["text"] for e in page.with_class("legend")]
    assert all("crash states explored / possible" in t for t in legend)


def test_view_without_cell_states_renders_as_before(tmp_path: Path) -> None:
    view = make_view()
    del view["cell_states"], view["sampled"]
    _, md, html, doc = render(tmp_path, view)
    page = Elements(html)
    assert not page.with_class("states") and "no call" not in page.by_id("coverage-matrix")["text"]
    assert headline_value(page, "states") == "—" and "no systematic exploration" in page.by_id("headline-states")["text"]
    assert any(line.startswith("| 1→2 | NS 3 · lost 1 |") for line in md.splitlines())
    assert doc["summary"]["crash_states_possible"] == 0 and doc["summary"]["crash_states_exhaustive"] is False


def test_headline_sums_crash_states_over_the_barrier_cells(tmp_path: Path) -> None:
    _, md, html, doc = render(tmp_path, make_view())
    page = Elements(html)
    # 7 + 1,024 + 4 possible, 7 + 300 + 4 explored: each state once (barrier matrix), not
    # once per boundary (the coverage matrix would count 1,035 too here, but need not).
    assert headline_value(page, "states") == "311/1,035"
    card = page.by_id("headline-states")
    assert "warn" in card["classes"] and "alarm" not in card["classes"]
    assert "not exhaustive: 1 of 3 cells and 1 named point(s) below possible; sampled at 3 recorded point(s)" in card["text"]
    assert "- **crash states explored / possible**: 311/1,035 (not exhaustive: 1 of 3 cells" in md

    exhaustive = make_view()
    exhaustive["cell_states"]["barrier"]["tools/execute"]["power:torn"]["explored"] = 1024
    exhaustive["cell_states"]["boundary"]["2→3"]["power:torn"]["explored"] = 1024
    exhaustive["sampled"] = {}
    exhaustive["points"]["fs.write"]["explored"] = 10
    _, md, html, doc = render(tmp_path / "exhaustive", exhaustive)
    page = Elements(html)
    assert headline_value(page, "states") == "1,035/1,035" and "warn" not in page.by_id("headline-states")["classes"]
    assert (
        "exhaustive: every crash state the model allows was checked (torn lengths grouped by codec-aware class)"
        in page.by_id("headline-states")["text"]
    )
    assert doc["summary"]["crash_states_exhaustive"] is True and not page.with_class("sampled", "td")
    exhaustive["points"]["fs.write"]["explored"] = 9  # a point cut short is not exhaustive either
    _, _, html, doc = render(tmp_path / "cut-short", exhaustive)
    assert (
        doc["summary"]["crash_states_exhaustive"] is False
        and "not exhaustive: 1 named point(s) below possible" in Elements(html).by_id("headline-states")["text"]
    )


def test_named_points_show_where_states_were_sampled(tmp_path: Path) -> None:
    _, md, html, _ = render(tmp_path, make_view())
    page = Elements(html)
    header = [e["text"] for e in page.all[page.all.index(page.by_id("points")) :] if e["tag"] == "th"][:6]
    assert header == ["point", "layer", "explored/possible", "sampled at", "hits (fuzz)", "what happens there"]
    row = next(e for e in page.all if e["attrs"].get("data-point") == "fs.write")
    assert row["text"].startswith("fs.writefs7/10390")
    assert "| llm.request | runtime | 4/4 | — | 0 |" in md


def test_kill_matrix_has_a_column_per_method(tmp_path: Path) -> None:
    _, md, html, _ = render(tmp_path, make_view())
    page = Elements(html)
    table = page.by_id("kill-matrix")
    start = page.all.index(table)
    header = [e["text"] for e in page.all[start:] if e["tag"] == "th"][:8]
    assert header == ["mutant (bug seeded)", "result", "corpus", "explore", "fuzz", "fastest", "time to kill", "shrunk steps"]

    def method_cell(mutant: str, method: str) -> dict[str, Any]:
        row = next(e for e in page.all if e["tag"] == "tr" and e["attrs"].get("data-mutant") == mutant)
        i = page.all.index(row)
        return next(e for e in page.all[i:] if e["tag"] == "td" and e["attrs"].get("data-method") == method)

    fastest = method_cell("skip-fsync", "explore")
    assert {"method", "killed", "fastest"} <= fastest["classes"] and fastest["text"] == "killed 1.5 sacked_events_survive"
    assert "after 3 crash state(s) explored" in fastest["attrs"]["title"]
    fuzz = method_cell("skip-fsync", "fuzz")
    assert "killed" in fuzz["classes"] and "fastest" not in fuzz["classes"] and "3.2 s" in fuzz["text"] and "seq_dense" in fuzz["text"]
    missed = method_cell("skip-fsync", "corpus")
    assert "missed" in missed["classes"] and missed["text"] == "missed 0.8 s"
    assert method_cell("double-result", "explore")["text"] == "not run"
    row = next(e for e in page.all if e["tag"] == "tr" and e["attrs"].get("data-mutant") == "skip-fsync")
    assert "explore1.5 s4scenarios/skip-fsync-explore.json" in row["text"], "fastest, time to kill, shrunk steps, scenario"

    survivor = next(e for e in page.all if e["tag"] == "tr" and e["attrs"].get("data-mutant") == "double-result")
    assert "bad" in survivor["classes"] and "SURVIVED" in survivor["text"]
    assert "tr.bad td { background: var(--red-pale); }" in html and "tr.bad code.ident { color: var(--red)" in html
    why = page.all[page.all.index(page.by_id("sec-kills")) + 2]
    assert (
        "2/3 killed; median time to kill 1.0 s (per method, over the mutants it killed: corpus 0.5 s, explore 1.8 s, fuzz 3.2 s)"
        in why["text"]
    )
    assert headline_value(page, "ttk") == "1.0 s" and headline_value(page, "mutants") == "2/3"

    assert "| mutant | killed | corpus | explore | fuzz | fastest | time to kill | shrunk steps | scenario | description |" in md
    assert (
        "| skip-fsync | yes | missed 0.8 s | **killed** 1.5 s (acked_events_survive) | killed 3.2 s (seq_dense) | explore | 1.5 s | 4 |"
        in md
    )
    assert "| double-result | **SURVIVED** | missed 0.9 s | — | missed 20.0 s | — | — | — | — |" in md
    assert "Median time to kill: 1.0 s (per method: corpus 0.5 s, explore 1.8 s, fuzz 3.2 s). Survivors: **double-result**." in md


def test_kill_rows_without_by_method_still_render(tmp_path: Path) -> None:
    view = make_view()
    for row in view["kill_matrix"]:
        del row["by_method"]
    _, md, html, _ = render(tmp_path, view)
    page = Elements(html)
    assert not [e for e in page.all if "data-method" in e["attrs"]]
    assert "| skip-fsync | yes | explore | 1.5 s | 4 |" in md


def test_kill_rows_of_the_sample_have_the_self_test_shape() -> None:
    selftest = pytest.importorskip("dsh_sim.drivers.selftest", exc_type=ImportError)
    import attrs

    methods = {
        "corpus": selftest.MethodResult(False, 3.1, examples=60),
        "explore": selftest.MethodResult(True, 2.4567, "acked_events_survive", "a.json", 212),
        "fuzz": selftest.MethodResult(True, 8.7, "seq_dense", "b.json", 44, 5),
    }
    real = selftest.KillResult("persist.ack_before_fsync", "d", methods).row()
    ours = sample_kill_row("persist.ack_before_fsync", {k: attrs.asdict(m) for k, m in methods.items()})
    assert {**ours, "description": "d"} == real


def test_sample_view_has_states_sampling_and_per_method_kills() -> None:
    view = sample_view()
    assert view.cell_states["barrier"] and view.cell_states["boundary"] and view.sampled
    assert any(c["explored"] < c["possible"] for cols in view.cell_states["barrier"].values() for c in cols.values())
    assert all(set(k.by_method or {}) == {"corpus", "explore", "fuzz"} for k in view.kill_matrix)
    explored = sum(c["explored"] for cols in view.cell_states["barrier"].values() for c in cols.values())
    assert explored == sum(p.explored or 0 for p in view.points.values()), "cells and points count the same states"


# -- a real browser ------------------------------------------------------------------------


def chromium() -> str | None:
    for name in ("chromium", "/usr/bin/chromium"):
        found = shutil.which(name)
        if found:
            return found
    return None


def run_chromium(*args: str) -> subprocess.CompletedProcess[bytes]:
    """Headless Chromium as root in a container: no sandbox, and nothing that phones home."""
    binary = chromium()
    if binary is None:
        pytest.skip("no chromium binary (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as profile:
        cmd = [
            binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--log-level=3", f"--user-data-dir={profile}", "--hide-scrollbars", "--force-device-scale-factor=1", *args,
        ]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, timeout=180, check=False)
    assert done.returncode == 0, f"chromium exited {done.returncode}: {done.stderr.decode(errors='replace')[-2000:]}"
    return done


def decode_png(data: bytes) -> tuple[int, int, list[bytearray], int]:
    """(width, height, rows, bytes per pixel) of an 8-bit RGB/RGBA PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
    assert ihdr is not None and data[12:16] == b"IHDR", "IHDR must be the first chunk"
    width, height, depth, ctype, _, _, interlace = ihdr
    assert depth == 8 and ctype in (2, 6) and interlace == 0, ihdr
    bpp = 3 if ctype == 2 else 4
    raw, stride = zlib.decompress(b"".join(idat)), width * bpp
    prev, rows = bytearray(stride), []
    for y in range(height):
        base = y * (stride + 1)
        kind_, line = raw[base], bytearray(raw[base + 1 : base + 1 + stride])
        if kind_ == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind_ == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif kind_ == 3:
            for i in range(stride):
                line[i] = (line[i] + ((line[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
        elif kind_ == 4:
            for i in range(stride):
                a, b, c = (line[i - bpp] if i >= bpp else 0), prev[i], (prev[i - bpp] if i >= bpp else 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, rows, bpp


def longest_run(rows: list[bytearray], bpp: int, rgb: tuple[int, int, int]) -> int:
    """Longest horizontal run of exactly this colour: a table cell, not a 5px card border."""
    target, best = bytes(rgb), 0
    for row in rows:
        run = 0
        for x in range(0, len(row), bpp):
            run = run + 1 if row[x : x + 3] == target else 0
            best = max(best, run)
    return best


RED, GREEN = (0xD9, 0x30, 0x25), (0x2E, 0x9B, 0x57)  # --red-bg, --green-bg in style.css


@pytest.mark.browser
def test_chromium_renders_the_matrices(tmp_path: Path) -> None:
    paths = write_report(make_view(unsafe=3), str(tmp_path))
    url = Path(paths["html"]).resolve().as_uri()
    dom = run_chromium("--dump-dom", url).stdout.decode("utf-8")
    page = Elements(dom)
    for id_ in ("coverage-matrix", "barrier-matrix", "confusion-matrix", "requirements", "kill-matrix"):
        assert page.by_id(id_)["tag"] == "table", id_
    cell = page.by_id("unsafe-cell")
    assert "unsafe" in cell["classes"] and cell["text"].strip().startswith("3")
    assert len([e for e in page.all if e["tag"] == "td" and e["attrs"].get("data-col") == "kill"]) >= len(BOUNDARIES)
    sampled = [e for e in page.all if e["tag"] == "td" and "sampled" in e["classes"] and e["attrs"].get("data-col") == "power:torn"]
    assert len(sampled) == 2 and all("300/1,024 sampled" in e["text"] for e in sampled), "one sampled cell per matrix"
    assert page.by_id("headline-states")["text"].startswith("311/1,035")


@pytest.mark.browser
@pytest.mark.parametrize("unsafe", [0, 3])
def test_chromium_screenshot_shows_the_unsafe_cell_colour(tmp_path: Path, unsafe: int) -> None:
    paths = write_report(make_view(unsafe=unsafe), str(tmp_path))
    shot = tmp_path / "shot.png"
    width, height = 1280, 900  # the confusion matrix sits right under the headline
    run_chromium(f"--window-size={width},{height}", f"--screenshot={shot}", Path(paths["html"]).resolve().as_uri())
    data = shot.read_bytes()
    assert len(data) > 10_000 and data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (width, height), "IHDR size is the requested window"
    w, h, rows, bpp = decode_png(data)
    assert (w, h) == (width, height)
    red, green = longest_run(rows, bpp, RED), longest_run(rows, bpp, GREEN)
    if unsafe:
        assert red >= 100, f"unsafe cell not rendered red (longest red run {red}px)"
    else:
        assert red < 100 and green >= 100, f"safe cell not rendered green (red {red}px, green {green}px)"
