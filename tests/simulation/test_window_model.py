"""The write-behind timing model (``write_behind_window``) fails on slips in when the runtime writes.

Each slip is a careless edit of the write-behind, replayed over the committed window scenarios:
the model names it (the older ``write_behind_timely``, a slack-and-skip property, passed all of
them), and the scenarios hold on the runtime as shipped.
"""

from __future__ import annotations

import glob
import os

import pytest

from dsh_sim.drivers.replay import run_scenario
from dsh_sim.engine.history import WindowFact
from dsh_sim.evidence.oracles.window import WindowModel
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load
from tests.support.paths import REGRESSIONS, STARTER

W = "runtime.persistence.write_behind"
PAUSED = "            self._deadline = None  # paused until the next event (or an explicit flush)\n"
SCENARIOS = sorted(glob.glob(os.path.join(REGRESSIONS, "window-*.json"))) + [
    os.path.join(STARTER, "window-write-fails-then-recovers.json"),
    os.path.join(STARTER, "interleave-append-during-failed-window-write.json"),
]
SLIPS = {
    # a debounce: every event re-arms the window, so a steady stream is never written
    "window-rearmed-on-every-event": [
        Edit(
            W,
            "WriteBehind.enqueue",
            "        if self._deadline is None and self._barrier is None:\n",
            "        if self._barrier is None:\n",
        )
    ],
    # after a failed background write, events wait for an explicit flush
    "failure-waits-for-a-flush": [Edit(W, "WriteBehind._write", PAUSED, "            self._deadline = float('inf')\n")],
    # a failed background write is retried every window instead of pausing
    "failure-retried-every-window": [
        Edit(W, "WriteBehind._write", PAUSED, "            self._deadline = trio.current_time() + self._window\n")
    ],
    # a failed flush re-arms the window: a background retry 200 ms later that no new event armed
    "failed-flush-rearms-the-window": [
        Edit(W, "WriteBehind._write", PAUSED, "            self._deadline = None if background else trio.current_time() + self._window\n")
    ],
    # half the window
    "window-too-short": [
        Edit(
            W,
            "WriteBehind.enqueue",
            "            self._deadline = trio.current_time() + self._window\n",
            "            self._deadline = trio.current_time() + self._window / 2\n",
        )
    ],
    # a window that expired while a write was in flight waits a whole window more
    "expired-window-rearmed-behind-the-write": [
        Edit(
            W,
            "WriteBehind.run",
            "            if self._deadline is None or trio.current_time() < self._deadline:\n                continue\n",
            "            if self._deadline is None or trio.current_time() < self._deadline:\n                continue\n"
            "            if trio.current_time() > deadline:\n                self._deadline = trio.current_time() + self._window\n                continue\n",
        )
    ],
}


def _caught() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in SCENARIOS:
        result, _ = run_scenario(load(path))
        for violation in result.violations:
            found.setdefault(violation.invariant, []).append(violation.message)
    return found


def test_the_window_scenarios_hold_on_the_runtime_as_shipped() -> None:
    assert _caught() == {}


@pytest.mark.parametrize("slip", sorted(SLIPS))
def test_the_timing_model_names_a_slip(slip: str) -> None:
    with applied(SLIPS[slip]):
        found = _caught()
    assert found.get("write_behind_window"), found


def _model(*facts: WindowFact) -> WindowModel:
    model = WindowModel(1, bound=0.0)
    model.feed(facts)
    return model


def test_a_batch_holding_an_event_that_came_after_the_expiry_was_held_open() -> None:
    model = _model(
        WindowFact("admit", 1, 0.0, 0),
        WindowFact("admit", 1, 0.15, 1),
        WindowFact("admit", 1, 0.3, 2),
        WindowFact("ack", 1, 0.5, 0, 3, "window write"),
    )
    assert any("came after it was taken" in p for p in model.problems)


def test_an_expired_window_without_a_write_is_overdue() -> None:
    model = _model(WindowFact("admit", 1, 0.0, 0))
    assert model.overdue(0.2) is None
    assert model.overdue(0.21) is not None


def test_after_a_failure_only_the_next_event_arms_a_window() -> None:
    model = _model(WindowFact("admit", 1, 0.0, 0), WindowFact("fail", 1, 0.2, label="window write"))
    assert model.overdue(5.0) is None  # paused: nothing is due
    model.feed([WindowFact("admit", 1, 5.0, 1)])
    assert model.overdue(5.2) is None and model.overdue(5.3) is not None
    model.feed([WindowFact("ack", 1, 5.2, 0, 2, "window write")])
    assert model.problems == [] and model.overdue(9.0) is None


def test_a_failed_removal_fails_no_write() -> None:
    """Every removal a write makes is best-effort (the first publication's temp file after its
    link): its failure is no failed write, so the window's batch stays the window's.  Found by the
    failure-path sweep of no-checkpoint-policy-unsafe (error at the first fs.unlink)."""
    result, sim = run_scenario(load(os.path.join(REGRESSIONS, "window-first-publication-cleanup-fails.json")))
    assert [f.point for f in sim.history.faults] == ["fs.unlink"] and result.violations == ()
    assert not [f for f in sim.history.window if f.kind == "fail"]
    assert next(f.label for f in sim.history.window if f.kind == "ack") == "window write"


def test_a_write_retried_after_a_real_failure_with_no_new_event_is_one_too_many() -> None:
    retried = _model(
        WindowFact("admit", 1, 0.0, 0),
        WindowFact("fail", 1, 0.2, label="window write"),
        WindowFact("ack", 1, 0.6, 0, 1, "window write"),
    )
    assert any("no window was armed" in p for p in retried.problems)


def _slow_write_then_barrier(barrier_at: float) -> WindowModel:
    """Seq 0's write runs 0.2..0.45; seq 1's window expires at 0.41 behind it; a barrier comes."""
    model = WindowModel(1, bound=0.3, tail=0.02)
    model.feed(
        [
            WindowFact("admit", 1, 0.0, 0),
            WindowFact("admit", 1, 0.21, 1),
            WindowFact("ack", 1, 0.45, 0, 1, "window write"),
            WindowFact("barrier", 1, barrier_at, label="pre-step"),
            WindowFact("ack", 1, barrier_at + 0.04, 1, 1, "pre-step"),
        ]
    )
    return model


def test_a_barrier_in_the_pause_after_the_write_before_may_take_the_expired_window() -> None:
    """The write before may go on for the perturbation's pause after its acknowledgement: a
    barrier inside that pause may drain the expired window itself (fuzz, durability seed 15)."""
    assert _slow_write_then_barrier(0.46).problems == []
    late = _slow_write_then_barrier(0.50)  # past the pause: the worker had to start that write first
    assert any("no background write took it" in p for p in late.problems)


def _stood_still_then_barrier(stood_until: float, barrier_at: float) -> WindowModel:
    """Seq 0's window expires at 0.2; the process stood still until ``stood_until`` (another
    process ran meanwhile); then a barrier — the stop that woke it, say — drains the queue."""
    model = WindowModel(1, bound=0.3, tail=0.02)
    model.feed([WindowFact("admit", 1, 0.0, 0)])
    model.stretched = stood_until
    model.feed(
        [WindowFact("barrier", 1, barrier_at, label="explicit flush"), WindowFact("ack", 1, barrier_at + 0.04, 0, 1, "explicit flush")]
    )
    return model


def test_a_barrier_as_a_process_that_stood_still_resumes_may_take_its_expired_window() -> None:
    """A second writer ran for the rest of the primary's window; the primary's stop, the first
    thing it did again, cancelled the timer and drained the queue after the flush point's pause
    (fuzz, durability seed 1492608404)."""
    assert _stood_still_then_barrier(0.2, 0.21).problems == []
    assert _stood_still_then_barrier(0.3, 0.31).problems == []  # stood still past the expiry
    late = _stood_still_then_barrier(0.2, 0.25)  # past the resume's pause: the timer's write came first
    assert any("no background write took it" in p for p in late.problems)
    ran = _stood_still_then_barrier(float("-inf"), 0.21)  # it ran through the expiry: the timer took it
    assert any("no background write took it" in p for p in ran.problems)


def test_a_barrier_slowed_past_a_write_s_time_that_fails_leaves_the_queue_unjudged() -> None:
    """A delay fault held a flush's fsync for 0.5 s; the model took the barrier for over (no
    write within a write's time), so its failure did not count as a barrier's, and the next
    window went unseen: "a background write ... but no window was armed" (fuzz, storage seed
    2991931795).  A failed barrier write proves the barrier: who owns the queue after it is not
    observable, so the model follows without judging until the queue is empty."""
    model = WindowModel(1, bound=0.05)
    model.feed(
        [
            WindowFact("admit", 1, 0.36, 5),
            WindowFact("fail", 1, 0.56, label="window write"),
            WindowFact("barrier", 1, 0.57, label="explicit flush"),
            WindowFact("fail", 1, 1.065, label="explicit flush"),
            WindowFact("barrier", 1, 1.07, label="explicit flush"),
            WindowFact("admit", 1, 1.075, 8),
            WindowFact("ack", 1, 1.28, 5, 4, "window write"),
        ]
    )
    assert model.problems == []


def test_a_failed_barrier_pauses_the_timer_until_the_next_event() -> None:
    """After a failed flush the queue's owner is not observable, and the model follows it without
    judging until it is empty — but the timer is paused (spec §3.5): a background write with no
    event admitted since the failure is one the rules never start (a flush that re-armed the
    window retried on its own and went unseen)."""
    facts = [
        WindowFact("admit", 1, 0.0, 0),
        WindowFact("fail", 1, 0.2, label="window write"),
        WindowFact("admit", 1, 0.21, 1),  # arms a window the flush then cancels
        WindowFact("barrier", 1, 0.21, label="explicit flush"),
        WindowFact("fail", 1, 0.21, label="explicit flush"),
    ]
    retried = _model(*facts, WindowFact("ack", 1, 0.41, 0, 2, "window write"))
    assert any("no window was armed" in p for p in retried.problems), retried.problems
    armed = _model(*facts, WindowFact("admit", 1, 0.3, 2), WindowFact("ack", 1, 0.5, 0, 3, "window write"))
    assert armed.problems == []


def test_a_failed_write_no_barrier_made_pauses_no_window() -> None:
    """An append straight through the write handle that fails (its first publication met a
    foreign file) is no barrier of the queue: the armed window expires as it would have
    (storage fuzz, seed 77: judged as a failed barrier's, its on-time write was "one no window armed")."""
    facts = [WindowFact("admit", 1, 0.07, 9, label="bound"), WindowFact("fail", 1, 0.17, label="first publication")]
    model = _model(*facts, WindowFact("ack", 1, 0.27, 9, 1, "window write"))
    assert model.problems == []
    assert _model(*facts).overdue(0.28) is not None  # and it is judged: a write that never comes is late


def test_a_graceful_stop_takes_the_timer_with_it() -> None:
    """A stop cancels the process's tasks — the write-behind worker and its timer — before its
    store's flush drains the queue (after the flush point's own pause): a window expiring in
    between starts no background write, and the flush's batch is no window's (found by the main
    job's durability fuzz, seed 3342203607: 'the window ... expired at 33.122s, but no background
    write took it: a barrier (explicit flush) wrote seqs 69..71 at 33.150s')."""
    facts = [
        WindowFact("admit", 1, 32.9223, 69),
        WindowFact("stop", 1, 33.1219),
        WindowFact("barrier", 1, 33.1233, label="explicit flush"),
        WindowFact("ack", 1, 33.1497, 69, 1, "explicit flush"),
    ]
    assert _model(*facts).problems == []
    unstopped = _model(*facts[:1], *facts[2:])
    assert any("no background write took it" in p for p in unstopped.problems)
    late = _model(*facts[:2], WindowFact("ack", 1, 33.2, 69, 1, "window write"))  # after the stop, no timer fires
    assert any("no window was armed" in p for p in late.problems)


def test_a_window_expiring_as_the_stop_begins_may_be_written_first() -> None:
    """At the very instant of a window's expiry the stop may come first, or the timer: its
    background write may go on (shielded) while the stop waits for it (the fuzz's next finding
    once stops were modelled: 'a background write ... but a barrier owned the queue')."""
    facts = [
        WindowFact("admit", 1, 5.65, 8, label="bound"),
        WindowFact("stop", 1, 5.85),
        WindowFact("barrier", 1, 5.85, label="explicit flush"),
    ]
    for label in ("window write", "explicit flush"):  # the timer first, or the stop
        model = WindowModel(1, bound=0.3)  # (a write of 0.3 s: the fuzz's fsync latency)
        model.feed([*facts, WindowFact("ack", 1, 6.15, 8, 1, label)])
        assert model.problems == [], label


def test_a_process_that_stands_still_longer_still_fires_late() -> None:
    """Two foreign steps in a row: the model had fixed how late the timer may fire at the end of
    the first (the judge's visit in between) and judged the stop's flush, after the second, as
    taking an expired window (durability fuzz, seed 3839035267)."""
    model = WindowModel(1, bound=0.05)
    model.feed([WindowFact("admit", 1, 9.9747, 92)])
    model.stretched = 10.1923  # the first foreign step ends after the expiry (10.1747)
    assert model.overdue(10.1923) is None
    model.stretched = 10.4243  # ...and the second one later still
    assert model.overdue(10.4243) is None
    model.feed(
        [
            WindowFact("stop", 1, 10.4243),
            WindowFact("barrier", 1, 10.4416, label="explicit flush"),
            WindowFact("ack", 1, 10.499, 92, 1, "explicit flush"),
        ]
    )
    assert model.problems == []
