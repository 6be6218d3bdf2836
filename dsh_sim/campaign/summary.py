"""The final summary: totals across every shard of a campaign, one line per part.

The shards print as they finish; these lines add them up (replayed, explored, fuzzed per
machine, mutants killed), so a fanned-out run ends with the same few numbers as a run in one
process — and with the same values, when the seeds and example counts are the same.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from dsh_sim.campaign.tasks import Campaign
from dsh_sim.evidence.document import Meta, ResultsDocument
from dsh_sim.evidence.results import DeterminismCounts, determinism_counts, determinism_text


@attrs.frozen
class CampaignCounts:
    """The campaign's totals as numbers (what the summary lines say)."""

    replayed: int = 0  # scenarios replayed
    replay_failures: int = 0
    moved_unjudged: int = 0  # traces that moved while every oracle held
    determinism: DeterminismCounts = attrs.field(factory=DeterminismCounts)  # recorded digests and fresh re-checks
    determinism_rechecks: int = 0  # scenarios re-run in two fresh processes
    determinism_differences: int = 0
    explore_shards: int = 0
    explored_scenarios: int = 0
    crash_states: int = 0
    explore_violations: int = 0
    fuzz_shards: int = 0
    fuzz_examples: dict[str, int] = attrs.field(factory=dict)  # machine -> examples
    fuzz_steps: int = 0
    fuzz_violations: int = 0
    mutants: int = 0
    mutants_killed: int = 0


def _by_kind(docs: list[ResultsDocument]) -> dict[str, list[ResultsDocument]]:
    out: dict[str, list[ResultsDocument]] = {}
    for doc in docs:
        out.setdefault(doc.kind or "?", []).append(doc)
    return out


def _sum(docs: list[ResultsDocument], field: Callable[[Meta], int | None]) -> int:
    """The sum of one integer meta field over ``docs`` (absent: 0)."""
    return sum(field(d.meta) or 0 for d in docs if d.meta is not None)


def counts(docs: list[ResultsDocument]) -> CampaignCounts:
    """The campaign's totals, from the results documents of its tasks."""
    kinds = _by_kind(docs)
    replay, explore, fuzz, mutants = (kinds.get(k, []) for k in ("replay", "explore", "fuzz", "mutants"))
    examples: dict[str, int] = {}
    for doc in fuzz:
        machine = (doc.meta.machine if doc.meta else None) or "?"
        examples[machine] = examples.get(machine, 0) + ((doc.meta.examples if doc.meta else None) or 0)
    kills = [row for doc in mutants for row in doc.kill_matrix or ()]
    rechecks = [e for d in replay for e in d.determinism or ()]
    return CampaignCounts(
        replayed=_sum(replay, lambda m: m.scenarios),
        replay_failures=sum(len(d.violations or ()) for d in replay),
        moved_unjudged=sum(len(d.moved_unjudged or ()) for d in replay),
        determinism=(det := determinism_counts(rechecks)),
        determinism_rechecks=det.fresh,
        determinism_differences=det.differences,
        explore_shards=len(explore),
        explored_scenarios=_sum(explore, lambda m: m.scenarios),
        crash_states=_sum(explore, lambda m: m.states),
        explore_violations=sum(len(d.violations or ()) for d in explore),
        fuzz_shards=len(fuzz),
        fuzz_examples=examples,
        fuzz_steps=_sum(fuzz, lambda m: m.steps),
        fuzz_violations=sum(len(d.violations or ()) for d in fuzz),
        mutants=len(kills),
        mutants_killed=sum(1 for row in kills if row.killed),
    )


def totals(docs: list[ResultsDocument], campaign: Campaign) -> list[str]:
    c = counts(docs)
    lines = [f"total over {len(docs)}/{len(campaign.tasks)} task(s):"]
    if c.replayed:
        lines.append(
            f"  replayed {c.replayed} scenario(s), {c.replayed - c.replay_failures} hold; determinism: {determinism_text(c.determinism)}"
        )
        if c.moved_unjudged:
            lines.append(
                f"  {c.moved_unjudged} scenario(s) moved their trace while every oracle held: a change no model judged "
                "(see each FAIL above for where the trace parted; a gap in the models, not a pass)"
            )
    if c.explore_shards:
        lines.append(
            f"  explored {c.explored_scenarios} scenario(s) in {c.explore_shards} shard(s): "
            f"{c.crash_states} crash states, {c.explore_violations} violation(s)"
        )
    if c.fuzz_shards:
        per = ", ".join(f"{machine} {n}" for machine, n in sorted(c.fuzz_examples.items()))
        lines.append(
            f"  fuzzed {sum(c.fuzz_examples.values())} examples ({per}) in {c.fuzz_shards} shard(s), "
            f"{c.fuzz_steps} steps, {c.fuzz_violations} violation(s)"
        )
    if c.mutants:
        lines.append(f"  self-test: the corpus kills {c.mutants_killed}/{c.mutants} durability mutants")
    return lines
