"""Tiny HTML building blocks; every piece of text passes through :func:`esc` here.

Messages, scenario paths and mutant descriptions come from runs that may have failed in
arbitrary ways (a violation message can quote log bytes), so nothing is interpolated into
the page without escaping.  Helpers take *text* and escape it; only the ``raw`` parameters
accept markup, and those are built by these helpers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from dsh_sim.report import model

OUTCOME_CLASS: dict[str, str] = {
    "TOOL_NOT_STARTED": "o-ns",
    "TOOL_OUTCOME_UNKNOWN": "o-unk",
    "closed": "o-closed",
    "lost": "o-lost",
    "not emitted": "o-ne",
    "no call": "o-none",
}


def esc(text: Any) -> str:
    return escape(str(text), quote=True)


def attrs(**values: Any) -> str:
    """Render attributes (``class_`` → ``class``, ``data_x`` → ``data-x``); ``None`` skips one."""
    out = []
    for key, value in values.items():
        if value is None:
            continue
        name = key.rstrip("_").replace("_", "-")
        out.append(f' {name}="{esc(value)}"')
    return "".join(out)


def chip(outcome: str, n: int) -> str:
    cls = OUTCOME_CLASS.get(outcome, "o-lost")
    return f"<span{attrs(class_='chip ' + cls, title=f'{outcome}: {n}')}>{esc(model.SHORT.get(outcome, outcome))} {n}</span>"


def chips(counts: Mapping[str, int]) -> str:
    return "".join(chip(o, n) for o, n in counts.items())


def td(text: Any = "", cls: str | None = None, raw: str | None = None, **extra: Any) -> str:
    return f"<td{attrs(class_=cls, **extra)}>{raw if raw is not None else esc(text)}</td>"


def num(n: Any, cls: str = "") -> str:
    return td(model.fmt_value(n), cls=("num " + cls).strip())


def code(text: Any) -> str:
    """Monospace text that may wrap anywhere (paths, digests)."""
    return f"<code>{esc(text)}</code>"


def ident(text: Any) -> str:
    """An identifier (invariant, mutant, point): monospace, never broken across lines."""
    return f'<code class="ident">{esc(text)}</code>'


def breakable_ident(text: Any) -> str:
    """An identifier in a narrow cell: it may break after ``_`` or ``.`` (nowhere else), so a
    long invariant name does not widen a column past the page."""
    parts = esc(text).replace("_", "_<wbr>").replace(".", ".<wbr>")
    return f'<code class="ident breakable">{parts}</code>'


def pill(text: str, kind: str) -> str:
    return f'<span class="pill {esc(kind)}">{esc(text)}</span>'


def table(
    header: Sequence[str],
    rows: Iterable[str],
    id_: str | None = None,
    cls: str | None = None,
    num_cols: Sequence[int] = (),
    head: str | None = None,
) -> str:
    """A table from escaped header labels and pre-rendered ``<tr>`` rows.

    ``head`` replaces the one header row built from ``header`` with pre-rendered ``<tr>``
    rows, for headers a flat list of labels cannot express (the matrices' grouped columns).
    """
    if head is None:
        labels = "".join(f"<th{attrs(class_='num' if i in num_cols else None)}>{esc(h)}</th>" for i, h in enumerate(header))
        head = f"<tr>{labels}</tr>"
    return f'<div class="scroll"><table{attrs(id=id_, class_=cls)}><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table></div>'


def tr(cells: str, cls: str | None = None, **extra: Any) -> str:
    return f"<tr{attrs(class_=cls, **extra)}>{cells}</tr>"


def section(id_: str, title: str, why: str, body: str) -> str:
    """A report section; ``why`` says in one line what the reader should look for."""
    return f'<section{attrs(id="sec-" + id_)}><h2>{esc(title)}</h2><p class="why">{esc(why)}</p>{body}</section>'


def details(summary: str, body: str, id_: str | None = None) -> str:
    """A long table folded under a one-line summary (closed by default: the headline first)."""
    return f"<details{attrs(id=id_)}><summary>{esc(summary)}</summary>{body}</details>"
