"""The determinism re-check: replay one scenario in two fresh interpreters and compare.

Same seed and scenario must give the same trace digest and the same session bytes in a new
process under any ``PYTHONHASHSEED``; the harness checks this about itself.  The scenario
goes to the child on stdin and the child's answer — its digest, the session's hash and the
trace records — comes back on stdout, so the check writes no file at all: a re-check
interrupted by SIGTERM used to leave its trace file behind, and a campaign task on another
machine has no scenario file to name.  Children are started through
:mod:`dsh_sim.children` (killed on an interrupt, and with their parent).

Run as ``python -m dsh_sim.drivers.recheck LABEL`` it is the child.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import attrs

from dsh_sim.children import ChildKilled, die_with_parent, run_child
from dsh_sim.engine.trace import first_divergence
from dsh_sim.errors import InputError
from dsh_sim.evidence.document import Determinism

HASH_SEEDS = ("1", "2")


@attrs.frozen
class DeterminismCheck:
    """One scenario replayed in two fresh processes (different PYTHONHASHSEED): both digests
    and session hashes, and where the two traces parted when they differ."""

    scenario: str
    digest_a: str
    digest_b: str
    session_a: str | None
    session_b: str | None
    divergence: str | None

    @property
    def same(self) -> bool:
        return self.digest_a == self.digest_b and self.session_a == self.session_b

    def entry(self) -> Determinism:
        """The ``determinism`` entry of a results document."""
        how = f"two fresh processes, PYTHONHASHSEED {' and '.join(HASH_SEEDS)}"
        return Determinism(self.scenario, self.same, self.digest_a, self.digest_b, how)


def _replay_in_child(label: str, text: str, hashseed: str) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
    import os

    env = {**os.environ, "PYTHONHASHSEED": hashseed}
    code, out, err = run_child([sys.executable, "-m", "dsh_sim.drivers.recheck", label], text.encode("utf-8"), env)
    try:
        lines = out.decode("utf-8").splitlines()
        row = json.loads(lines[0])
        records = [tuple(json.loads(line)) for line in lines[1:]]
    except (ValueError, IndexError):
        detail = (err or out).decode("utf-8", "replace").strip().splitlines()
        raise InputError(f"{label}: the determinism re-run failed (exit {code}): {(detail or ['no output'])[-1][:200]}") from None
    return row, records


def check(label: str, text: str) -> DeterminismCheck:
    """Replay the scenario ``text`` (the file ``label``) in two fresh processes; on a
    difference, the trace records of both runs show where they parted."""
    runs = [_replay_in_child(label, text, hashseed) for hashseed in HASH_SEEDS]
    (a, records_a), (b, records_b) = runs
    divergence = first_divergence(records_a, records_b) if a["digest"] != b["digest"] else None
    return DeterminismCheck(
        label, a["digest"], b["digest"], a["session_sha256"], b["session_sha256"], divergence.describe() if divergence else None
    )


def _child(label: str) -> int:
    die_with_parent()
    from dsh_sim.drivers.replay import run_scenario
    from dsh_sim.engine.logs import capture_runtime_logs
    from dsh_sim.scenario.files import parse

    scenario = parse(json.loads(sys.stdin.read()), label)
    with capture_runtime_logs():
        run, sim = run_scenario(scenario, keep_trace=True)
    out = sys.stdout
    out.write(json.dumps({"digest": run.digest, "session_sha256": run.session_sha256}) + "\n")
    for record in sim.trace.records:
        out.write(json.dumps(list(record)) + "\n")
    out.flush()
    return 0


__all__ = ["ChildKilled", "DeterminismCheck", "check"]

if __name__ == "__main__":
    sys.exit(_child(sys.argv[1] if len(sys.argv) > 1 else "<stdin>"))
