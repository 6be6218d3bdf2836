"""Replaying scenario files: one run judged (outcome, fired faults, recorded digest), and the
determinism check in two fresh processes.

Here because replay is what every scenario file is for, and what the campaign's replay
shards, the pytest plugin and ``dsh-sim replay`` share (the JSON row of :class:`ReplayResult`).
"""

from __future__ import annotations

from typing import Any

import attrs

from dsh_sim.drivers import recheck, traces
from dsh_sim.drivers.recheck import DeterminismCheck
from dsh_sim.drivers.replay import RunResult, judge, run_scenario
from dsh_sim.dsh.against import NAME as DSH_AGREES
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.inputs import read_regular
from dsh_sim.operations.scenarios import Target, load, scenario_of
from dsh_sim.scenario.codec import to_json
from dsh_sim.scenario.files import MAX_SCENARIO_BYTES, save
from dsh_sim.scenario.model import Scenario

__all__ = ["DSH_AGREES", "DeterminismCheck", "ReplayResult", "check_determinism", "replay"]


@attrs.frozen
class ReplayResult:
    """One scenario replayed and judged: its run, the problems found (none: it holds), and
    where its trace parted from the recorded one when its digest moved."""

    path: str | None
    scenario: Scenario
    run: RunResult
    problems: tuple[str, ...]
    updated: bool = False  # the digest was recorded in the file
    trace: tuple[tuple[Any, ...], ...] | None = None
    point_hits: dict[str, int] = attrs.field(factory=dict)
    moved: traces.Move | None = None  # where the trace parted from the recorded one (its digest moved)

    @property
    def ok(self) -> bool:
        """The scenario holds: its expectation met, its recorded digest matched."""
        return not self.problems

    @property
    def moved_unjudged(self) -> bool:
        """The trace moved and every oracle held: a change no model judged (a gap, not a pass)."""
        if self.updated:
            return False  # re-recorded on purpose (--update-digest)
        return self.scenario.trace_digest not in (None, self.run.digest) and not judge(self.scenario, self.run, check_digest=False)

    @property
    def label(self) -> str:
        """The file replayed, or the scenario's name when it was given loaded."""
        return self.path or self.scenario.name

    def row(self) -> dict[str, Any]:
        """The JSON row ``dsh-sim replay --json`` prints (and ``run`` merges)."""
        return {
            "scenario": self.label,
            "name": self.scenario.name,
            "ok": self.ok,
            "problems": list(self.problems),
            "expected": to_json(self.scenario.expect),
            "mutants": list(self.scenario.mutants),
            "invariant": self.run.invariant,
            "digest": self.run.digest,
            "recorded_digest": self.scenario.trace_digest,
            "session_sha256": self.run.session_sha256,
            "outcomes": list(self.run.outcomes),
            "seconds": round(self.run.seconds, 3),
            "cases": list(self.run.cases),
            "checked": dict(self.run.stats["checked"]),
            "points": dict(self.point_hits),
            "updated": self.updated,
        }


def replay(target: Target, *, path: str | None = None, update_digest: bool = False, keep_trace: bool = False) -> ReplayResult:
    """Replay one scenario and judge it (outcome, fired faults, recorded digest); ``path``
    names the file a loaded ``target`` came from (where ``update_digest`` records)."""
    scenario, loaded_from = scenario_of(target)
    path = path or loaded_from
    with capture_runtime_logs():
        run, sim = run_scenario(scenario, keep_trace=keep_trace or update_digest)
    problems = judge(scenario, run, check_digest=not update_digest)
    updated, moved = False, None
    if update_digest and path is not None and not problems:
        if scenario.trace_digest != run.digest:
            save(attrs.evolve(scenario, trace_digest=run.digest), path, overwrite=True)
            updated = True
        if updated or traces.load(path, run.digest) is None:
            traces.save(path, sim.trace.records)  # the trace beside its digest: a later move shows where
    elif path is not None and scenario.trace_digest not in (None, run.digest):
        recorded = traces.load(path, scenario.trace_digest)
        if recorded is not None:
            records = sim.trace.records if keep_trace else _trace_of(scenario)
            moved = traces.first_move(recorded, records)
            if moved is not None:
                problems.append(moved.describe())
    trace = tuple(tuple(r) for r in sim.trace.records) if keep_trace else None
    return ReplayResult(path, scenario, run, tuple(problems), updated, trace, dict(sim.point_hits), moved)


def _trace_of(scenario: Scenario) -> list[tuple[Any, ...]]:
    """The scenario's trace records, from a second run that keeps them (the same run: it is a
    pure function of the scenario)."""
    with capture_runtime_logs():
        _, sim = run_scenario(scenario, keep_trace=True)
    return sim.trace.records


def check_determinism(path: str) -> DeterminismCheck:
    """Replay in two fresh processes with different PYTHONHASHSEED: same digest, same bytes?
    On a difference, the trace records of both runs show where they parted.  Nothing is
    written: the scenario goes to the children on stdin, their traces come back on stdout."""
    load(path)  # bad input is refused here, in one line, not in a child process
    return recheck.check(path, read_regular(path, MAX_SCENARIO_BYTES, "scenario file").decode("utf-8"))
