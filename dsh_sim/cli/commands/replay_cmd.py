"""``dsh-sim replay FILE... [--json]``: run scenarios without Hypothesis and judge them
(:func:`dsh_sim.api.replay`; ``--check-determinism``: :func:`dsh_sim.api.check_determinism`)."""

from __future__ import annotations

import json
from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, CliError, emit_json
from dsh_sim.cli.commands.dsh_cmd import against_line
from dsh_sim.outputs import check_output_file, write_replacing


def _outcome(result: api.ReplayResult) -> str:
    expect = result.scenario.expect
    invariant = result.run.invariant
    if invariant and expect.outcome == "violation":
        return f"reproduced the expected violation of {expect.invariant or invariant}"
    if invariant:
        return f"violation {invariant}"
    return "all invariants held"


def main(args: Any) -> int:
    if getattr(args, "runtime", "dsh-sim") == "dsh-route":
        from dsh_sim.cli.commands import route_cmd

        return route_cmd.replay(args)
    if args.check_determinism and (args.update_digest or args.trace_out):
        # the determinism check replays in fresh processes: it neither records nor traces
        flag = "--update-digest" if args.update_digest else "--trace-out"
        raise CliError(f"--check-determinism and {flag} do not go together (the check replays in fresh processes)")
    if args.trace_out:
        check_output_file(args.trace_out, "--trace-out")
    files = api.expand(args.files)
    for path in files:  # every file is checked before the first replay starts
        scenario = api.load(path)
        if scenario.expect.invariant == api.DSH_AGREES and getattr(args, "against", None) != "dsh":
            raise CliError(
                f"{path}: expects a {api.DSH_AGREES} violation, which only a comparison with DSH shows: replay it with --against dsh"
            )
    if args.check_determinism and getattr(args, "against", None):
        raise CliError("--check-determinism replays in fresh processes without DSH; it does not go with --against")
    if args.check_determinism:
        checks = [api.check_determinism(path) for path in files]
        if args.json:
            emit_json([_check_row(check) for check in checks])
        else:
            for check in checks:
                print(f"{'SAME' if check.same else 'DIFFERENT'}  {check.scenario}")
                if check.divergence:
                    print(check.divergence)
        return EXIT_OK if all(c.same for c in checks) else EXIT_VIOLATION
    with api.against_dsh(getattr(args, "against", None) == "dsh") as oracle:
        results = [api.replay(path, update_digest=args.update_digest, keep_trace=bool(args.trace_out)) for path in files]
        compared = against_line(oracle.summary()) if oracle is not None and not args.json else None
    if args.trace_out:
        # by rename: a link or FIFO planted at the name during the replay is replaced, never
        # written through (a plain open followed the link, and blocked on the FIFO)
        lines = [json.dumps(list(record)) + "\n" for result in results for record in result.trace or ()]
        write_replacing(args.trace_out, "".join(lines))
    if args.json:
        emit_json([{k: v for k, v in r.row().items() if k != "cases"} for r in results])
    else:
        for result in results:
            extra = "  (digest recorded)" if result.updated else ""
            if result.scenario.trace_digest is None and not result.updated:
                extra = "  (no digest recorded: --update-digest records it)"
            mark = "PASS" if result.ok else "FAIL"
            print(f"{mark}  {result.label}  [{_outcome(result)}; digest {result.run.digest[:12]}; {result.run.seconds:.3f}s]{extra}")
            for problem in result.problems:
                print(f"      {problem}")
        failed = sum(not r.ok for r in results)
        print(f"{len(results) - failed}/{len(results)} scenarios hold")
        unjudged = sum(r.moved_unjudged for r in results)
        if unjudged:
            print(
                f"{unjudged} scenario(s) moved their trace while every oracle held: judge each change above before "
                "re-recording it (--update-digest) — a change no model judged is a gap in the models, not a pass"
            )
        if compared:
            print(compared)
    return EXIT_OK if all(r.ok for r in results) else EXIT_VIOLATION


def _check_row(check: api.DeterminismCheck) -> dict[str, Any]:
    return {
        "scenario": check.scenario,
        "digest_a": check.digest_a,
        "digest_b": check.digest_b,
        "session_a": check.session_a,
        "session_b": check.session_b,
        "same": check.same,
        "divergence": check.divergence,
    }
