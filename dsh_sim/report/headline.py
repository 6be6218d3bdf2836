"""The report's headline: the summary coverage.json gates on, and the same numbers as the cards
and bullet list at the top of the page and of coverage.md.

One :class:`Summary` feeds the JSON, the page, the Markdown and the terminal's verdict
(:mod:`dsh_sim.report.verdict`), so none of them can state a number the others do not.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from dsh_sim.evidence.records import KEEP_NULL
from dsh_sim.evidence.view import CoverageView, Requirement
from dsh_sim.report import kills as kill_model
from dsh_sim.report import model, states
from dsh_sim.report.runs import campaigns, runs_of, time_spent


@attrs.frozen(kw_only=True)
class Summary:
    """Machine-readable headline for coverage.json (what CI gates on); :func:`headline` shows it."""

    cases: int
    crash_states_possible: int
    crash_states_explored: int
    crash_states_exhaustive: bool
    violations: int
    unmet_requirements: int
    unsafe_verdicts: int
    invariant_checks: int
    mutants: int
    mutants_killed: int
    median_time_to_kill: float | None = attrs.field(metadata=KEEP_NULL)
    determinism_diverged: int
    seconds: float  # wall: the campaign runs' own when present
    cpu_seconds: float | None = attrs.field(metadata=KEEP_NULL)
    determinism_recorded: int
    determinism_rechecked: int
    result_documents: int
    campaign_runs: int


def summary(view: CoverageView, status: Sequence[Requirement]) -> Summary:
    """The :class:`Summary` of ``view`` with its requirement ``status``."""
    kills = view.kill_matrix
    st = states.totals(view)
    wall, cpu = time_spent(view)
    det = model.determinism(view)
    return Summary(
        cases=int(view.cases),
        crash_states_possible=st.possible,
        crash_states_explored=st.explored,
        crash_states_exhaustive=st.exhaustive,
        violations=len(view.violations),
        unmet_requirements=sum(1 for s in status if not s.met),
        unsafe_verdicts=model.unsafe_count(view),
        invariant_checks=sum(int(n) for n in view.checked.values()),
        mutants=len(kills),
        mutants_killed=sum(1 for k in kills if k.killed),
        median_time_to_kill=kill_model.median_time_to_kill(kills),
        determinism_diverged=sum(1 for d in view.determinism if not d.same),
        seconds=round(wall, 3),
        cpu_seconds=None if cpu is None else round(cpu, 3),
        determinism_recorded=det.recorded,
        determinism_rechecked=det.fresh,
        result_documents=int(view.result_documents),
        campaign_runs=len(campaigns(view)),
    )


def subtitle(view: CoverageView, numbers: Summary) -> str:
    """What the report is made of: crash cases, result documents, and the campaign runs they
    came from (a campaign's tasks are documents of one run, not runs)."""
    camp_ids = {c.run for c in campaigns(view)}
    run_ids = {r.run for r in runs_of(view) if isinstance(r.run, str)} | camp_ids
    base = f"{numbers.cases:,} crash cases from {view.result_documents} result document(s)"
    return f"{base} of {len(run_ids)} campaign run(s)" if run_ids else base


@attrs.frozen(kw_only=True)
class HeadlineItem:
    """One headline number: ``alarm`` when it must be zero and is not, ``warn`` when it falls short."""

    label: str
    value: str
    alarm: bool
    key: str  # the card's id on the page (``headline-<key>``)
    note: str | None = None
    warn: bool = False


_CASES_NOTE = "; explore counts every explored state, shared recoveries included. The boundary matrix counts calls in flight, not cases"
_CHECKS_NOTE = (
    "evaluations of an invariant in replay and fuzz runs (explore judges each distinct recovery with the same checks, not counted here)"
)


def headline(view: CoverageView, numbers: Summary) -> list[HeadlineItem]:
    """The numbers at the top of the report.

    ``numbers`` is :func:`summary` of the same view, so the page shows exactly what
    coverage.json gates on; only "time spent" reads the runs again, unrounded.
    """
    st = states.totals(view)  # for the note: which cells and points fell short
    possible, explored = numbers.crash_states_possible, numbers.crash_states_explored
    unmet, unsafe, kills, killed = numbers.unmet_requirements, numbers.unsafe_verdicts, numbers.mutants, numbers.mutants_killed
    parts = " + ".join(f"{n:,} {source}" for source, n in sorted(view.cases_by_source.items()))
    cases_note = "one per crash followed by a recovery" + (f" = {parts}" if parts else "") + _CASES_NOTE
    items = [
        HeadlineItem(label="crash cases", value=model.fmt_value(numbers.cases), alarm=False, key="cases", note=cases_note),
        HeadlineItem(
            label="crash states explored / possible",
            value=f"{explored:,}/{possible:,}" if possible else "—",
            alarm=False,
            key="states",
            note=states.headline_note(st),
            warn=bool(possible) and not numbers.crash_states_exhaustive,
        ),
        HeadlineItem(label="violations", value=str(numbers.violations), alarm=numbers.violations > 0, key="violations"),
        HeadlineItem(label="unmet requirements", value=str(unmet), alarm=unmet > 0, key="unmet"),
        HeadlineItem(label="unsafe verdicts", value=str(unsafe), alarm=unsafe > 0, key="unsafe"),
        HeadlineItem(label="invariant checks", value=str(numbers.invariant_checks), alarm=False, key="checks", note=_CHECKS_NOTE),
    ]
    if kills:
        items.append(HeadlineItem(label="mutants killed", value=f"{killed}/{kills}", alarm=killed < kills, key="mutants"))
        items.append(
            HeadlineItem(label="median time to kill", value=model.fmt_seconds(numbers.median_time_to_kill), alarm=False, key="ttk")
        )
    if view.determinism:
        diverged = numbers.determinism_diverged
        value = f"{diverged} DIFFER" if diverged else "all same"
        items.append(
            HeadlineItem(label="determinism", value=value, alarm=diverged > 0, key="determinism", note=model.determinism_words(view))
        )
    wall, cpu = time_spent(view)
    spent = (
        f"wall time of the run (CPU {model.fmt_seconds(cpu)})"
        if cpu is not None
        else "the result documents' own seconds, added up (no campaign record: not the wall time of a run)"
    )
    items.append(HeadlineItem(label="time spent", value=model.fmt_seconds(wall), alarm=False, key="seconds", note=spent))
    return items


__all__ = ["HeadlineItem", "Summary", "headline", "subtitle", "summary"]
