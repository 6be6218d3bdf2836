"""The state of a running campaign, as the progress display shows it.

Phase (the kinds of task running now), tasks done / total, violations so far, elapsed time,
an estimate of the time left, and what each worker is doing.  The estimate is a sum over the
tasks not yet done of what each should cost — a fuzz shard its time budget, an exploration
its scenarios at the rate seen so far (a prior before the first finishes) — divided by the
workers; it is an estimate, and the display says so ("~").
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

import attrs

from dsh_sim.campaign.events import Event, Failed, Finished, Progress, Retried, Started, WorkerLost
from dsh_sim.campaign.tasks import ExploreShard, FuzzShard, MutantKill, ReplayShard, Task, kind_of

# seconds per unit before anything has been measured (two shared cores, the committed corpus)
PRIORS = {"replay": 0.05, "recheck": 3.0, "explore": 2.0, "mutants": 0.3, "fuzz": 0.1}


@attrs.define
class Doing:
    task: str
    since: float
    done: int = 0
    total: int | None = None
    note: str = ""


def _units(task: Task) -> tuple[str, int]:
    if isinstance(task, ExploreShard):
        return "explore", len(task.scenarios)
    if isinstance(task, MutantKill):
        return "mutants", 1
    if isinstance(task, ReplayShard):
        return "replay", len(task.scenarios)
    return "fuzz", 1  # measured per example: see Board.apply


class Board:
    def __init__(self, tasks: Sequence[Task], workers: int, done_before: int = 0, violations_before: int = 0) -> None:
        self.tasks = {task.id: task for task in tasks}
        self.workers = max(1, workers)
        self.total = len(tasks) + done_before
        self.done = done_before
        self.failed: dict[str, str] = {}
        self.violations = violations_before
        self.started = time.monotonic()
        self.doing: dict[str, Doing] = {}  # worker -> what it runs
        self.finished: set[str] = set()
        self._spent: dict[str, list[float]] = {}  # unit kind -> [seconds, units] measured
        self.totals: dict[str, int] = {}  # kind -> tasks planned (this session)
        for task in tasks:
            self.totals[kind_of(task)] = self.totals.get(kind_of(task), 0) + 1
        self.done_by_kind: dict[str, int] = {}

    # -- events ------------------------------------------------------------------------------

    def apply(self, event: Event) -> None:
        now = time.monotonic()
        if isinstance(event, Started | Progress) and event.task in self.finished:
            return  # a worker's message can arrive after its task's result
        if isinstance(event, Started):
            self.doing[event.worker] = Doing(event.task, now)
        elif isinstance(event, Progress):
            doing = self.doing.get(event.worker)
            if doing is None or doing.task != event.task:
                doing = self.doing[event.worker] = Doing(event.task, now)
            doing.done, doing.total, doing.note = event.done, event.total, event.note
        elif isinstance(event, Finished):
            self._end(event.result.task)
            self.violations += event.result.violations
            task = self.tasks.get(event.result.task)
            if task is not None:
                unit, count = _units(task)
                if isinstance(task, FuzzShard):
                    meta = event.result.document.meta
                    count = max(1, meta.examples if meta is not None and meta.examples is not None else 1)
                spent = self._spent.setdefault(unit, [0.0, 0.0])
                spent[0] += event.result.seconds
                spent[1] += count
                self.done_by_kind[kind_of(task)] = self.done_by_kind.get(kind_of(task), 0) + 1
        elif isinstance(event, Failed):
            self._end(event.task)
            self.failed[event.task] = event.error
        elif isinstance(event, WorkerLost):
            self.doing.pop(event.worker, None)  # (its task shows again where it restarts)
        elif isinstance(event, Retried):
            for name, doing in list(self.doing.items()):
                if doing.task == event.task:
                    del self.doing[name]

    def _end(self, task: str) -> None:
        if task in self.finished:
            return
        self.finished.add(task)
        self.done += 1
        for name, doing in list(self.doing.items()):
            if doing.task == task:
                del self.doing[name]

    # -- what the display shows --------------------------------------------------------------

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def phase(self) -> str:
        kinds = sorted({kind_of(self.tasks[d.task]) for d in self.doing.values() if d.task in self.tasks})
        if kinds:
            return "+".join(kinds)
        return "done" if self.done >= self.total else "starting"

    def _rate(self, unit: str) -> float:
        seconds, units = self._spent.get(unit, (0.0, 0.0))
        return seconds / units if units else PRIORS[unit]

    def cost(self, task: Task) -> float:
        """What ``task`` should take, in seconds, from what has been measured so far."""
        if isinstance(task, FuzzShard):
            if task.examples is None:
                return task.budget
            return min(task.budget, task.examples * self._rate("fuzz"))
        unit, count = _units(task)
        cost = self._rate(unit) * count
        if isinstance(task, ReplayShard):
            cost += PRIORS["recheck"] * len(task.recheck)
        return cost

    def eta(self) -> float | None:
        if self.done >= self.total:
            return 0.0
        now = time.monotonic()
        running = {d.task: now - d.since for d in self.doing.values()}
        left = 0.0
        for task_id, task in self.tasks.items():
            if task_id in self.finished:
                continue
            cost = self.cost(task)
            left += max(cost - running[task_id], 0.1 * cost) if task_id in running else cost
        return left / self.workers

    def worker_lines(self) -> Iterable[tuple[str, str, str]]:
        """(worker, task, what it is at) for each busy worker."""
        now = time.monotonic()
        for worker, doing in sorted(self.doing.items()):
            amount = f"{doing.done}/{doing.total}" if doing.total else ""
            yield worker, doing.task, f"{amount} {doing.note}".strip() + f" ({fmt_seconds(now - doing.since)})"


def fmt_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
