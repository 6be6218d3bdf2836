"""Markdown building blocks shared by the report's sections: escaped cells and pipe tables."""

from __future__ import annotations

from typing import Any


def esc(text: Any) -> str:
    """Keep table structure intact whatever a message contains."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")


def table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(esc(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return out + [""]
