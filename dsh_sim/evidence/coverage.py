"""Crash coverage: every crash and its recovery, classified, counted and required.

A *case* is one crash followed by a recovery: where it struck (named point, barrier, crash
kind and phase, torn class) and, for each tool call known at that instant, where the call
stood among the four moments, what repair said about it, and whether its effect really
happened (the ledger).  Results of fuzz, explore and replay runs are lists of cases plus
run metadata; :func:`aggregate` merges any number of them into the matrices of the report,
and :data:`REQUIREMENTS` are the "sometimes" cells that must be hit at least once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from dsh_sim.engine.points import POINTS
from dsh_sim.engine.vocabulary import BARRIERS, BOUNDARIES, INNER_BARRIERS, TORN_CLASSES
from dsh_sim.evidence.document import (
    CampaignRecord,
    Determinism,
    DshAgainst,
    DshExploreRow,
    DshRouteRow,
    KillRow,
    Meta,
    PointCounts,
    ReaderCounts,
    ResultsDocument,
    SweepRow,
    Violation,
    as_documents,
)
from dsh_sim.evidence.oracles.shared_prefix import Findings
from dsh_sim.evidence.tally import CaseTally, phase_group
from dsh_sim.evidence.view import CoverageView, DshAgainstRow, DshSection, Requirement

__all__ = [
    "REQUIREMENTS",
    "CoverageView",
    "Requirement",
    "aggregate",
    "barrier_of",
    "build_case",
    "case_from_recovery",
    "phase_group",
    "recovery_facts",
    "requirement_status",
]

if TYPE_CHECKING:
    from dsh_sim.engine.crash import CrashRecord
    from dsh_sim.engine.lifetime import Lifetime
    from dsh_sim.engine.machine import Simulation


def barrier_of(barrier: str | None, step: str | None) -> str:
    if step in INNER_BARRIERS:
        return step
    if barrier in BARRIERS:
        return barrier
    if barrier == "explicit flush":
        return "explicit flush"
    return "outside barriers"


def _call_ids(event: Any) -> tuple[str, tuple[str, ...]] | None:
    """The call ids an assistant message's tool-call blocks name, or a tool/result's call."""
    if event.type == "assistant/message":
        return event.type, tuple(b["id"] for b in event.data["message"]["content"] if b.get("type") == "tool-call")
    if event.type == "tool/result":
        return event.type, (event.data["message"]["source"]["callId"],)
    return None


_CALL_IDS: Findings[tuple[str, tuple[str, ...]]] = Findings(_call_ids)  # (walked past the log walked last)


def recovery_facts(sim: Simulation, life: Lifetime, violated: Iterable[str]) -> dict[str, Any]:
    """What a recovery established, independent of where the crash struck."""
    report = life.report
    verdicts = dict(report.verdicts) if report is not None else {}
    known: set[str] = set()
    closed: set[str] = set()
    for _, (kind, ids) in _CALL_IDS.of(life.session.events) if life.session is not None else ():
        if kind == "assistant/message":
            known.update(ids)
        else:
            closed.update(call_id for call_id in ids if call_id not in verdicts)
    applied = {e.call_id.split(":")[0] for e in sim.world.ledger if e.applied}
    return {
        "verdicts": verdicts,
        "known": known,
        "closed": closed,
        "applied": applied,
        "recovered": life.boot_error is None,
        "violations": list(violated),
    }


def build_case(
    source: str, point: str | None, barrier: str, kind: str, phase: str, torn: str | None, boundaries: dict[str, str], facts: dict[str, Any]
) -> dict[str, Any]:
    calls = []
    for call_id, boundary in sorted(boundaries.items()):
        if call_id in facts["verdicts"]:
            outcome = facts["verdicts"][call_id]
        elif boundary == "before 1":
            outcome = "not emitted"
        elif call_id in facts["closed"] or call_id in facts["known"]:
            outcome = "closed"
        else:
            outcome = "lost"
        calls.append({"id": call_id, "boundary": boundary, "outcome": outcome, "applied": call_id in facts["applied"]})
    return {
        "source": source,
        "point": point or "quiescence",
        "layer": POINTS[point].layer if point in POINTS else "harness",
        "barrier": barrier,
        "kind": kind,
        "phase": phase,
        "torn_class": torn,
        "calls": calls,
        "recovered": facts["recovered"],
        "violations": facts["violations"],
    }


def case_from_recovery(
    sim: Simulation, violated: Iterable[str], crash: CrashRecord, life: Lifetime, source: str, torn_class: str | None = None
) -> dict[str, Any]:
    facts = recovery_facts(sim, life, violated)
    return build_case(
        source, crash.point, barrier_of(crash.barrier, crash.step), crash.kind, crash.phase, torn_class, crash.boundaries, facts
    )


def aggregate(results: Iterable[ResultsDocument | Mapping[str, Any]]) -> CoverageView:
    """Merge result documents (fuzz / explore / replay / mutants) into one coverage view: what
    the report renders and writes as coverage.json.  A document may be given as JSON."""
    tally = CaseTally()
    points: dict[str, PointCounts] = {}
    checked: dict[str, int] = {}
    violations: list[Violation] = []
    runs: list[Meta] = []
    determinism: list[Determinism] = []
    kill_matrix: list[KillRow] = []
    cells: dict[str, dict[str, dict[str, dict[str, int]]]] = {"boundary": {}, "barrier": {}}
    sampled: dict[str, int] = {}
    cases_by_source: dict[str, int] = {}
    dsh_explore: list[DshExploreRow] = []  # the DSH writer explored on SimFS (dsh-sim explore --runtime dsh)
    dsh_against: list[DshAgainstRow] = []  # recoveries compared with the DSH reader (--against dsh)
    dsh_route: list[DshRouteRow] = []  # the DSH route explored (dsh-sim run's route part)
    dsh_skipped: str | None = None  # why a run's DSH phase did not run
    campaigns: list[CampaignRecord] = []  # each campaign run's own document: seed, command line, time per phase
    readers: list[ReaderCounts] = []  # the reader differential's counts (a replay shard's)
    sweep: list[SweepRow] = []  # the failure-path sweep's counts, one row per scenario swept
    for doc in as_documents(results):
        if doc.kind == "campaign" and doc.campaign is not None:
            campaigns.append(doc.campaign)  # not a run of its own: the record of the tasks' run
            skipped = doc.campaign.skipped.get("dsh")
            dsh_skipped = dsh_skipped or (str(skipped) if skipped else None)
            continue
        meta = doc.meta if doc.meta is not None else Meta()
        if meta != Meta():  # a document without meta is not a run
            runs.append(meta)
        if doc.readers is not None:
            readers.append(doc.readers)
        sweep.extend(doc.sweep or ())
        for name, n in (doc.sampled or {}).items():
            sampled[name] = sampled.get(name, 0) + n
        for matrix, rows in (doc.cells or {}).items():
            for row, cols in rows.items():
                for col, counts in cols.items():
                    slot = cells.setdefault(matrix, {}).setdefault(row, {}).setdefault(col, {"possible": 0, "explored": 0})
                    slot["possible"] += counts.get("possible", 0)
                    slot["explored"] += counts.get("explored", 0)
        for name, n in (doc.checked or {}).items():
            checked[name] = checked.get(name, 0) + n
        for name, point in (doc.points or {}).items():
            points[name] = points.get(name, _NO_POINT).plus(point)
        violations.extend(doc.violations or ())
        determinism.extend(doc.determinism or ())
        kill_matrix.extend(doc.kill_matrix or ())
        source = meta.kind if meta.kind is not None else "other"
        dsh_explore.extend(doc.dsh_explore or ())
        dsh_route.extend(doc.dsh_route or ())
        if doc.dsh_skipped:
            dsh_skipped = doc.dsh_skipped
        if doc.dsh_against is not None and doc.dsh_against != DshAgainst():
            dsh_against.append(DshAgainstRow(source=source, scenario=meta.scenario, **attrs.asdict(doc.dsh_against, recurse=False)))
        cases = doc.tally()
        if cases.cases:
            cases_by_source[source] = cases_by_source.get(source, 0) + cases.cases
        tally.merge(cases)
    dsh = None
    if dsh_explore or dsh_against or dsh_route:  # only runs that had DSH (dsh-sim dsh setup) carry the section
        dsh = DshSection(explore=tuple(dsh_explore), against=tuple(dsh_against), route=tuple(dsh_route))
    elif dsh_skipped is not None:  # the run had a DSH phase and skipped it: the section says why
        dsh = DshSection(skipped=dsh_skipped)
    return CoverageView(
        cases=tally.cases,
        cases_by_source=cases_by_source,
        boundary_matrix=tally.boundary,
        barrier_matrix=tally.barrier,
        confusion=tally.confusion,
        torn_classes=tally.torn,
        points=points,
        checked=checked,
        violations=tuple(violations),
        runs=tuple(runs),
        determinism=tuple(determinism),
        kill_matrix=tuple(kill_matrix),
        cell_states=cells,
        sampled=sampled,
        result_documents=len(runs),
        campaigns=tuple(campaigns),
        readers=tuple(readers),
        sweep=tuple(sweep),
        dsh=dsh,
    )


_NO_POINT = PointCounts(0, 0, 0)  # the view lists possible, explored and hits of every point


# "Sometimes" cells: each must be hit at least once across the merged results, or the report
# command fails — so CI notices when a change makes a whole class of crash unreachable.
REQUIREMENTS: tuple[tuple[str, str, str], ...] = tuple(
    [("boundary", b, "kill") for b in BOUNDARIES]
    + [("boundary", b, "power") for b in BOUNDARIES]
    + [("barrier", b, "any") for b in BARRIERS]
    + [
        ("verdict", "TOOL_NOT_STARTED", "not applied"),
        ("verdict", "TOOL_OUTCOME_UNKNOWN", "applied"),
        ("verdict", "TOOL_OUTCOME_UNKNOWN", "not applied"),
    ]
    + [("torn", c, "any") for c in TORN_CLASSES if c != "before-newline"]
)


def requirement_status(view: CoverageView) -> tuple[Requirement, ...]:
    """Each requirement with its hits in ``view``: met when hit at least once."""
    out = []
    for kind, row, col in REQUIREMENTS:
        if kind == "boundary":
            cols = view.boundary_matrix.get(row, {})
            hits = sum(sum(v.values()) for c, v in cols.items() if (c == "kill") == (col == "kill"))
        elif kind == "barrier":
            hits = sum(sum(v.values()) for v in view.barrier_matrix.get(row, {}).values())
        elif kind == "verdict":
            hits = view.confusion[row][col]
        else:
            hits = view.torn_classes.get(row, 0)
        out.append(Requirement(kind=kind, row=row, col=col, hits=hits, met=hits > 0))
    return tuple(out)
