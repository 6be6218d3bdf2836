"""Triage aid for mutmut survivors: does the mutant change anything the corpus can see?

Run inside mutmut's ``mutants/`` copy (where every function of a mutated module is a
trampoline that reads ``MUTANT_UNDER_TEST``)::

    cd reports/mutation/work/mutants && python -m dsh_sim.mutation.probe NAME... > probe.jsonl

For each mutant it replays the passing corpus with the mutant switched on and prints one JSON
line: the scenarios whose run differs from the committed one — a changed trace digest (the
disk bytes, the fs operations, the named points), a fault rule that no longer fires, a step
that cannot run.  This is *not* a kill (a change is not a bug); it sorts the survivors: one
that changes no trace of any scenario is a candidate for ``equivalent`` (or is not reached),
one that changes traces but breaks no invariant is where to look for a missing check.
"""

from __future__ import annotations

import json
import os
import sys

from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.mutation import harness


def _kind(problem: str) -> str:
    for prefix, kind in (("trace digest", "digest"), ("fault rule", "unfired"), ("invariant violated", "violation")):
        if problem.startswith(prefix):
            return kind
    return "step"


def main(argv: list[str]) -> int:
    if not os.path.isdir("runtime") or not os.path.exists("mutmut-stats.json"):
        print("run this inside mutmut's mutants/ directory (e.g. reports/mutation/work/mutants)", file=sys.stderr)
        return 2
    scenarios = harness.corpus()
    with capture_runtime_logs():
        for name in argv:
            os.environ["MUTANT_UNDER_TEST"] = name
            try:
                changes = dict(harness.replay_changes(scenarios))
                error = None
            except Exception as err:  # the mutant broke a replay outright: report, go on
                changes, error = {}, f"{type(err).__name__}: {err}"
            finally:
                os.environ["MUTANT_UNDER_TEST"] = ""
            kinds = sorted({_kind(p) for ps in changes.values() for p in ps})
            line = {"name": name, "changed": len(changes), "scenarios": sorted(changes)[:8], "kinds": kinds, "error": error}
            print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
