"""Writing scenarios by hand: ``validate``, ``schema``, ``reference`` and ``new``."""

from __future__ import annotations

import json
import os
from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, CliError, emit_json
from dsh_sim.outputs import check_output_file, write_new, write_replacing


def _write(text: str, out: str | None) -> None:
    if out is None:
        print(text, end="")
        return
    check_output_file(out, "--out")
    write_replacing(out, text)
    print(f"wrote {out}")


def validate(args: Any) -> int:
    results = [api.validate(path) for path in api.expand(args.files)]
    if args.json:
        emit_json([{"path": r.path, "ok": r.ok, "problems": list(r.problems), "notes": list(r.notes)} for r in results])
    else:
        for result in results:
            if result.ok:
                print(f"ok    {result.path}")
            for line in result.problems:
                print(f"FAIL  {line}")
            for line in result.notes:
                print(f"note  {line}")
        bad = sum(not r.ok for r in results)
        print(f"{len(results) - bad}/{len(results)} scenario file(s) valid")
    return EXIT_OK if all(r.ok for r in results) else EXIT_VIOLATION


def new(args: Any) -> int:
    text = api.new_scenario(args.tool, args.boundary, args.crash, args.name)
    if args.out is None:
        print(text, end="")
        return EXIT_OK
    if os.path.exists(args.out):
        raise CliError(f"{args.out}: already exists; new never overwrites")
    check_output_file(args.out, "--out")
    try:  # whole or not at all; a name holding a lone surrogate (from argv) is written escaped
        write_new(args.out, text)
    except FileExistsError:
        raise CliError(f"{args.out}: already exists; new never overwrites") from None
    print(f"wrote {args.out}; check it with: dsh-sim replay --update-digest {args.out}")
    return EXIT_OK


def main(args: Any) -> int:
    if args.action == "validate":
        return validate(args)
    if args.action == "new":
        return new(args)
    if args.action == "schema":
        _write(json.dumps(api.schema(), indent=2, ensure_ascii=False) + "\n", args.out)
    else:
        _write(api.reference(), args.out)
    return EXIT_OK
