"""``dsh-sim explore SCENARIO...``: every crash state of each scenario, checked."""

from __future__ import annotations

import os
from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, CliError, emit_json
from dsh_sim.cli.commands.dsh_cmd import against_line, against_oracle
from dsh_sim.drivers.explore import ExploreResult
from dsh_sim.dsh.against import delta
from dsh_sim.evidence.results import explore_document, write
from dsh_sim.outputs import check_output_dir, check_output_file


def summary(result: ExploreResult) -> dict[str, Any]:
    return {
        "scenario": result.scenario,
        "crash_points": len(result.points),
        "states": len(result.states),
        "recoveries_run": sum(not s.shared for s in result.states),
        "possible": sum(result.possible.values()),
        "explored": sum(result.explored.values()),
        "sampled_points": result.sampled,
        "per_point": {
            name: {"possible": result.possible[name], "explored": result.explored.get(name, 0)} for name in sorted(result.possible)
        },
        "violations": [
            {
                "invariant": v.invariant,
                "point": result.points[s.point].point,
                "crash": s.kind,
                "state": s.cut,
                "phase": s.phase,
                "message": v.describe(),
                "scenario": s.repro,
            }
            for s, v in result.violations
        ],
        "seconds": round(result.seconds, 3),
        "not_applicable": result.not_applicable,
    }


def violation_lines(s: dict[str, Any]) -> list[str]:
    """One line per violation class (invariant, point, crash kind): where, how, how often, and
    the scenario that replays it."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for v in s["violations"]:
        groups.setdefault((v["invariant"], v["point"], v["crash"]), []).append(v)
    lines = []
    for (invariant, point, crash), found in groups.items():
        first = found[0]
        state = f", state {first['state']}" if first["state"] else ""
        lines.append(f"  VIOLATION {invariant} at {point} ({crash}, phase {first['phase']}{state}; {len(found)} state(s))")
        lines.append(f"    {first['message'].splitlines()[0]}")
        if first["scenario"]:
            lines.append(f"    replay: dsh-sim replay {first['scenario']}")
    return lines


def main(args: Any) -> int:
    if getattr(args, "runtime", "dsh-sim") == "dsh":  # extension point: the published DSH's writer on SimFS
        from dsh_sim.cli.commands.dsh_explore import run_explore_dsh

        if getattr(args, "against", None):
            raise CliError("--against dsh compares dsh-sim's runtime with DSH; it does not go with --runtime dsh")
        return run_explore_dsh(args, list(api.expand(args.files)))
    if args.results:
        check_output_file(args.results, "--results")
    check_output_dir(args.found_dir, "--found-dir")
    files = api.expand(args.files)
    scenarios = [api.load(path) for path in files]  # every file is checked before the first explore starts
    out = []
    docs = []
    with against_oracle(getattr(args, "against", None)) as oracle:
        for path, scenario in zip(files, scenarios):
            before = oracle.summary() if oracle is not None else {}
            result = api.explore(scenario, crash=args.crash, model=args.model, bound=args.bound, found_dir=args.found_dir)
            out.append(summary(result))
            docs.append(explore_document(result, path, result.seconds))
            if oracle is not None:
                out[-1]["against_dsh"] = docs[-1]["dsh_against"] = delta(before, oracle.summary())
            _print(args, path, out[-1])
        if oracle is not None and not args.json:
            print(against_line(oracle))
    if args.results:
        for index, doc in enumerate(docs):
            base, ext = os.path.splitext(args.results)
            write(doc, args.results if len(docs) == 1 else f"{base}-{index}{ext or '.json'}")
    if args.json:
        emit_json(out)
    return EXIT_OK if not any(s["violations"] or s["not_applicable"] for s in out) else EXIT_VIOLATION


def _print(args: Any, path: str, s: dict[str, Any]) -> None:
    if args.json:
        return
    sampled = f", sampled at {sum(s['sampled_points'].values())} point(s)" if s["sampled_points"] else " (exhaustive)"
    print(
        f"{path}: {s['explored']}/{s['possible']} crash states checked at {s['crash_points']} points{sampled}; "
        f"{s['recoveries_run']} distinct recoveries in {s['seconds']}s; {len(s['violations'])} violation(s)"
    )
    if s["not_applicable"]:
        print(f"  NOT EXPLORED past {s['not_applicable']} (the steps after it never ran)")
    for line in violation_lines(s):
        print(line)
