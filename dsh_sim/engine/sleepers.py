"""Timed sleeps of the harness's own code inside a simulated process, kept by the host.

``trio.sleep`` is a cancel scope with a deadline around ``sleep_forever``: when the deadline
expires, trio cancels the scope, raises ``Cancelled`` into the task and the scope catches it
again — a new scope and an exception per sleep.  The harness sleeps at every named point
that has a latency (filesystem latency, the seeded perturbation): thousands of sleeps a run.

Those sleeps are kept on this heap instead.  The host (:class:`~dsh_sim.engine.process.SimProcess`)
moves the clock to the first timer due — trio's own or one of these — exactly as trio's
autojump would, and before every scheduler batch wakes the sleepers whose time has come,
before trio expires its own deadlines of that instant: they run in the same batch as the
tasks those deadlines wake (trio sorts a batch before its seeded shuffle, so the order of
waking does not matter), and the schedule is the one ``trio.sleep`` gives.
"""

from __future__ import annotations

import heapq
import math
from typing import Any

import trio


class Sleepers:
    """The sleeping tasks of one run, by deadline (an entry whose task is None was cancelled)."""

    def __init__(self) -> None:
        self.heap: list[list[Any]] = []  # [deadline, order, task or None]; the host reads whether it is empty
        self._order = 0

    def add(self, deadline: float, task: trio.lowlevel.Task) -> list[Any]:
        entry = [deadline, self._order, task]
        self._order += 1
        heapq.heappush(self.heap, entry)
        return entry

    def next_deadline(self) -> float:
        heap = self.heap
        while heap and heap[0][2] is None:
            heapq.heappop(heap)
        return float(heap[0][0]) if heap else math.inf

    def pop_due(self, now: float) -> list[trio.lowlevel.Task]:
        """The tasks whose deadline is ``now`` or earlier (what trio's expiry would wake)."""
        heap = self.heap
        due: list[trio.lowlevel.Task] = []
        while heap and (heap[0][2] is None or heap[0][0] <= now):
            task = heapq.heappop(heap)[2]
            if task is not None:
                due.append(task)
        return due

    def clear(self) -> None:
        self.heap.clear()


async def sleep(sleepers: Sleepers, clock: trio.abc.Clock, seconds: float) -> None:
    """``trio.sleep(seconds)`` timed by the host: same deadline, same wake-up batch, same
    cancellation (a cancelled sleep raises the enclosing scope's ``Cancelled``)."""
    if seconds <= 0:
        if seconds == 0:
            await trio.lowlevel.checkpoint()  # a bare checkpoint: what trio.sleep(0) awaits
        else:
            await trio.sleep(seconds)  # trio's refusal of a negative time
        return
    entry = sleepers.add(clock.current_time() + seconds, trio.lowlevel.current_task())

    def abort(_: Any) -> trio.lowlevel.Abort:
        entry[2] = None
        return trio.lowlevel.Abort.SUCCEEDED

    await trio.lowlevel.wait_task_rescheduled(abort)
    if trio.current_effective_deadline() == -math.inf:
        # Woken at its deadline while a task of the same batch cancelled an enclosing scope:
        # trio.sleep's Cancelled would not be caught by its own scope then, but propagate.
        raise trio.Cancelled._create(source="deadline")
