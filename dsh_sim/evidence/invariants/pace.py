"""After a quiet step: the turn did what its script says (``turn_progress``), and write-behind
kept its window (``write_behind_timely``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dsh_sim.engine.config import PERTURB_MAX, SimConfig
from dsh_sim.engine.determinism import EPOCH_MS
from dsh_sim.engine.process import DEFAULT_HORIZON
from dsh_sim.evidence.invariants.base import Invariant, Judge, fail
from dsh_sim.evidence.invariants.links import blocked_by_a_link
from dsh_sim.evidence.invariants.moments import Step
from dsh_sim.evidence.oracles.event_records import in_force

if TYPE_CHECKING:
    from dsh_sim.engine.lifetime import Lifetime

PROGRESS = "turn_progress"
TIMELY = "write_behind_timely"
WINDOW = 0.200  # spec §3.5: the fixed write-behind window


def check_progress(obs: Judge, life: Lifetime, outcome: str, args: Any) -> None:
    """After a quiet ``prompt`` step: the turn did what its script says (see :mod:`.progress`)."""
    from dsh_sim.evidence.oracles import progress

    config = obs.sim.config
    events = life.session.events
    predicted = progress.predict(
        args.responses,
        args.approvals,
        approval_policy=in_force(events, "approval/policy", "policy", config.approval_policy) if config.approval_policy else None,
        approval_tools=config.approval_tools,
        sandbox_mode=in_force(events, "sandbox/mode", "mode", config.sandbox_mode),
        workspace=config.workspace,
        max_steps=config.max_steps,
        policy=config.policy,
        approval_delay=args.approval_delay,
        horizon=args.horizon,
    )
    if predicted.blocked or (outcome == "turn:blocked" and args.horizon < DEFAULT_HORIZON):
        return  # a turn given less than the default horizon may still be running (a cancel may follow)
    obs.count(PROGRESS)
    start = next((i for i in range(len(events) - 1, -1, -1) if events[i].type == "turn/start"), None)
    if start is None or outcome != f"turn:{predicted.ends}":
        fail(obs, PROGRESS, f"a quiet turn did not end {predicted.ends}: the step ended {outcome!r}")
        return
    for difference in progress.differences(predicted, events[start:]):
        fail(obs, PROGRESS, difference, None, f"turn {events[start].data.get('turn')}")


WRITE_OPS = 24  # named filesystem operations of the longest write-behind batch: a first publication (dirs, lock, temp, link) has 22
PERTURBED_POINTS = 16  # named points between a window's expiry and its batch's acknowledgement


def write_time(config: SimConfig) -> float:
    """The longest a window's batch can take once it starts: its operations' configured latency
    and the seeded pauses of the points on its way (zero on an instant, unperturbed disk)."""
    perturbed = PERTURBED_POINTS * PERTURB_MAX if config.perturb else 0.0
    return WRITE_OPS * (config.io_latency + config.fsync_latency) + perturbed


def check_timely(obs: Judge, life: Lifetime) -> None:
    """The oldest event not yet acknowledged is younger than the window (unless a fault since)."""
    events = life.session.events
    first = obs.history.acked_end()
    if first >= len(events):
        return
    oldest = events[first]
    appended = (oldest.time - EPOCH_MS) / 1000
    now = obs.sim.now()
    if any(fault.time >= appended - WINDOW for fault in obs.faults) or (obs.crashes and obs.crashes[-1].time >= appended - WINDOW):
        return  # a fault may legitimately hold the batch back (a failed write pauses retries)
    if obs.paused_until >= appended - WINDOW:
        return  # the process stood still while another one ran (see Checker.paused_until)
    if blocked_by_a_link(obs):
        return  # a link planted in place of a session file: every write refused until it goes
    obs.count(TIMELY)
    slack = 0.050 + write_time(obs.sim.config)
    if now - appended > WINDOW + slack:
        fail(obs, TIMELY, f"event seq {oldest.seq} ({oldest.type}) appended at {appended:.3f}s is still not durable at {now:.3f}s")


def _progress(obs: Judge, step: Step) -> None:
    if step.life is not None and step.quiet and step.op == "prompt" and obs.sim.kind == "agent":
        check_progress(obs, step.life, step.outcome, step.args)


def _timely(obs: Judge, step: Step) -> None:
    if step.life is not None:
        check_timely(obs, step.life)


TURN_PROGRESS = Invariant(
    PROGRESS,
    (
        "a turn with no fault, crash or cancellation does what its script says: each scripted call once, "
        "in order, succeeding or refused exactly as the session's approval policy, answers and sandbox "
        "mode decide, and the turn completes"
    ),
    checks={"step": _progress},
)
WRITE_BEHIND_TIMELY = Invariant(
    TIMELY,
    (
        "with no fault in between, an event appended at time t is durable by t + 200 ms (the fixed "
        "write-behind window) plus the write's own time"
    ),
    checks={"step": _timely},
)
