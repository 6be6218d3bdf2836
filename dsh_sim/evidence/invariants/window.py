"""``write_behind_window``: every live process's background writes as the timing model
(:mod:`dsh_sim.evidence.oracles.window`) says — when each window expires, which events its batch
holds, that it is written then, and never one write too many or too few."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from dsh_sim.engine.config import PERTURB_MAX
from dsh_sim.evidence.invariants.base import Invariant, Judge, fail
from dsh_sim.evidence.invariants.links import blocked_by_a_link
from dsh_sim.evidence.invariants.moments import Shutdown, Step
from dsh_sim.evidence.invariants.pace import write_time
from dsh_sim.evidence.oracles.window import NAME, WindowModel

if TYPE_CHECKING:
    from dsh_sim.engine.lifetime import Lifetime


@attrs.define
class WindowJudge:
    """One timing model per process, fed from the run's window facts as they accumulate."""

    models: dict[int, WindowModel] = attrs.field(factory=dict)
    fed: int = 0

    def judge(self, obs: Judge, live: Lifetime | None) -> None:
        """Feed what happened since the last look; then, for the live process, no expired window
        may be waiting at this instant."""
        facts = obs.history.window
        bound = write_time(obs.sim.config)
        for fact in facts[self.fed :]:
            model = self.models.get(fact.lifetime)
            if model is None:
                model = self.models[fact.lifetime] = WindowModel(fact.lifetime, bound, PERTURB_MAX if obs.sim.config.perturb else 0.0)
            model.stretched = _stretched(obs, fact.lifetime)
            model.feed((fact,))
        self.fed = len(facts)
        for model in self.models.values():
            while model.problems:
                fail(obs, NAME, model.problems.pop(0), None, f"process {model.lifetime}")
        if live is None or live.dead or live.index not in self.models:
            return
        model = self.models[live.index]
        model.stretched = _stretched(obs, live.index)
        obs.count(NAME)
        late = model.overdue(obs.sim.now())
        if late is not None:
            fail(obs, NAME, late, None, f"process {live.index}")


def _stretched(obs: Judge, lifetime: int) -> float:
    """Until when process ``lifetime`` was slowed on purpose: a delay fault (its whole run from
    then on), or another process that ran while it stood still (Checker.paused_until) — or the
    harness made its writes fail without a fault at the write (a link planted at a session
    path, the lock file replaced or removed under it): its windows are not timed then."""
    if blocked_by_a_link(obs) or any(f.lifetime == lifetime and f.action in TIMING_EXCUSES for f in obs.faults):
        return float("inf")
    return obs.paused_until


TIMING_EXCUSES = frozenset({"delay", "replaced", "removed", "linked"})


def _step(obs: Judge, step: Step) -> None:
    judge: WindowJudge = obs.memory(NAME)
    judge.judge(obs, step.life)


def _shutdown(obs: Judge, _: Shutdown) -> None:
    judge: WindowJudge = obs.memory(NAME)
    judge.judge(obs, None)


WRITE_BEHIND_WINDOW = Invariant(
    NAME,
    (
        "every background write is where an executable model of the fixed 200 ms window (spec §3.5, "
        "written apart from the runtime) puts it: a window armed by the first event of an empty queue and"
        " never reset, expiring into one batch of exactly the queue at that instant, written then (after "
        "the write in flight), acknowledged within the write's own time; after a failed background write "
        "only the next event arms a window; a flush drains the queue itself; no background write the "
        "rules never start, and no expired window left waiting at any instant the judge visits"
    ),
    checks={"step": _step, "shutdown": _shutdown},
    memory=lambda obs: WindowJudge(),
)
