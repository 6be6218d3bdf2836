"""The crash-coverage report: coverage.json, coverage.md and coverage.html from one view.

Input is the view returned by :func:`dsh_sim.evidence.coverage.aggregate` (a
:class:`~dsh_sim.evidence.view.CoverageView`, or its JSON).  The three files say
the same thing for three readers: ``coverage.json`` for CI gates and later tooling (stable,
sorted, versioned by ``schema``), ``coverage.md`` for logs and PR comments, and
``coverage.html`` for a maintainer deciding whether recovery is sound — self-contained, so
it opens from a downloaded CI artifact with no network.

All three are deterministic functions of the view (no timestamps, no host names), so the
report of a deterministic run is itself reproducible and diffable.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import attrs

from dsh_sim.evidence.coverage import requirement_status
from dsh_sim.evidence.document import unstructure
from dsh_sim.evidence.view import CoverageView, Requirement, as_view
from dsh_sim.outputs import ensure_output_dir, write_replacing
from dsh_sim.report.headline import Summary, summary
from dsh_sim.report.markdown import render_markdown
from dsh_sim.report.page import render_html

# Bump when a key of coverage.json changes meaning or disappears (adding keys is compatible).
SCHEMA = 1
_ADDED = ("schema", "summary", "requirements")


@attrs.frozen(kw_only=True)
class CoverageDocument:
    """coverage.json as a value: the view plus what the report derives from it."""

    view: CoverageView
    schema: int
    summary: Summary
    requirements: tuple[Requirement, ...]

    @property
    def unmet(self) -> tuple[Requirement, ...]:
        return tuple(r for r in self.requirements if not r.met)

    def to_json(self) -> dict[str, Any]:
        """coverage.json's content: the view's keys, then ``schema``, ``summary`` and ``requirements``."""
        return {
            **unstructure(self.view),
            "schema": self.schema,
            "summary": unstructure(self.summary),
            "requirements": [unstructure(r) for r in self.requirements],
        }


def _json_default(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return str(value)


def coverage_document(view: CoverageView | Mapping[str, Any]) -> CoverageDocument:
    """The view plus what the report derives from it: requirement status, summary, schema."""
    clash = [k for k in _ADDED if not isinstance(view, CoverageView) and k in view]
    if clash:
        raise ValueError(f"coverage view already has report keys {clash}; bump the schema instead of overwriting")
    typed = as_view(view)
    status = requirement_status(typed)
    return CoverageDocument(view=typed, schema=SCHEMA, summary=summary(typed, status), requirements=status)


def to_json(document: Mapping[str, Any]) -> str:
    return json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False, default=_json_default) + "\n"


def _write(path: str, text: str) -> None:
    write_replacing(path, text)  # never through a symbolic link planted at the report's name


def write_report(view: CoverageView | Mapping[str, Any], out_dir: str) -> dict[str, str]:
    """Write coverage.json, coverage.md and coverage.html into ``out_dir`` (created if needed).

    Returns the paths by format: ``{"json": ..., "md": ..., "html": ...}``.  The view is not
    modified.
    """
    return write_coverage(view, out_dir)[1]


def write_coverage(view: CoverageView | Mapping[str, Any], out_dir: str) -> tuple[CoverageDocument, dict[str, str]]:
    """:func:`write_report`, also returning the coverage document it wrote, so a caller reads
    the requirement status and summary there instead of deriving them again."""
    document = coverage_document(view)
    status, typed = document.requirements, document.view
    texts = {
        "json": to_json(document.to_json()),
        "md": render_markdown(typed, status, document.summary),
        "html": render_html(typed, status, SCHEMA, document.summary),
    }
    ensure_output_dir(out_dir)  # everything rendered first: a failure writes nothing
    paths = {fmt: os.path.join(out_dir, f"coverage.{fmt}") for fmt in texts}
    for fmt, text in texts.items():
        _write(paths[fmt], text)
    return document, paths


__all__ = [
    "SCHEMA",
    "CoverageDocument",
    "coverage_document",
    "render_html",
    "render_markdown",
    "to_json",
    "write_coverage",
    "write_report",
]
