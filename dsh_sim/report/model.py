"""What the report shows, derived once from a coverage view so Markdown and HTML agree.

The renderers only lay out what this module computes: row and column order of the
matrices, the headline numbers (and which of them are alarms), the named-point table, and
a generic flattening of run metadata.  Keeping the arithmetic here means a number in
``coverage.md`` can never differ from the same number in ``coverage.html``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dsh_sim.engine.points import POINTS
from dsh_sim.engine.vocabulary import BARRIERS, BOUNDARIES, OUTCOMES, PHASES, TORN_CLASSES
from dsh_sim.evidence.coverage import REQUIREMENTS
from dsh_sim.evidence.invariants import INVARIANTS
from dsh_sim.evidence.results import DeterminismCounts, determinism_counts, determinism_text
from dsh_sim.report import kills as kill_model
from dsh_sim.report import states

Matrix = Mapping[str, Mapping[str, Mapping[str, int]]]
# One matrix cell as the renderers show it: outcome counts, then crash states (if counted).
Cell = tuple[dict[str, int], "states.States | None"]

# Outcomes in reading order; "no call" appears only in the barrier matrix (a crash with no
# tool call in flight), and is listed last so the verdict columns line up in both matrices.
CELL_OUTCOMES: tuple[str, ...] = OUTCOMES + ("no call",)
SHORT: dict[str, str] = {
    "TOOL_NOT_STARTED": "NS",
    "TOOL_OUTCOME_UNKNOWN": "UNK",
    "closed": "closed",
    "lost": "lost",
    "not emitted": "n/e",
    "no call": "none",
}
BARRIER_ROWS: tuple[str, ...] = BARRIERS + ("explicit flush", "outside barriers")
TORN_REQUIRED: tuple[str, ...] = tuple(row for kind, row, _ in REQUIREMENTS if kind == "torn")
UNSAFE = ("TOOL_NOT_STARTED", "applied")


def _ordered(known: Iterable[str], present: Iterable[str]) -> list[str]:
    """Known names in their canonical order, then any unexpected name, sorted."""
    known = list(known)
    extra = sorted(set(present) - set(known))
    return known + extra


def columns(*matrices: Matrix) -> list[str]:
    """Crash columns present in any of the matrices (shared so both tables line up).

    Kill first, then the power phases from "nothing of the log survived" to "everything
    did" (coverage.PHASES, the order a maintainer reads a row in); unknown phases follow.
    """
    present = {col for m in matrices for cols in m.values() for col in cols}
    present.add("kill")
    return [c for c in _ordered(PHASES, present) if c in present]


def matrix_columns(view: Mapping[str, Any]) -> list[str]:
    """Columns shared by both matrices: any crash column with outcomes or crash states."""
    keys = ("boundary_matrix", "barrier_matrix")
    return columns(*(view.get(k, {}) for k in keys), *(states.matrix(view, k) for k in keys))


def _rows(view: Mapping[str, Any], key: str, always: Iterable[str], optional: Iterable[str] = ()) -> list[str]:
    """Rows with outcomes or crash states: ``always`` in order (even empty), then the rest."""
    present = set(view.get(key, {})) | set(states.matrix(view, key))
    fixed = list(always)
    return [r for r in _ordered(fixed + list(optional), present) if r in fixed or r in present]


def boundary_rows(view: Mapping[str, Any]) -> list[str]:
    # Every boundary is listed even when empty: an empty row is exactly what must be seen.
    # A crash state with no call in flight has no boundary; exploration files it under
    # "no call", listed after the boundaries when present.
    return _rows(view, "boundary_matrix", BOUNDARIES, ("no call",))


def barrier_rows(view: Mapping[str, Any]) -> list[str]:
    return _rows(view, "barrier_matrix", BARRIER_ROWS)


def ordered_counts(raw: Mapping[str, int]) -> dict[str, int]:
    """Outcome counts in reading order, zero counts dropped."""
    return {o: int(raw[o]) for o in _ordered(CELL_OUTCOMES, raw) if raw.get(o)}


def summed(cells: Iterable[Mapping[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for counts in cells:
        for outcome, n in counts.items():
            out[outcome] = out.get(outcome, 0) + n
    return ordered_counts(out)


def cell(matrix: Matrix, row: str, col: str) -> dict[str, int]:
    return ordered_counts(matrix.get(row, {}).get(col, {}))


def row_total(matrix: Matrix, row: str) -> dict[str, int]:
    return summed(matrix.get(row, {}).values())


def col_total(matrix: Matrix, col: str) -> dict[str, int]:
    return summed(cols.get(col, {}) for cols in matrix.values())


@dataclass(frozen=True)
class GridRow:
    """One laid-out matrix row: its name, a cell per column, and the row total."""

    name: str
    cells: list[Cell]
    total: Cell


@dataclass(frozen=True)
class Grid:
    """A crash matrix with its totals, computed once for both renderers."""

    rows: list[GridRow]
    col_totals: list[Cell]  # over every row of the matrix, listed or not
    total: Cell  # over the listed rows


def matrix_grid(view: Mapping[str, Any], key: str, rows: list[str], cols: list[str]) -> Grid:
    """Every cell, row total, column total and the grand total of one crash matrix."""
    data, sdata = view.get(key, {}), states.matrix(view, key)
    grid_rows = [
        GridRow(r, [(cell(data, r, c), states.cell(sdata, r, c)) for c in cols], (row_total(data, r), states.row_total(sdata, r)))
        for r in rows
    ]
    col_totals: list[Cell] = [(col_total(data, c), states.col_total(sdata, c)) for c in cols]
    total: Cell = (summed(row.total[0] for row in grid_rows), states.summed(row.total[1] for row in grid_rows))
    return Grid(grid_rows, col_totals, total)


def unsafe_count(view: Mapping[str, Any]) -> int:
    return int(view.get("confusion", {}).get(UNSAFE[0], {}).get(UNSAFE[1], 0))


def point_rows(view: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every declared named point (and any undeclared one the view mentions) with its counts.

    Declared points are all listed, so a point nobody explored or hit shows as a gap
    instead of silently missing from the report.
    """
    seen = view.get("points", {})
    rows = []
    for name in _ordered(POINTS, set(seen) | set(view.get("sampled", {}))):
        counts = seen.get(name, {})
        spec = POINTS.get(name)
        rows.append(
            {
                "name": name,
                "layer": spec.layer if spec else "?",
                "doc": spec.doc if spec else "undeclared point",
                "possible": int(counts.get("possible", 0)),
                "explored": int(counts.get("explored", 0)),
                "hits": int(counts.get("hits", 0)),
                "sampled": int(view.get("sampled", {}).get(name, 0)),
            }
        )
    return rows


DSH_INVARIANTS = ("dsh_agrees", "route_agrees")  # judged only by a DSH phase (DSH's reader, DSH's route)


def dsh_not_run(view: Mapping[str, Any]) -> str | None:
    """Why the DSH invariants judged nothing here (None: a DSH phase ran)."""
    dsh = view.get("dsh")
    if dsh is None:
        return "no DSH phase in these results"
    if dsh.get("skipped"):
        return f"DSH phase skipped: {dsh['skipped']}"
    return None


def invariant_rows(view: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per invariant: checks and violations; ``not_run`` says why an invariant only a
    phase that did not run can judge has no checks (0 checks, 0 violations is not a pass)."""
    checked = view.get("checked", {})
    failed: dict[str, int] = {}
    for v in view.get("violations", []):
        failed[v.get("invariant", "?")] = failed.get(v.get("invariant", "?"), 0) + 1
    names = _ordered(INVARIANTS, set(checked) | set(failed))
    absent = dsh_not_run(view)
    rows = []
    for n in names:
        checks, violations = int(checked.get(n, 0)), failed.get(n, 0)
        not_run = absent if n in DSH_INVARIANTS and not checks and not violations else None
        rows.append({"name": n, "description": INVARIANTS.get(n, ""), "checks": checks, "violations": violations, "not_run": not_run})
    return rows


def torn_rows(view: Mapping[str, Any]) -> list[tuple[str, int, bool]]:
    """(class, count, required) for every known class in codec order, then unknown ones."""
    torn = view.get("torn_classes", {})
    return [(c, int(torn.get(c, 0)), c in TORN_REQUIRED) for c in _ordered(TORN_CLASSES, torn)]


def fmt_value(value: Any) -> str:
    """Render any metadata value compactly and deterministically."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if value else "0"
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt_value(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return str(value)


def fmt_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{int(minutes)} min {secs:.0f} s"
    hours, minutes = divmod(minutes, 60)
    return f"{int(hours)} h {int(minutes)} min"


def runs_of(view: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Run metadata worth showing: aggregate() records ``{}`` for a document without meta."""
    return [r for r in view.get("runs", []) if r]


RUN_COLUMNS = ("kind", "runs", "machine", "scenarios", "examples", "steps", "states", "seeds", "seconds")


def run_columns(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The columns of the collapsed Runs table (those some row has)."""
    present = {k for r in runs for k in r}
    return [k for k in RUN_COLUMNS if k in present]


def collapsed_runs(runs: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per kind of run (and machine): how many, what they covered, seeds, time."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for r in runs:
        key = (str(r.get("kind", "?")), str(r.get("machine", "")))
        row = rows.setdefault(key, {"kind": key[0], "runs": 0, "seeds": [], "seconds": 0.0})
        if key[1]:
            row["machine"] = key[1]
        row["runs"] += 1
        for name in ("scenarios", "examples", "steps", "states"):
            if isinstance(r.get(name), int):
                row[name] = row.get(name, 0) + r[name]
        if r.get("kind") == "explore" and r.get("scenario"):
            row["scenarios"] = row.get("scenarios", 0) + 1
        if isinstance(r.get("seconds"), int | float):
            row["seconds"] += r["seconds"]
        for seed in seeds([r]):
            if seed not in row["seeds"]:
                row["seeds"].append(seed)
    for row in rows.values():
        row["seconds"] = round(row["seconds"], 3)
        row["seeds"] = row["seeds"] or None
    return list(rows.values())


def seeds(runs: list[Mapping[str, Any]]) -> list[Any]:
    """Every distinct seed of the runs, in first-seen order (runs often share seeds)."""
    out: list[Any] = []
    for r in runs:
        for key in ("seed", "seeds"):
            value = r.get(key)
            for seed in value if isinstance(value, (list, tuple)) else [value]:
                if seed is not None and seed not in out:
                    out.append(seed)
    return out


def total_seconds(runs: list[Mapping[str, Any]]) -> float:
    return float(sum(r.get("seconds") or 0 for r in runs if isinstance(r.get("seconds"), (int, float))))


def campaigns(view: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Each campaign run's own record (run id, seed, command line, time per phase)."""
    return [c for c in view.get("campaigns", []) if isinstance(c, Mapping)]


def time_spent(view: Mapping[str, Any]) -> tuple[float, float | None]:
    """Wall and CPU seconds: the campaign runs' own (as their terminals said) when the results
    hold them; else the documents' ``seconds`` summed (CPU unknown: None)."""
    camps = campaigns(view)
    if camps:
        return float(sum(c.get("wall_seconds", 0) for c in camps)), float(sum(c.get("cpu_seconds", 0) for c in camps))
    return total_seconds(runs_of(view)), None


PHASE_ORDER = ("replay", "explore", "fuzz", "mutants", "dsh")


def phase_rows(view: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per phase over the campaign runs: wall, CPU, tasks, or why it was skipped."""
    rows: dict[str, dict[str, Any]] = {}
    for c in campaigns(view):
        for kind, p in c.get("phases", {}).items():
            row = rows.setdefault(kind, {"phase": kind, "wall_seconds": 0.0, "cpu_seconds": 0.0, "tasks": 0, "skipped": None})
            for key in ("wall_seconds", "cpu_seconds", "tasks"):
                row[key] += p.get(key, 0)
        for kind, why in c.get("skipped", {}).items():
            if kind not in rows:
                rows[kind] = {"phase": kind, "wall_seconds": None, "cpu_seconds": None, "tasks": 0, "skipped": str(why)}
    return [rows[k] for k in _ordered(PHASE_ORDER, rows) if k in rows]


def subtitle(view: Mapping[str, Any], numbers: Mapping[str, Any]) -> str:
    """What the report is made of: crash cases, result documents, and the campaign runs they
    came from (a campaign's tasks are documents of one run, not runs)."""
    docs = int(view.get("result_documents", len(runs_of(view))))
    camp_ids = {c.get("run") for c in campaigns(view)}
    run_ids = {r.get("run") for r in runs_of(view) if isinstance(r.get("run"), str)} | camp_ids
    base = f"{numbers['cases']:,} crash cases from {docs} result document(s)"
    return f"{base} of {len(run_ids)} campaign run(s)" if run_ids else base


def phase_tasks(row: Mapping[str, Any]) -> str:
    """A phase row's task count; the DSH phase is no task (the submitter runs it)."""
    return "— (the submitter)" if row["phase"] == "dsh" else str(row["tasks"])


def determinism(view: Mapping[str, Any]) -> DeterminismCounts:
    return determinism_counts(view.get("determinism", []))


def determinism_words(view: Mapping[str, Any]) -> str:
    """The same words as the run's summary line (campaign/summary.py)."""
    return determinism_text(determinism(view))


def headline(view: Mapping[str, Any], numbers: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The numbers at the top of the report; ``alarm`` marks the ones that must be zero.

    ``numbers`` is :func:`summary` of the same view, so the page shows exactly what
    coverage.json gates on; only "time spent" reads the runs again, unrounded.
    """
    determinism = view.get("determinism", [])
    st = states.totals(view)  # for the note: which cells and points fell short
    possible, explored = numbers["crash_states_possible"], numbers["crash_states_explored"]
    unmet, unsafe, kills, killed = numbers["unmet_requirements"], numbers["unsafe_verdicts"], numbers["mutants"], numbers["mutants_killed"]
    by_source = view.get("cases_by_source", {})
    parts = " + ".join(f"{n:,} {source}" for source, n in sorted(by_source.items()))
    items: list[dict[str, Any]] = [
        {
            "label": "crash cases",
            "value": fmt_value(numbers["cases"]),
            "alarm": False,
            "key": "cases",
            "note": "one per crash followed by a recovery"
            + (f" = {parts}" if parts else "")
            + "; explore counts every explored state, shared recoveries included. The boundary matrix counts calls in flight, not cases",
        },
        {
            "label": "crash states explored / possible",
            "value": f"{explored:,}/{possible:,}" if possible else "—",
            "alarm": False,
            "key": "states",
            "note": states.headline_note(st),
            "warn": bool(possible) and not numbers["crash_states_exhaustive"],
        },
        {"label": "violations", "value": str(numbers["violations"]), "alarm": numbers["violations"] > 0, "key": "violations"},
        {"label": "unmet requirements", "value": str(unmet), "alarm": unmet > 0, "key": "unmet"},
        {"label": "unsafe verdicts", "value": str(unsafe), "alarm": unsafe > 0, "key": "unsafe"},
        {
            "label": "invariant checks",
            "value": str(numbers["invariant_checks"]),
            "alarm": False,
            "key": "checks",
            "note": "evaluations of an invariant in replay and fuzz runs (explore judges each distinct recovery with the same checks, not counted here)",
        },
    ]
    if kills:
        items.append({"label": "mutants killed", "value": f"{killed}/{kills}", "alarm": killed < kills, "key": "mutants"})
        items.append({"label": "median time to kill", "value": fmt_seconds(numbers["median_time_to_kill"]), "alarm": False, "key": "ttk"})
    if determinism:
        diverged = numbers["determinism_diverged"]
        items.append(
            {
                "label": "determinism",
                "value": f"{diverged} DIFFER" if diverged else "all same",
                "alarm": diverged > 0,
                "key": "determinism",
                "note": determinism_words(view),
            }
        )
    wall, cpu = time_spent(view)
    items.append(
        {
            "label": "time spent",
            "value": fmt_seconds(wall),
            "alarm": False,
            "key": "seconds",
            "note": f"wall time of the run (CPU {fmt_seconds(cpu)})"
            if cpu is not None
            else "the result documents' own seconds, added up (no campaign record: not the wall time of a run)",
        }
    )
    return items


def summary(view: Mapping[str, Any], status: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Machine-readable headline for coverage.json (what CI gates on); :func:`headline` shows it."""
    kills = view.get("kill_matrix", [])
    st = states.totals(view)
    return {
        "cases": int(view.get("cases", 0)),
        "crash_states_possible": st["possible"],
        "crash_states_explored": st["explored"],
        "crash_states_exhaustive": st["exhaustive"],
        "violations": len(view.get("violations", [])),
        "unmet_requirements": sum(1 for s in status if not s["met"]),
        "unsafe_verdicts": unsafe_count(view),
        "invariant_checks": sum(int(n) for n in view.get("checked", {}).values()),
        "mutants": len(kills),
        "mutants_killed": sum(1 for k in kills if k.get("killed")),
        "median_time_to_kill": kill_model.median_time_to_kill(kills),
        "determinism_diverged": sum(1 for d in view.get("determinism", []) if not d.get("same")),
        "seconds": round(time_spent(view)[0], 3),  # wall: the campaign runs' own when present
        "cpu_seconds": None if (cpu := time_spent(view)[1]) is None else round(cpu, 3),
        "determinism_recorded": (det := determinism(view)).recorded,
        "determinism_rechecked": det.fresh,
        "result_documents": int(view.get("result_documents", len(runs_of(view)))),
        "campaign_runs": len(campaigns(view)),
    }
