"""A realistic synthetic coverage view, for previewing the report and for its tests.

Real views come from fuzz/explore/replay/mutant runs; this builds result documents of the
same shape from a seeded RNG, with the same causal rules (a call at "2→3" has a durable
tool/call and no effect yet, so repair says TOOL_OUTCOME_UNKNOWN and nothing was applied,
and so on), then merges them with :func:`dsh_sim.evidence.coverage.aggregate`.  The explore document
counts its crash states per matrix cell the way :func:`dsh_sim.drivers.explore.explore` does, with
a few points sampled above the bound, and the mutant rows have the shape of
:meth:`dsh_sim.drivers.selftest.KillResult.row` (built here, so previewing the report never
imports the simulator; the tests check the shapes agree).  ``flaws=True`` seeds
the things the report must make loud: an unsafe verdict with its violation, an unmet torn
class, a surviving mutant and a diverged determinism re-check.

    python -m dsh_sim.report.sample OUT_DIR [--clean]
"""

from __future__ import annotations

import random
import sys
from typing import Any

from dsh_sim.engine.points import POINTS
from dsh_sim.evidence.coverage import aggregate, phase_group
from dsh_sim.evidence.invariants import INVARIANTS
from dsh_sim.evidence.view import CoverageView
from dsh_sim.mutants.catalogue import CATALOGUE
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
_PHASES = (
    "power:synced",
    "power:torn",
    "power:unsynced-dropped",
    "power:unsynced-kept",
    "power:partial",
    "power:reordered",
    "power:before-publication",
    "power:publication-kept",
    "power:publication-dropped",
    "power:no-log",
)
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


def _cases(
    rng: random.Random, n: int, source: str, torn_classes: tuple[str, ...], point_: str | None = None, phases: tuple[str, ...] = _PHASES
) -> list[dict[str, Any]]:
    """Random crash cases; with ``point_``, power cuts at that point only, in ``phases``."""
    out = []
    for i in range(n):
        point = point_ or rng.choice(sorted(_BARRIER_OF))
        kind = "kill" if rng.random() < 0.45 and point_ is None else "power"
        phase = "kill" if kind == "kill" else rng.choice(phases)
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


# Points whose recorded crash points had more power-cut states than the bound — torn and
# reordered cuts of a long unsynced tail multiply — so explore checked a seeded sample
# there: (recorded points sampled, states left unexplored, counted as possible only).
_SAMPLED = {"fs.fsync": (2, 48), "fs.write": (1, 17)}


def _explore_states(rng: random.Random, explored: list[dict[str, Any]], torn: tuple[str, ...]) -> dict[str, Any]:
    """cells / points / sampled of an explore document whose recovered states are ``explored``."""
    cells: dict[str, dict[str, dict[str, dict[str, int]]]] = {"boundary": {}, "barrier": {}}
    points: dict[str, dict[str, int]] = {}
    skipped = [
        c for name, (_, n) in sorted(_SAMPLED.items()) for c in _cases(rng, n, "explore", torn, name, ("power:torn", "power:reordered"))
    ]
    for key, cases in (("explored", explored), ("possible", explored + skipped)):
        for case in cases:
            col = phase_group(case["kind"], case["phase"])
            for row in sorted({c["boundary"] for c in case["calls"]}) or ["no call"]:
                slot = cells["boundary"].setdefault(row, {}).setdefault(col, {"possible": 0, "explored": 0})
                slot[key] += 1
            slot = cells["barrier"].setdefault(case["barrier"], {}).setdefault(col, {"possible": 0, "explored": 0})
            slot[key] += 1
            counts = points.setdefault(case["point"], {"possible": 0, "explored": 0})
            counts[key] += 1
    return {"cells": cells, "points": points, "sampled": {name: k for name, (k, _) in _SAMPLED.items()}}


def _method(
    killed: bool, seconds: float, examples: int, invariant: str | None = None, example: str | None = None, steps: int | None = None
) -> dict[str, Any]:
    return {"killed": killed, "seconds": seconds, "invariant": invariant, "example": example, "examples": examples, "scenario_steps": steps}


def kill_row(mutant: str, by_method: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A kill-matrix row as :meth:`dsh_sim.drivers.selftest.KillResult.row` writes it."""
    kills = [(name, m) for name, m in by_method.items() if m["killed"]]
    fastest = min(kills, key=lambda kv: kv[1]["seconds"]) if kills else None
    fuzz_result = by_method.get("fuzz")
    return {
        "mutant": mutant,
        "description": CATALOGUE.get(mutant, ""),
        "killed": fastest is not None,
        "method": fastest[0] if fastest else None,
        "time_to_kill": round(fastest[1]["seconds"], 3) if fastest else None,
        "invariant": fastest[1]["invariant"] if fastest else None,
        "examples": fastest[1]["examples"] if fastest else None,
        "scenario": fastest[1]["example"] if fastest else None,
        "scenario_steps": fuzz_result["scenario_steps"] if fuzz_result and fuzz_result["killed"] else None,
        "by_method": by_method,
    }


def _kill_matrix(flaws: bool) -> list[dict[str, Any]]:
    """Mutant rows as the self-test writes them: per-method results, fastest kill first."""

    def killed(seconds: float, invariant: str, example: str, examples: int, steps: int | None = None) -> dict[str, Any]:
        return _method(True, seconds, examples, invariant, example, steps)

    def missed(seconds: float, examples: int) -> dict[str, Any]:
        return _method(False, seconds, examples)

    table = [
        (
            "persist.ack_before_fsync",
            missed(3.1, 60),
            killed(2.4, "acked_events_survive", "mutants/persist.ack_before_fsync-boundary-1-2-pay.json", 212),
            killed(8.7, "acked_events_survive", "mutants/fuzz-durability-1.json", 44, 5),
        ),
        (
            "repair.not_started_for_recorded",
            missed(3.3, 60),
            missed(19.5, 1840),
            killed(11.9, "verdict_soundness", "mutants/fuzz-durability-2.json", 37, 9),
        ),
        (
            "read.accept_torn_final_frame",
            killed(1.2, "corrupt_frame_refused", "scenarios/starter/torn-zstd-checksum.json", 14),
            killed(4.1, "corrupt_frame_refused", "mutants/read.accept_torn_final_frame-torn-zstd-checksum.json", 380),
            killed(14.2, "corrupt_frame_refused", "mutants/fuzz-durability-3.json", 61, 7),
        ),
        (
            "persist.skip_dir_fsync_after_link",
            missed(3.0, 60),
            killed(6.8, "recovery_maximal", "mutants/persist.skip_dir_fsync_after_link-boundary-3-4-pay.json", 604),
            missed(20.0, 212),
        ),
        (
            "checkpoint.no_flush_before_tool_body",
            killed(0.3, "checkpoint_before_effect", "scenarios/starter/boundary-1-2-pay.json", 1),
            killed(1.9, "checkpoint_before_effect", "mutants/checkpoint.no_flush_before_tool_body-boundary-1-2-pay.json", 96),
            killed(2.2, "checkpoint_before_effect", "mutants/fuzz-durability-4.json", 9, 6),
        ),
        (
            "write_behind.drop_failed_batch",
            missed(3.2, 60),
            missed(21.4, 2210),
            missed(20.0, 198) if flaws else killed(30.2, "eventually_durable", "mutants/fuzz-storage-5.json", 212, 12),
        ),
    ]
    return [kill_row(name, {"corpus": c, "explore": e, "fuzz": f}) for name, c, e, f in table]


def sample_results(seed: int = 7, flaws: bool = True) -> list[dict[str, Any]]:
    """Result documents (explore, two fuzz batches, replay, mutants) as the runs emit them."""
    rng = random.Random(seed)
    torn = _TORN[1:] if flaws else _TORN  # with flaws, "magic" is never hit: an unmet requirement
    checks = {name: rng.randint(200, 9000) for name in INVARIANTS}
    if flaws:
        checks["lock_exclusion"] = 0
    explored = _cases(rng, 420, "explore", torn)
    docs: list[dict[str, Any]] = [
        {
            "meta": {"kind": "explore", "scenarios": 12, "bound": 64, "seconds": 41.7, "seeds": [1, 2, 3]},
            "cases": explored,
            "checked": checks,
            **_explore_states(random.Random(seed + 1), explored, torn),  # own RNG: the rest stays as it was
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
            {
                "scenario": "tests/corpus/torn-tail-after-publication.json",
                "digest_a": "9f1c2e7a44b0d3e1a8c6",
                "digest_b": "9f1c2e7a44b0d3e1a8c6",
                "same": True,
            },
            {
                "scenario": "tests/corpus/kill-between-call-and-effect.json",
                "digest_a": "51aa09c3e2d77f10bb42",
                "digest_b": "51aa09c3e2d77f10bb42",
                "same": True,
            },
            {
                "scenario": "tests/corpus/power-cut-reordered.json",
                "digest_a": "0c3d91f2aa61b7e5d004",
                "digest_b": "0c3d91f2aa61b7e5d004" if not flaws else "77e0b1a9c2f4d6e8a013",
                "same": not flaws,
            },
        ],
    }
    kill_matrix = _kill_matrix(flaws)
    docs.append(replay)
    docs.append(
        {"meta": {"kind": "mutants", "mutants": len(kill_matrix), "seconds": 188.0, "seeds": [1001, 1002]}, "kill_matrix": kill_matrix}
    )
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


def sample_view(seed: int = 7, flaws: bool = True) -> CoverageView:
    """The view of :func:`sample_results` (its documents read through the one converter)."""
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
