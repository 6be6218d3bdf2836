"""``--runtime dsh-route`` of ``dsh-sim replay``, ``explore`` and ``points``: the published DSH
route under the simulator (:func:`dsh_sim.api.route_replay`, :func:`~dsh_sim.api.route_explore`,
:func:`~dsh_sim.api.route_points`)."""

from __future__ import annotations

import json
import sys
from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, CliError, emit_json
from dsh_sim.outputs import check_output_file, write_replacing


def _refuse(args: Any, *flags: str) -> None:
    for flag in flags:
        if getattr(args, flag.lstrip("-").replace("-", "_"), None):
            raise CliError(f"{flag} does not go with --runtime dsh-route")


def _findings_seen(ids: set[str]) -> list[str]:
    lines = []
    findings = api.route_findings()
    for finding_id in sorted(ids):
        finding = findings[finding_id]
        repro = f"; reproduce: node {finding.repro_path()}" if finding.repro else ""
        lines.append(f"  {finding_id} ({'DSH' if finding.right == 'dsh-sim' else 'by design'}): {finding.title}{repro}")
    return lines


def replay(args: Any) -> int:
    _refuse(args, "--update-digest", "--trace-out", "--against")
    if args.check_determinism:
        checks = [api.route_determinism(path) for path in api.expand(args.files)]
        if args.json:
            emit_json([{"scenario": c.scenario, "same": c.same, "digests": list(c.digests), "sessions": list(c.sessions)} for c in checks])
        else:
            for c in checks:
                print(f"{'SAME' if c.same else 'DIFFERENT'}  {c.scenario}  (digests {', '.join(d[:12] for d in c.digests)})")
        return EXIT_OK if all(c.same for c in checks) else EXIT_VIOLATION

    def show(r: api.RouteReplay) -> None:
        if args.json:
            return
        if r.skipped is not None:
            print(f"SKIP  {r.path}  [{r.skipped}]")
            return
        if r.error is not None:
            print(f"FAIL  {r.path}  [the route host failed: {r.error}]")
            return
        assert r.run is not None
        what = "all invariants held"
        if r.expected is not None:
            what = f"reproduced the expected violation of {r.expected}" if r.ok else f"expected a violation of {r.expected}"
        elif r.violations:
            what = ", ".join(sorted({v.invariant + (f" [{v.finding}]" if v.finding else "") for v in r.violations}))
        diff = ""
        if r.comparison is not None:
            diff = "; dsh-sim agrees" if r.comparison.comparable and not r.comparison.differences else ""
            if r.comparison.differences:
                diff = f"; {len(r.comparison.differences)} difference(s) from dsh-sim ({len(r.comparison.unexplained)} unexplained)"
            elif not r.comparison.comparable:
                diff = "; not compared (a crash inside the file system)"
        print(f"{'PASS' if r.ok else 'FAIL'}  {r.path}  [{what}{diff}; digest {r.run.digest[:12]}]")
        for line in r.run.unfired:
            print(f"      UNFIRED {line}")
        for v in r.violations:
            if r.expected is None or v.invariant != r.expected:
                print(f"      {v.line()}")
        if r.comparison is not None:
            for d in r.comparison.differences:
                print(f"      differs: {d.line()}")

    replays = api.route_replay(
        args.files,
        differential=not args.no_differential,
        progress=show,
        policy=args.route_policy,
        tools=args.route_tools,
        extra=tuple(args.route_plugin),
    )
    if args.json:
        emit_json([r.row() for r in replays.results])
        return EXIT_VIOLATION if replays.failed else EXIT_OK
    s = replays.summary()
    print(
        f"DSH route: {s['ran']} of {s['scenarios']} scenario(s) run, {s['skipped']} skipped; {s['failed']} failed; "
        f"{s['compared']} compared with dsh-sim: {s['differences']} difference(s), {s['unexplained_differences']} unexplained"
    )
    for line in _findings_seen(set(s["explained"])):
        print(line)
    return EXIT_VIOLATION if replays.failed else EXIT_OK


def explore(args: Any) -> int:
    _refuse(args, "--against", "--bound")
    if args.model != "prefix":
        raise CliError("--model reorder does not go with --runtime dsh-route (its power states follow the prefix model)")
    if args.results:
        check_output_file(args.results, "--results")

    def show(e: api.RouteExploration) -> None:
        if args.json:
            return
        if e.result is None:
            print(f"SKIP  {e.path}  [{e.skipped}]")
            return
        r = e.result
        verdicts = ", ".join(f"{k} {n}" for k, n in r.verdicts.items()) or "none"
        compared = sum(c.matched for c in r.compared)
        differing = sum(bool(c.differences) for c in r.compared)
        against = f"; {compared} kill(s) compared with dsh-sim, {differing} differ" if r.compared else ""
        print(
            f"{e.path}: DSH route crashed at {r.points} points, {r.states} crash states, {r.recoveries} distinct DSH recoveries "
            f"in {r.seconds:.1f}s; verdicts: {verdicts}{against}; {len(r.violations)} violation(s), {e.unexplained} unexplained"
        )
        for c in r.compared:
            for d in c.unexplained:
                print(
                    f"  DIFFERS from dsh-sim after a kill at {c.point} (lifetime {c.lifetime}, #{c.occurrence}{', ' + c.call_id if c.call_id else ''}): {d.line()}"
                )
        groups: dict[tuple[str, str, str, str | None], int] = {}
        for v in r.violations:
            key = (v.invariant, v.name, v.crash, v.finding)
            groups[key] = groups.get(key, 0) + 1
        for (invariant, point, crash, finding), count in groups.items():
            tag = f" [{finding}]" if finding else ""
            first = next(v for v in r.violations if (v.invariant, v.name, v.crash, v.finding) == (invariant, point, crash, finding))
            print(f"  VIOLATION {invariant}{tag} at {point} ({crash}; {count} state(s)): {first.detail}")

    explored = api.route_explore(args.files, crash=args.crash, differential=not args.no_differential, progress=show)
    document: dict[str, Any] = {"runtime": "dsh-route", "totals": explored.totals(), "scenarios": [e.row() for e in explored.explored]}
    if args.results:
        write_replacing(args.results, json.dumps(document, indent=1, sort_keys=True) + "\n")
    if args.json:
        emit_json(document)
    else:
        t = document["totals"]
        print(
            f"DSH route: {t['explored']} scenario(s) explored ({t['skipped']} skipped), {t['states']} crash states at "
            f"{t['crash_points']} points, {t['recoveries']} recoveries; verdicts {t['verdicts']}; "
            f"{t['kills_compared']} kills compared with dsh-sim ({t['kills_differing']} differ, {t['kills_differing_unexplained']} unexplained; "
            f"{t['not_announced_by_dsh_sim']} not announced by dsh-sim); {t['unexplained']} unexplained"
        )
        for line in _findings_seen(set(t["explained"])):
            print(line)
    return EXIT_VIOLATION if explored.failed else EXIT_OK


def fuzz(args: Any) -> int:
    _refuse(args, "--against", "--results", "--steps", "--mutant", "--no-checkpoint-policy")
    if args.machine != "durability" or args.compression != "zstd":
        raise CliError("--runtime dsh-route fuzzes the durability route with zstd logs (no --machine or --compression)")

    def show(examples: int, crashes: int, seconds: float) -> None:
        if not args.json and sys.stderr.isatty():
            sys.stderr.write(f"\rfuzz dsh-route: {examples} scenarios, {crashes} crashes, {seconds:.1f}s / {args.budget:.0f}s ")
            sys.stderr.flush()

    run = api.route_fuzz(
        examples=args.examples or 20,
        budget=args.budget,
        seed=args.seed,
        found_dir=args.found_dir,
        progress=show,
        policy=args.route_policy,
        tools=args.route_tools,
        extra=tuple(args.route_plugin),
    )
    if not args.json and sys.stderr.isatty():
        sys.stderr.write("\n")
    document = {
        "runtime": "dsh-route",
        "seed": run.seed,
        "examples": run.examples,
        "crashes": run.crashes,
        "seconds": round(run.seconds, 3),
        "found": run.found,
        "problems": list(run.problems),
    }
    if args.json:
        emit_json(document)
    else:
        print(
            f"fuzz dsh-route seed={run.seed}: {run.examples} scenarios on the route and dsh-sim, {run.crashes} crashes, {run.seconds:.1f}s"
        )
        if run.found:
            print(f"FOUND (shrunk): {run.found}")
            for line in run.problems:
                print(f"  {line}")
            print(f"  replay: dsh-sim replay --runtime dsh-route {run.found}")
        else:
            print("no violation and no unexplained difference")
    return EXIT_VIOLATION if run.found else EXIT_OK


def points(args: Any) -> int:
    table = api.route_points()
    if args.json:
        emit_json(
            [
                {"name": p.name, "description": p.description, "keys": list(p.keys), "ours": p.ours, "comparable": p.comparable}
                for p in table
            ]
        )
        return EXIT_OK
    print("the DSH route host's points (crash only); `ours` is the same moment in dsh-sim's runtime")
    for p in table:
        ours = f"  = {p.ours}" if p.ours else ""
        print(f"  {p.name:<28} {p.description}{ours}")
        print(f"  {'':<28} match keys: {', '.join(p.keys) or '-'}{'' if p.comparable else '  (not compared: the writers differ here)'}")
    return EXIT_OK
