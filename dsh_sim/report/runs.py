"""Where the report's numbers came from: the result documents (runs), collapsed one row per kind,
their seeds and seconds, and the campaign runs' own records (wall and CPU time per phase).

Apart from :mod:`dsh_sim.report.model` (the matrices and tables) because the time a report
states has two sources that must not be confused: a campaign's own clock when the results
hold one, else the documents' seconds added up (not the wall time of a run).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from dsh_sim.evidence.document import CampaignRecord, Meta
from dsh_sim.evidence.view import CoverageView
from dsh_sim.report.model import ordered

_NO_META = Meta()


def runs_of(view: CoverageView) -> list[Meta]:
    """Run metadata worth showing (a document without meta is no run)."""
    return [r for r in view.runs if r != _NO_META]


RUN_COLUMNS = ("kind", "runs", "machine", "scenarios", "examples", "steps", "states", "seeds", "seconds")


@attrs.frozen(kw_only=True)
class RunRow:
    """The runs of one kind (and machine): how many, what they covered, their seeds and time;
    a count no run of the kind gave is ``None`` (its column is left out when no row has it)."""

    kind: str
    runs: int
    seeds: tuple[Any, ...] | None
    seconds: float
    machine: str | None = None
    scenarios: int | None = None
    examples: int | None = None
    steps: int | None = None
    states: int | None = None

    def value(self, column: str) -> Any:
        """The value under one of :data:`RUN_COLUMNS`."""
        return getattr(self, column)


_EVERY_ROW = ("kind", "runs", "seeds", "seconds")  # columns listed even when empty ("—")


def run_columns(runs: Sequence[RunRow]) -> list[str]:
    """The columns of the collapsed Runs table: those every row has, and the counts some row gives."""
    return [k for k in RUN_COLUMNS if runs and (k in _EVERY_ROW or any(r.value(k) is not None for r in runs))]


def _covered(runs: Iterable[Meta], name: str) -> int | None:
    """The sum of one count over the runs that give it (None: none does); an explore run of one
    scenario counts it."""
    total: int | None = None
    for r in runs:
        n = getattr(r, name)
        if isinstance(n, int):
            total = (total or 0) + n
        if name == "scenarios" and r.kind == "explore" and r.scenario:
            total = (total or 0) + 1
    return total


def collapsed_runs(runs: list[Meta]) -> list[RunRow]:
    """One row per kind of run (and machine): how many, what they covered, seeds, time."""
    groups: dict[tuple[str, str], list[Meta]] = {}
    for r in runs:
        groups.setdefault((r.kind if r.kind is not None else "?", r.machine or ""), []).append(r)
    rows = []
    for (kind, machine), members in groups.items():
        seconds = 0.0
        for r in members:
            if isinstance(r.seconds, int | float):
                seconds += r.seconds
        rows.append(
            RunRow(
                kind=kind,
                runs=len(members),
                seeds=tuple(seeds(members)) or None,
                seconds=round(seconds, 3),
                machine=machine or None,
                scenarios=_covered(members, "scenarios"),
                examples=_covered(members, "examples"),
                steps=_covered(members, "steps"),
                states=_covered(members, "states"),
            )
        )
    return rows


def seeds(runs: list[Meta]) -> list[Any]:
    """Every distinct seed of the runs, in first-seen order (runs often share seeds); a run
    of several seeds lists them under ``seeds`` (no field of its meta)."""
    out: list[Any] = []
    for r in runs:
        for value in (r.seed, r.extra.get("seeds")):
            for seed in value if isinstance(value, (list, tuple)) else [value]:
                if seed is not None and seed not in out:
                    out.append(seed)
    return out


def total_seconds(runs: list[Meta]) -> float:
    return float(sum(r.seconds or 0 for r in runs if isinstance(r.seconds, (int, float))))


def campaigns(view: CoverageView) -> tuple[CampaignRecord, ...]:
    """Each campaign run's own record (run id, seed, command line, time per phase)."""
    return view.campaigns


def time_spent(view: CoverageView) -> tuple[float, float | None]:
    """Wall and CPU seconds: the campaign runs' own (as their terminals said) when the results
    hold them; else the documents' ``seconds`` summed (CPU unknown: None)."""
    camps = campaigns(view)
    if camps:
        return float(sum(c.wall_seconds for c in camps)), float(sum(c.cpu_seconds for c in camps))
    return total_seconds(runs_of(view)), None


PHASE_ORDER = ("replay", "explore", "fuzz", "mutants", "dsh")


@attrs.frozen(kw_only=True)
class PhaseRow:
    """One phase over the campaign runs: wall, CPU and tasks, or why it was skipped (no times)."""

    phase: str
    wall_seconds: float | None
    cpu_seconds: float | None
    tasks: int
    skipped: str | None = None


def phase_rows(view: CoverageView) -> list[PhaseRow]:
    """Per phase over the campaign runs: wall, CPU, tasks, or why it was skipped."""
    ran: dict[str, list[float]] = {}  # phase -> wall, CPU, tasks (summed in the runs' order)
    skipped: dict[str, str] = {}
    for c in campaigns(view):
        for kind, p in c.phases.items():
            sums = ran.setdefault(kind, [0.0, 0.0, 0])
            sums[0] += p.wall_seconds
            sums[1] += p.cpu_seconds
            sums[2] += p.tasks
        for kind, why in c.skipped.items():
            if kind not in ran and kind not in skipped:
                skipped[kind] = str(why)
    rows = {kind: PhaseRow(phase=kind, wall_seconds=w, cpu_seconds=cpu, tasks=int(n)) for kind, (w, cpu, n) in ran.items()}
    for kind, why in skipped.items():
        rows.setdefault(kind, PhaseRow(phase=kind, wall_seconds=None, cpu_seconds=None, tasks=0, skipped=why))
    return [rows[k] for k in ordered(PHASE_ORDER, rows) if k in rows]


def phase_tasks(row: PhaseRow) -> str:
    """A phase row's task count; the DSH phase is no task (the submitter runs it)."""
    return "— (the submitter)" if row.phase == "dsh" else str(row.tasks)


__all__ = [
    "PHASE_ORDER",
    "RUN_COLUMNS",
    "PhaseRow",
    "RunRow",
    "campaigns",
    "collapsed_runs",
    "phase_rows",
    "phase_tasks",
    "run_columns",
    "runs_of",
    "seeds",
    "time_spent",
    "total_seconds",
]
