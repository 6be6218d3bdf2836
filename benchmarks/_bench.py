"""Small helpers shared by the benchmark scripts (tables, timing).  Not a benchmark itself.

The scripts are run as files (``python benchmarks/bench_x.py``), so this module is found
next to them on ``sys.path``.  Nothing here asserts a timing: benchmarks print figures.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeVar

T = TypeVar("T")


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    """Wall seconds of one call, and its result."""
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def fmt(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if value == 0 or abs(value) >= 1000:
            return f"{value:,.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        if abs(value) >= 0.01:
            return f"{value:.3f}"
        return f"{value:.4f}" if abs(value) >= 0.0001 else f"{value:.2e}"
    return str(value)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> None:
    """A compact left/right-aligned text table (numbers right-aligned)."""
    cells = [[fmt(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    numeric = [bool(rows) and all(isinstance(row[i], (int, float)) or row[i] == "-" for row in rows) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)).rstrip()

    if title:
        print(title)
    print(line(list(headers)))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print(line(row))


def refuse(message: str) -> NoReturn:
    """Bad input to a benchmark script: one line on stderr naming the script, exit 2."""
    print(f"{os.path.basename(sys.argv[0])}: {message}", file=sys.stderr)
    raise SystemExit(2)
