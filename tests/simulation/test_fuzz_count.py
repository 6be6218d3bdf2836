"""``examples`` means what Hypothesis' ``max_examples`` means: a clean run of N examples runs
exactly N, whatever Hypothesis discarded on the way (issue 33: ``--examples 12`` reported 13-20
examples per shard, because every execution was counted, those Hypothesis throws away for
overrunning its buffer included, and the second batch was sized from that count)."""

from __future__ import annotations

import pytest

from dsh_sim.drivers.fuzz import fuzz
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.evidence.document import Meta


# seed 7 overruns Hypothesis' buffer in each machine, so some executions are discarded: the count
# must leave them out (the storage machine's draws moved with its edge values and seams: 2 -> 1)
@pytest.mark.parametrize(("machine", "examples", "discarded"), [("durability", 12, 2), ("storage", 30, 1)])
def test_a_clean_run_of_n_examples_runs_exactly_n(machine: str, examples: int, discarded: int, tmp_path: object) -> None:
    with capture_runtime_logs():
        run = fuzz(machine, examples=examples, seed=7, budget=3600, out_dir=str(tmp_path))
    assert run.found is None
    assert run.examples == examples  # (was 14, and 28 for storage: 30 executions counted)
    assert run.discarded == discarded and run.shrink_replays == 0
    meta = run.document(Meta()).meta
    assert meta is not None and (meta.examples, meta.discarded_examples, meta.shrink_replays) == (examples, discarded, 0)
