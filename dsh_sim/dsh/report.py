"""``reports/dsh-findings.md``: the known differences, who is right, and every occurrence.

Written by ``dsh-sim dsh diff`` and by the explore drivers that run DSH; generated, not
committed (``reports/`` keeps only its README).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dsh_sim.dsh.findings import FINDINGS
from dsh_sim.outputs import write_replacing


def write_findings(
    path: str, *, diffs: Sequence[Any] = (), explore: Sequence[dict[str, Any]] = (), explore_summary: Sequence[dict[str, Any]] = ()
) -> str:
    lines = ["# DSH findings", "", "Differences between the published DSH (0.1.0-rc.8) and dsh-sim, as found by this run.", ""]
    lines += ["| finding | who is right | why |", "|---|---|---|"]
    lines += [f"| **{f.id}** {f.title} | {f.right} | {f.why} |" for f in FINDINGS]
    occurrences: dict[str, list[str]] = {}
    unexplained: list[str] = []
    for d in diffs:
        for diff in d.differences:
            entry = f"`{d.path}` — {diff.kind}: {diff.detail}  \n  reproduce: `dsh-sim dsh diff {d.path}`"
            (occurrences.setdefault(diff.finding, []) if diff.finding else unexplained).append(entry)
    for item in explore:
        entry = f"{item['where']} — {item['detail']}  \n  reproduce: `{item['reproduce']}`"
        (occurrences.setdefault(item["finding"], []) if item.get("finding") else unexplained).append(entry)
    lines += ["", f"## Occurrences ({sum(map(len, occurrences.values()))} explained, {len(unexplained)} unexplained)", ""]
    for finding in FINDINGS:
        found = occurrences.get(finding.id, [])
        lines += [f"### {finding.id}: {finding.title} ({len(found)})", ""]
        lines += [f"* {e}" for e in found[:50]] + ([f"* … {len(found) - 50} more"] if len(found) > 50 else []) + [""]
    if explore_summary:
        lines += [
            "## DSH writer explored on SimFS (coverage)",
            "",
            "| shape | compression | crash points | states | recoveries | violations |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {s['shape']} | {s['compression']} | {s['crash_points']} | {s['states']} | {s['recoveries_run']} | {len(s['violations'])} |"
            for s in explore_summary
        ]
        lines += [""]
    if unexplained:
        lines += ["### Unexplained", ""] + [f"* {e}" for e in unexplained] + [""]
    write_replacing(path, "\n".join(lines))  # never through a link planted at reports/ or the name
    return path
