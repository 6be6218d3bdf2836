"""Inline SVG charts, drawn in Python so the HTML report needs no script and no network.

Two shapes cover the report: a *progress* chart (explored out of possible, per named point)
and a *stacked* chart (outcome counts per matrix row).  Both scale to the largest value,
label every bar with its numbers, and escape every label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

# One colour per outcome, shared with the CSS chips of the matrices (see style.css).
OUTCOME_COLORS: dict[str, str] = {
    "TOOL_NOT_STARTED": "#3b6fd4",
    "TOOL_OUTCOME_UNKNOWN": "#e0a526",
    "closed": "#3a9a5b",
    "lost": "#8a8f98",
    "not emitted": "#c4c8cf",
    "no call": "#e3e6ea",
}
_FALLBACK = "#a78bfa"
_FONT = "font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;font-size:12px"


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" style="{_FONT}"><title>{escape(title)}</title>' + "".join(body) + "</svg>"
    )


def progress_chart(rows: Sequence[tuple[str, int, int]], title: str, label_width: int = 190, bar_width: int = 420) -> str:
    """Horizontal bars: ``possible`` as a pale track, ``explored`` filled over it.

    Rows are (label, explored, possible); a row with nothing possible is drawn as an empty
    track labelled "not explored" so unexplored points stand out rather than vanish.
    """
    row_h, top = 20, 6
    scale = max([p for _, _, p in rows] + [e for _, e, _ in rows] + [1])
    width = label_width + bar_width + 130
    body: list[str] = []
    for i, (label, explored, possible) in enumerate(rows):
        y = top + i * row_h
        track = max(2.0, bar_width * possible / scale) if possible else bar_width
        fill = bar_width * min(explored, max(possible, explored)) / scale
        full = possible > 0 and explored >= possible
        body.append(f'<text x="{label_width - 8}" y="{y + 13}" text-anchor="end" fill="#1f2430">{escape(label)}</text>')
        if possible:
            body.append(f'<rect x="{label_width}" y="{y + 3}" width="{track:.1f}" height="13" rx="3" fill="#dfe6f3"/>')
            color = "#3a9a5b" if full else "#3b6fd4"
            body.append(f'<rect x="{label_width}" y="{y + 3}" width="{fill:.1f}" height="13" rx="3" fill="{color}"/>')
            pct = 100.0 * explored / possible
            text = f"{explored}/{possible} ({pct:.0f}%)"
            body.append(f'<text x="{label_width + track + 6:.1f}" y="{y + 13}" fill="#3d4452">{escape(text)}</text>')
        else:
            body.append(
                f'<rect x="{label_width}" y="{y + 3}" width="{track:.1f}" height="13" rx="3" fill="none" stroke="#d5d9e0" stroke-dasharray="3 3"/>'
            )
            body.append(f'<text x="{label_width + 8}" y="{y + 13}" fill="#8a8f98">not explored</text>')
    height = top * 2 + row_h * max(len(rows), 1)
    return _svg(width, height, body, title)


def stacked_chart(
    rows: Sequence[tuple[str, Mapping[str, int]]],
    order: Sequence[str],
    title: str,
    label_width: int = 150,
    bar_width: int = 460,
    required: Sequence[str] = (),
) -> str:
    """Horizontal stacked bars of outcome counts per row, with a legend and totals.

    An empty row is drawn as a dashed track: red ("never hit") when the row is in
    ``required``, grey otherwise.
    """
    row_h, top = 22, 30
    scale = max([sum(c.values()) for _, c in rows] + [1])
    width = label_width + bar_width + 70
    body: list[str] = []
    x = 0.0
    for outcome in order:  # legend
        color = OUTCOME_COLORS.get(outcome, _FALLBACK)
        body.append(f'<rect x="{x:.0f}" y="6" width="11" height="11" rx="2" fill="{color}"/>')
        body.append(f'<text x="{x + 15:.0f}" y="16" fill="#3d4452">{escape(outcome)}</text>')
        x += 30 + sum(8.4 if ch.isupper() or ch == "_" else 6.6 for ch in outcome)
    for i, (label, counts) in enumerate(rows):
        y = top + i * row_h
        body.append(f'<text x="{label_width - 8}" y="{y + 14}" text-anchor="end" fill="#1f2430">{escape(label)}</text>')
        total = sum(counts.values())
        if not total:
            stroke, ink = ("#e0a0a0", "#b3261e") if label in required else ("#d5d9e0", "#8a8f98")
            body.append(
                f'<rect x="{label_width}" y="{y + 3}" width="{bar_width}" height="15" rx="3" fill="none" stroke="{stroke}" stroke-dasharray="3 3"/>'
            )
            body.append(f'<text x="{label_width + 8}" y="{y + 14}" fill="{ink}">never hit</text>')
            continue
        x = float(label_width)
        for outcome in list(order) + sorted(set(counts) - set(order)):
            n = counts.get(outcome, 0)
            if not n:
                continue
            w = bar_width * n / scale
            color = OUTCOME_COLORS.get(outcome, _FALLBACK)
            body.append(
                f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="15" fill="{color}"><title>{escape(f"{label}: {outcome} {n}")}</title></rect>'
            )
            x += w
        body.append(f'<text x="{x + 6:.1f}" y="{y + 14}" fill="#3d4452">{total}</text>')
    height = top + row_h * max(len(rows), 1) + 6
    return _svg(width, height, body, title)
