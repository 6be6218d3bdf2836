"""A moved digest shows where the run parted: the trace is recorded beside its digest, and a
replay whose digest moved names the first record that differs — and counts a change no oracle
judged as such, not as a pass."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from dsh_sim import api
from dsh_sim.drivers import traces
from dsh_sim.mutants.patch import Edit, applied
from tests.support.paths import REGRESSIONS

NAME = "window-stream-across-one-fixed-window"
# an equivalent-looking edit no oracle judges: the store's worker task gets another name
RENAMED_WORKER = Edit("runtime.persistence.store", "SessionStore.bind", 'name=f"write-behind:{session.id}"', 'name=f"writer:{session.id}"')


def _copy(tmp_path: Path) -> str:
    path = str(tmp_path / f"{NAME}.json")
    shutil.copy(os.path.join(REGRESSIONS, f"{NAME}.json"), path)
    return path


def test_every_committed_scenario_keeps_its_trace_beside_its_digest() -> None:
    for name in os.listdir(REGRESSIONS):
        if name.endswith(".json"):
            scenario = api.load(os.path.join(REGRESSIONS, name))
            if scenario.trace_digest is not None:
                assert traces.load(os.path.join(REGRESSIONS, name), scenario.trace_digest) is not None, name


def test_update_digest_records_the_trace_and_a_move_shows_where(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    assert traces.load(path, api.load(path).trace_digest) is None  # (the copy has no trace beside it)
    result = api.replay(path, update_digest=True)
    assert result.ok and traces.load(path, result.run.digest) is not None
    with applied([RENAMED_WORKER]):
        moved = api.replay(path)
    assert not moved.ok and moved.moved is not None
    assert "writer:sim-session" in str(moved.moved.now) and "write-behind:sim-session" in str(moved.moved.recorded)
    assert moved.moved_unjudged  # every oracle held: a change no model judged
    assert any("the trace moved at record" in p for p in moved.problems)


def test_a_stale_trace_shows_nothing(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    Path(traces.trace_path(path)).write_bytes(traces.encode([("not", "this", "run")]))
    assert traces.load(path, api.load(path).trace_digest) is None
