"""The embedded default with one worker: the tasks run here, one after the other.

No cluster, no scheduler, no second interpreter: ``dsh-sim run`` with one worker costs what
the work costs.  Progress goes straight to the display; a stop request is seen at the next
clean point of the running task (:mod:`dsh_sim.campaign.stop`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dsh_sim.campaign import stop
from dsh_sim.campaign.events import Event, Failed, Finished, Progress, Started, one_line
from dsh_sim.campaign.tasks import Task
from dsh_sim.campaign.work import run_task

WORKER = "local"


class _Context:
    worker = WORKER

    def __init__(self, task: str, emit: Callable[[Event], None]) -> None:
        self._task, self._emit = task, emit

    def checkpoint(self) -> None:
        stop.checkpoint()

    def progress(self, done: int, total: int | None, note: str) -> None:
        self._emit(Progress(self._task, WORKER, done, total, note))


class InProcess:
    workers = 1
    description = "in process (1 worker)"

    def __init__(self, found_dir: str) -> None:
        self.found_dir = found_dir

    def bind(self, run_id: str) -> None:
        pass

    def run(self, tasks: Sequence[Task], corpus: dict[str, str], emit: Callable[[Event], None]) -> None:
        for task in tasks:
            stop.checkpoint()
            emit(Started(task.id, WORKER))
            try:
                result = run_task(task, corpus, _Context(task.id, emit), self.found_dir)
            except Exception as err:  # a harness error in one task: the others still run
                stop.checkpoint()  # a child killed by the stop is the stop, not a failure
                emit(Failed(task.id, WORKER, one_line(err)))
                continue
            emit(Finished(result))

    def close(self) -> None:
        pass
