"""``dsh-sim replay FILE... [--json]``: run scenarios without Hypothesis and judge them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any

import attrs

from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, CliError, emit_json
from dsh_sim.drivers.replay import judge, run_scenario
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.engine.trace import first_divergence
from dsh_sim.scenario.model import Scenario, ScenarioError, discover, load, save


def expand(paths: list[str]) -> list[str]:
    out: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            out.extend(discover(path))
        elif os.path.exists(path):
            out.append(path)
        else:
            raise CliError(f"{path}: no such file or directory")
    if not out:
        raise CliError(f"no scenario files in {', '.join(paths)}")
    return out


def replay_one(path: str, *, update_digest: bool = False, trace: bool = False, scenario: Scenario | None = None) -> dict[str, Any]:
    """Replay and judge one scenario file (``scenario``: the file already loaded)."""
    if scenario is None:
        scenario = load(path)
    with capture_runtime_logs():
        result, sim = run_scenario(scenario, keep_trace=trace)
    problems = judge(scenario, result, check_digest=not update_digest)
    row: dict[str, Any] = {
        "scenario": path,
        "name": scenario.name,
        "ok": not problems,
        "problems": problems,
        "expected": scenario.expect.to_json(),
        "mutants": list(scenario.mutants),
        "invariant": result.invariant,
        "digest": result.digest,
        "recorded_digest": scenario.trace_digest,
        "session_sha256": result.session_sha256,
        "outcomes": list(result.outcomes),
        "seconds": round(result.seconds, 3),
        "cases": list(result.cases),
        "checked": dict(result.stats["checked"]),
        "points": dict(sim.point_hits),
    }
    if update_digest and not problems and scenario.trace_digest != result.digest:
        save(attrs.evolve(scenario, trace_digest=result.digest), path, overwrite=True)
        row["updated"] = True
    if trace:
        row["trace"] = [list(r) for r in sim.trace.records]
    return row


def check_determinism(path: str) -> dict[str, Any]:
    """Replay in two fresh processes with different PYTHONHASHSEED: same digest, same bytes?

    On a difference, the trace records of both runs show where they parted.
    """
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for hashseed in ("1", "2"):
            out = os.path.join(tmp, f"trace-{hashseed}.jsonl")
            env = {**os.environ, "PYTHONHASHSEED": hashseed}
            done = subprocess.run(
                [sys.executable, "-m", "dsh_sim", "replay", path, "--trace-out", out, "--json"],
                env=env,
                check=False,
                capture_output=True,
                text=True,
            )
            try:
                row = json.loads(done.stdout)[0]
                with open(out, encoding="utf-8") as handle:
                    records = [tuple(json.loads(line)) for line in handle]
            except (ValueError, IndexError, OSError):
                raise CliError(f"{path}: the determinism re-run failed: {(done.stderr or done.stdout).strip()[:200]}") from None
            runs.append((row, records))
    (a, records_a), (b, records_b) = runs
    same = a["digest"] == b["digest"] and a["session_sha256"] == b["session_sha256"]
    divergence = None if same else first_divergence(records_a, records_b)
    return {
        "scenario": path,
        "digest_a": a["digest"],
        "digest_b": b["digest"],
        "session_a": a["session_sha256"],
        "session_b": b["session_sha256"],
        "same": same,
        "divergence": divergence.describe() if divergence else None,
    }


def main(args: Any) -> int:
    files = expand(args.files)
    if args.check_determinism:
        checks = [check_determinism(path) for path in files]
        if args.json:
            emit_json(checks)
        for check in checks:
            if not args.json:
                print(f"{'SAME' if check['same'] else 'DIFFERENT'}  {check['scenario']}")
                if check["divergence"]:
                    print(check["divergence"])
        return EXIT_OK if all(c["same"] for c in checks) else EXIT_VIOLATION
    rows = []
    for path in files:
        try:
            rows.append(replay_one(path, update_digest=args.update_digest, trace=bool(args.trace_out)))
        except ScenarioError as err:
            raise CliError(str(err)) from None
    if args.trace_out:
        with open(args.trace_out, "w", encoding="utf-8") as handle:
            for row in rows:
                for record in row["trace"]:
                    handle.write(json.dumps(record) + "\n")
    if args.json:
        emit_json([{k: v for k, v in r.items() if k not in ("cases", "trace")} for r in rows])
    else:
        for row in rows:
            mark = "PASS" if row["ok"] else "FAIL"
            if row["invariant"] and row["expected"].get("outcome") == "violation":
                outcome = f"reproduced the expected violation of {row['expected'].get('invariant') or row['invariant']}"
            elif row["invariant"]:
                outcome = f"violation {row['invariant']}"
            else:
                outcome = "all invariants held"
            extra = "  (digest recorded)" if row.get("updated") else ""
            print(f"{mark}  {row['scenario']}  [{outcome}; digest {row['digest'][:12]}; {row['seconds']}s]{extra}")
            for problem in row["problems"]:
                print(f"      {problem}")
        failed = sum(not r["ok"] for r in rows)
        print(f"{len(rows) - failed}/{len(rows)} scenarios hold")
    return EXIT_OK if all(r["ok"] for r in rows) else EXIT_VIOLATION
