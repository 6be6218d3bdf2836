"""``dsh-sim explore SCENARIO...``: every crash state of each scenario, checked
(:func:`dsh_sim.api.explore_files`; ``--runtime dsh``: :func:`dsh_sim.api.dsh_explore`)."""

from __future__ import annotations

from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, CliError, emit_json
from dsh_sim.cli.commands.dsh_cmd import against_line
from dsh_sim.outputs import check_output_dir, check_output_file


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
    if getattr(args, "runtime", "dsh-sim") == "dsh-route":
        from dsh_sim.cli.commands import route_cmd

        return route_cmd.explore(args)
    if getattr(args, "runtime", "dsh-sim") == "dsh":  # extension point: the published DSH's writer on SimFS
        if getattr(args, "against", None):
            raise CliError("--against dsh compares dsh-sim's runtime with DSH; it does not go with --runtime dsh")
        return _dsh_writer(args)
    if args.results:
        check_output_file(args.results, "--results")
    check_output_dir(args.found_dir, "--found-dir")
    batch = api.explore_files(
        args.files,
        crash=args.crash,
        model=args.model,
        bound=args.bound,
        found_dir=args.found_dir,
        results=args.results,
        against_dsh=getattr(args, "against", None) == "dsh",
        progress=None if args.json else _print,
    )
    if batch.against is not None and not args.json:
        print(against_line(batch.against))
    if args.json:
        emit_json([explored.row() for explored in batch.explored])
    return EXIT_VIOLATION if batch.failed else EXIT_OK


def _print(explored: api.Explored) -> None:
    s = explored.row()
    sampled = f", sampled at {sum(s['sampled_points'].values())} point(s)" if s["sampled_points"] else " (exhaustive)"
    print(
        f"{explored.path}: {s['explored']}/{s['possible']} crash states checked at {s['crash_points']} points{sampled}; "
        f"{s['recoveries_run']} distinct recoveries in {s['seconds']}s; {len(s['violations'])} violation(s)"
    )
    if s["not_applicable"]:
        print(f"  NOT EXPLORED past {s['not_applicable']} (the steps after it never ran)")
    for line in violation_lines(s):
        print(line)


def _dsh_writer(args: Any) -> int:
    """``--runtime dsh``: the published DSH writer (Node, on SimFS) explored."""

    def show(path: str, result: api.DshExploreResult | None) -> None:
        if result is None:
            print(f"{path}: no prompt steps, nothing for the DSH writer to write")
            return
        if not args.json:
            print(
                f"{path}: DSH writer ({result.compression}) crashed at {result.points} filesystem operations, {result.states} crash states, "
                f"{result.recoveries} distinct DSH recoveries in {result.seconds:.1f}s; {len(result.violations)} violation(s)"
            )
            for v in result.violations[:10]:
                print(f"  {v.invariant} at point {v.point} ({v.crash}): {v.detail}")

    explored = api.dsh_explore(args.files, crash=args.crash, bound=args.bound, results=args.results, progress=show)
    if args.json:
        emit_json(explored.document.to_json())
    return EXIT_VIOLATION if explored.failed else EXIT_OK
