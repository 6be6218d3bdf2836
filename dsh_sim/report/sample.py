"""A realistic synthetic coverage view, for previewing the report and for its tests.

Real views come from fuzz/explore/replay/mutant runs; this builds result documents of the
same shape from a seeded RNG, with the same causal rules (a call at "2→3" has a durable
tool/call and no effect yet, so repair says TOOL_OUTCOME_UNKNOWN and nothing was applied,
and so on), then merges them with :func:`dsh_sim.coverage.aggregate`.  ``flaws=True`` seeds
the things the report must make loud: an unsafe verdict with its violation, an unmet torn
class, a surviving mutant and a diverged determinism re-check.

    python -m dsh_sim.report.sample OUT_DIR [--clean]
"""

from __future__ import annotations

import random
import sys
from typing import Any

from dsh_sim.coverage import aggregate
from dsh_sim.invariants import INVARIANTS
from dsh_sim.points import POINTS
from dsh_sim.report import write_report

_BARRIER_OF = {
    "agent.pre_step": "pre-step",
    "llm.request": "llm/stream",
    "llm.chunk": "llm/stream",
    "model.stream": "llm/stream",
    "tools.execute.body": "tools/execute",
    "world.deliver": "tools/execute",
    "world.respond": "tools/execute",
    "fs.write": "window write",
    "fs.fsync": "window write",
    "fs.link": "first publication",
    "fs.fsync_dir": "first publication",
    "fs.ftruncate": "torn-tail rewrite",
    "fs.open": "repair append",
    "session.flush": "explicit flush",
    "agent.turn.end": "outside barriers",
}
_PHASES = ("power:synced", "power:torn", "power:unsynced-dropped", "power:unsynced-kept", "power:partial", "power:reordered", "power:before-publication", "power:publication-kept", "power:publication-dropped", "power:no-log")
_TORN = ("magic", "frame-header", "block-header", "block", "checksum", "frame-boundary", "mid-line", "line-boundary")


def _call(rng: random.Random, i: int, kind: str, phase: str) -> dict[str, Any]:
    boundary = rng.choice(("before 1", "1→2", "1→2", "2→3", "2→3", "3→4", "3→4", "after 4"))
    survives_unsynced = phase in ("power:unsynced-kept", "power:synced")
    if boundary == "before 1":
        return {"id": f"c{i}", "boundary": boundary, "outcome": "not emitted", "applied": False}
    if boundary == "1→2":
        outcome = "TOOL_NOT_STARTED" if (kind == "kill" and rng.random() < 0.6) or survives_unsynced else "lost"
        return {"id": f"c{i}", "boundary": boundary, "outcome": outcome, "applied": False}
    if boundary == "2→3":
        return {"id": f"c{i}", "boundary": boundary, "outcome": "TOOL_OUTCOME_UNKNOWN", "applied": False}
    if boundary == "3→4":
        outcome = "closed" if survives_unsynced and rng.random() < 0.5 else "TOOL_OUTCOME_UNKNOWN"
        return {"id": f"c{i}", "boundary": boundary, "outcome": outcome, "applied": rng.random() < 0.9}
    return {"id": f"c{i}", "boundary": boundary, "outcome": "closed", "applied": True}


def _cases(rng: random.Random, n: int, source: str, torn_classes: tuple[str, ...]) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        point = rng.choice(sorted(_BARRIER_OF))
        kind = "kill" if rng.random() < 0.45 else "power"
        phase = "kill" if kind == "kill" else rng.choice(_PHASES)
        calls = [_call(rng, i * 10 + j, kind, phase) for j in range(rng.choice((0, 1, 1, 2, 3)))]
        out.append(
            {
                "source": source,
                "point": point,
                "layer": POINTS[point].layer,
                "barrier": _BARRIER_OF[point],
                "kind": kind,
                "phase": phase,
                "torn_class": rng.choice(torn_classes) if phase == "power:torn" else None,
                "calls": calls,
                "recovered": True,
                "violations": [],
            }
        )
    return out


def sample_results(seed: int = 7, flaws: bool = True) -> list[dict[str, Any]]:
    """Result documents (explore, two fuzz batches, replay, mutants) as the runs emit them."""
    rng = random.Random(seed)
    torn = _TORN[1:] if flaws else _TORN  # with flaws, "magic" is never hit: an unmet requirement
    explore_points = {}
    for name in sorted(POINTS):
        if name.startswith(("fs.", "persist.", "tools.", "agent.", "llm.")) and name not in ("fs.stat", "fs.fstat", "fs.listdir"):
            possible = rng.randint(4, 160)
            explored = possible if possible <= 64 else rng.randint(40, possible)
            explore_points[name] = {"possible": possible, "explored": explored}
    checks = {name: rng.randint(200, 9000) for name in INVARIANTS}
    if flaws:
        checks["lock_exclusion"] = 0
    docs: list[dict[str, Any]] = [
        {
            "meta": {"kind": "explore", "scenarios": 12, "bound": 64, "seconds": 41.7, "seeds": [1, 2, 3]},
            "cases": _cases(rng, 420, "explore", torn),
            "checked": checks,
            "points": explore_points,
        }
    ]
    for seed_ in (1001, 1002):
        docs.append(
            {
                "meta": {"kind": "fuzz", "machine": "agent", "seed": seed_, "examples": 500, "steps": 11873, "seconds": 63.25},
                "cases": _cases(rng, 300, "fuzz", torn),
                "checked": {name: rng.randint(100, 3000) for name in INVARIANTS if not (flaws and name == "lock_exclusion")},
                "points": {name: {"hits": rng.randint(0, 5000)} for name in sorted(POINTS) if rng.random() < 0.85},
            }
        )
    replay: dict[str, Any] = {
        "meta": {"kind": "replay", "scenarios": 3, "seconds": 0.8},
        "determinism": [
            {"scenario": "tests/corpus/torn-tail-after-publication.json", "digest_a": "9f1c2e7a44b0d3e1a8c6", "digest_b": "9f1c2e7a44b0d3e1a8c6", "same": True},
            {"scenario": "tests/corpus/kill-between-call-and-effect.json", "digest_a": "51aa09c3e2d77f10bb42", "digest_b": "51aa09c3e2d77f10bb42", "same": True},
            {"scenario": "tests/corpus/power-cut-reordered.json", "digest_a": "0c3d91f2aa61b7e5d004", "digest_b": "0c3d91f2aa61b7e5d004" if not flaws else "77e0b1a9c2f4d6e8a013", "same": not flaws},
        ],
    }
    mutants = [
        ("skip-fsync-before-ack", "acknowledge a batch before fsync returns", True, "explore", 2.4, 1, 5),
        ("not-started-after-call", "repair says TOOL_NOT_STARTED for a durable tool/call", True, "fuzz", 11.9, 37, 9),
        ("truncate-acked-tail", "torn-tail repair truncates to the last frame, not the last acked frame", True, "explore", 4.1, 1, 7),
        ("no-dir-fsync", "publish the log without fsyncing its directory", True, "explore", 6.8, 1, 4),
        ("checkpoint-after-body", "run the tool body before its tool/call is durable", True, "corpus", 0.3, 1, 6),
        ("double-result", "append a second tool/result on resume", not flaws, "fuzz" if not flaws else None, 30.2 if not flaws else None, 212, 12),
    ]
    kill_matrix = [
        {"mutant": m, "description": d, "killed": k, "method": meth if k else None, "time_to_kill": t if k else None, "examples": ex, "scenario_steps": st if k else None, "scenario": f"scenarios/mutant-{m}.json" if k else None}
        for m, d, k, meth, t, ex, st in mutants
    ]
    docs.append(replay)
    docs.append({"meta": {"kind": "mutants", "mutants": len(mutants), "seconds": 188.0, "seeds": [1001, 1002]}, "kill_matrix": kill_matrix})
    if flaws:
        docs[1]["cases"][0]["calls"] = [{"id": "c-unsafe", "boundary": "3→4", "outcome": "TOOL_NOT_STARTED", "applied": True}]
        docs[1]["violations"] = [
            {
                "invariant": "verdict_soundness",
                "message": "call c-unsafe: repair said TOOL_NOT_STARTED but the ledger shows the effect <applied> (service 'mail', key \"k-42\")",
                "scenario": "scenarios/fuzz-1001-verdict_soundness.json",
                "source": "fuzz",
            }
        ]
    return docs


def sample_view(seed: int = 7, flaws: bool = True) -> dict[str, Any]:
    return aggregate(sample_results(seed, flaws))


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    paths = write_report(sample_view(flaws="--clean" not in argv), argv[0])
    for fmt, path in sorted(paths.items()):
        print(f"{fmt}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
