"""The final summary: totals across every shard of a campaign, one line per part.

The shards print as they finish; these lines add them up (replayed, explored, fuzzed per
machine, mutants killed), so a fanned-out run ends with the same few numbers as a run in one
process — and with the same values, when the seeds and example counts are the same.
"""

from __future__ import annotations

from typing import Any

from dsh_sim.campaign.tasks import Campaign
from dsh_sim.evidence.results import determinism_counts, determinism_text


def _by_kind(docs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        out.setdefault(doc["meta"].get("kind", "?"), []).append(doc)
    return out


def counts(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The campaign's totals as numbers (what the summary lines and ``--json`` say)."""
    kinds = _by_kind(docs)
    replay, explore, fuzz, mutants = (kinds.get(k, []) for k in ("replay", "explore", "fuzz", "mutants"))
    examples: dict[str, int] = {}
    for doc in fuzz:
        machine = doc["meta"].get("machine", "?")
        examples[machine] = examples.get(machine, 0) + doc["meta"].get("examples", 0)
    kills = [row for doc in mutants for row in doc.get("kill_matrix", [])]
    return {
        "replayed": sum(d["meta"].get("scenarios", 0) for d in replay),
        "replay_failures": sum(len(d.get("violations", [])) for d in replay),
        "moved_unjudged": sum(len(d.get("moved_unjudged", [])) for d in replay),
        "determinism": (det := determinism_counts(e for d in replay for e in d.get("determinism", []))),
        "determinism_rechecks": det["fresh"],
        "determinism_differences": det["differences"],
        "explore_shards": len(explore),
        "explored_scenarios": sum(d["meta"].get("scenarios", 0) for d in explore),
        "crash_states": sum(d["meta"].get("states", 0) for d in explore),
        "explore_violations": sum(len(d.get("violations", [])) for d in explore),
        "fuzz_shards": len(fuzz),
        "fuzz_examples": examples,
        "fuzz_steps": sum(d["meta"].get("steps", 0) for d in fuzz),
        "fuzz_violations": sum(len(d.get("violations", [])) for d in fuzz),
        "mutants": len(kills),
        "mutants_killed": sum(1 for row in kills if row.get("killed")),
    }


def totals(docs: list[dict[str, Any]], campaign: Campaign) -> list[str]:
    c = counts(docs)
    lines = [f"total over {len(docs)}/{len(campaign.tasks)} task(s):"]
    if c["replayed"]:
        lines.append(
            f"  replayed {c['replayed']} scenario(s), {c['replayed'] - c['replay_failures']} hold; "
            f"determinism: {determinism_text(c['determinism'])}"
        )
        if c["moved_unjudged"]:
            lines.append(
                f"  {c['moved_unjudged']} scenario(s) moved their trace while every oracle held: a change no model judged "
                "(see each FAIL above for where the trace parted; a gap in the models, not a pass)"
            )
    if c["explore_shards"]:
        lines.append(
            f"  explored {c['explored_scenarios']} scenario(s) in {c['explore_shards']} shard(s): "
            f"{c['crash_states']} crash states, {c['explore_violations']} violation(s)"
        )
    if c["fuzz_shards"]:
        per = ", ".join(f"{machine} {n}" for machine, n in sorted(c["fuzz_examples"].items()))
        lines.append(
            f"  fuzzed {sum(c['fuzz_examples'].values())} examples ({per}) in {c['fuzz_shards']} shard(s), "
            f"{c['fuzz_steps']} steps, {c['fuzz_violations']} violation(s)"
        )
    if c["mutants"]:
        lines.append(f"  self-test: the corpus kills {c['mutants_killed']}/{c['mutants']} durability mutants")
    return lines
