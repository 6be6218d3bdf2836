"""Campaigns on Dask distributed: an embedded LocalCluster, or an existing cluster by address.

Each task is one ``client.submit`` of :func:`task_on_worker`; the corpus is scattered to every
worker once.  A task's progress comes back as Dask events (``Worker.log_event`` on the
topic :data:`TOPIC`, tagged with the run id so two campaigns on one cluster do not mix),
and its :class:`~dsh_sim.campaign.work.TaskResult` — document, found scenarios as text — as
the future's result, so nothing a worker does needs a shared filesystem.

Workers must run one thread each: a durability mutant switches code for the whole process,
and the collector policy is process-wide (``dask worker --nthreads 1``; the embedded cluster
is made that way).  A stop (SIGINT/SIGTERM) cancels what has not started, sets a Dask
``Event`` that running tasks on an existing cluster poll at their clean points (its workers
are not ours to end), and closes the embedded cluster: the nanny ends the worker processes
and their re-check children die with them.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import queue
import shutil
import signal
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from dsh_sim import __version__
from dsh_sim.campaign import stop
from dsh_sim.campaign.events import Event, Failed, Finished, from_message, one_line
from dsh_sim.campaign.tasks import Task
from dsh_sim.campaign.work import TaskResult, run_task
from dsh_sim.errors import InputError

TOPIC = "dsh-sim-progress"
POLL = 0.1  # seconds between looks at results, events and the stop flag
PROGRESS_EVERY = 0.5  # seconds between a task's progress messages
STOP_CHECK_EVERY = 1.0  # seconds between a task's looks at the stop event


def stop_event_name(run_id: str) -> str:
    return f"dsh-sim-stop-{run_id}"


class _WorkerContext:
    """What a task on a Dask worker reports to and asks about stopping (see module doc)."""

    def __init__(self, run_id: str, task_id: str, poll_stop: bool) -> None:
        from distributed import get_worker

        self._poll_stop = poll_stop
        self._worker = get_worker()
        name = str(self._worker.name)  # a number in a LocalCluster, else its --name or its address
        self.worker = f"worker {name}" if name.isdigit() else name.removeprefix("tcp://")
        self._run, self._task = run_id, task_id
        self._sent = self._checked = 0.0

    def _send(self, msg: dict[str, Any]) -> None:
        # "who", not "worker": the scheduler overwrites a "worker" key with the address
        self._worker.log_event(TOPIC, {"run": self._run, "task": self._task, "who": self.worker, **msg})

    def started(self) -> None:
        self._send({"event": "started"})

    def progress(self, done: int, total: int | None, note: str) -> None:
        now = time.monotonic()
        if now - self._sent >= PROGRESS_EVERY:
            self._sent = now
            self._send({"event": "progress", "done": done, "total": total, "note": note})

    def checkpoint(self) -> None:
        now = time.monotonic()
        if not self._poll_stop or now - self._checked < STOP_CHECK_EVERY:
            return
        self._checked = now
        from distributed import Event as DaskEvent

        if DaskEvent(stop_event_name(self._run)).is_set():
            raise stop.Stopped(signal.SIGTERM)


def task_on_worker(task: Task, corpus: dict[str, str], run_id: str, found_dir: str, poll_stop: bool) -> TaskResult:
    """The function every campaign task runs as on a Dask worker.  ``poll_stop``: on a cluster
    that is not ours, poll the run's stop event (an embedded cluster's workers are ended
    instead: the event needs a client in the worker, which complains when its process is closed
    under it)."""
    # Hypothesis warns when the global ``random`` state moves while it draws; on a worker the
    # worker's own threads use ``random`` meanwhile (the simulation never does: it has seeded
    # generators of its own), so the warning is noise there
    warnings.filterwarnings("ignore", message="Do not use the `random` module inside strategies")
    context = _WorkerContext(run_id, task.id, poll_stop)
    context.started()
    return run_task(task, corpus, context, found_dir)


def _probe() -> dict[str, Any]:
    import threading

    from dsh_sim import __version__ as version

    return {"dsh_sim": version, "python": sys.version.split()[0], "threads": threading.active_count()}


class DaskCluster:
    """A Dask client on an embedded LocalCluster of ``workers`` processes, or on ``scheduler``."""

    def __init__(self, found_dir: str, *, workers: int = 2, scheduler: str | None = None) -> None:
        from distributed import Client, LocalCluster

        self.run_id, self.found_dir = "", found_dir
        self._scratch: str | None = None
        # Dask's own logs stay quiet: a task that fails reaches the user as a failed task, and a
        # terminal's Ctrl-C reaches the embedded workers too (the scheduler would log each loss)
        logging.getLogger("distributed").setLevel(logging.CRITICAL)
        self._cluster: Any = None
        if scheduler is None:
            import dask

            self._scratch = tempfile.mkdtemp(prefix="dsh-sim-dask-")  # every file of the cluster; removed at close
            try:
                with dask.config.set({"temporary-directory": self._scratch}):
                    self._cluster = LocalCluster(
                        n_workers=workers,
                        threads_per_worker=1,
                        processes=True,
                        dashboard_address="127.0.0.1:0",  # the scheduler always serves HTTP: any free port, never a clash on 8787
                        silence_logs=logging.CRITICAL,
                        local_directory=self._scratch,
                    )
                self.client = Client(self._cluster)
            except BaseException:  # a cluster that did not start leaves nothing behind either
                if self._cluster is not None:
                    with contextlib.suppress(Exception):
                        self._cluster.close(timeout=10)
                shutil.rmtree(self._scratch, ignore_errors=True)
                raise
            self.description = f"local Dask cluster ({workers} worker processes)"
        else:
            try:
                self.client = Client(scheduler, timeout=10)
            except (OSError, TimeoutError) as err:
                raise InputError(f"--scheduler {scheduler}: cannot reach the Dask scheduler ({one_line(err)})") from None
            self.client.wait_for_workers(1, timeout=60)
            self.description = f"Dask cluster at {scheduler}"
        self._check_workers(scheduler)

    def _check_workers(self, scheduler: str | None) -> None:
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        self.workers = len(info)
        where = scheduler or "the local cluster"
        threaded = [w.get("name", addr) for addr, w in info.items() if w.get("nthreads", 1) != 1]
        if threaded:
            self.close()
            raise InputError(f"--scheduler {where}: workers {threaded} run several threads; start them with --nthreads 1")
        try:
            probes = self.client.run(_probe)
        except Exception as err:  # the workers cannot even unpickle a dsh_sim function
            self.close()
            raise InputError(f"--scheduler {where}: the workers cannot run dsh-sim ({one_line(err)}); install it where they run") from None
        for address, probe in probes.items():
            if probe["dsh_sim"] != __version__:
                self.close()
                raise InputError(f"--scheduler {where}: worker {address} runs dsh-sim {probe['dsh_sim']}, this is {__version__}")
        self.description += f", {self.workers} worker(s)"

    def bind(self, run_id: str) -> None:
        """The run this cluster works for (its tasks' keys, events and stop flag carry the id)."""
        self.run_id = run_id

    def run(self, tasks: Sequence[Task], corpus: dict[str, str], emit: Callable[[Event], None]) -> None:
        from distributed import Event as DaskEvent
        from distributed import as_completed

        client = self.client
        inbox: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()

        def on_event(event: tuple[float, Any]) -> None:
            msg = event[1]
            if isinstance(msg, dict) and msg.get("run") == self.run_id:
                inbox.put(msg)

        client.subscribe_topic(TOPIC, on_event)
        # one future for the whole corpus (scattering the dict itself would scatter each text apart)
        (corpus_future,) = client.scatter([corpus], broadcast=True, hash=False)
        futures = {
            client.submit(
                task_on_worker,
                task,
                corpus_future,
                self.run_id,
                self.found_dir,
                self._cluster is None,
                key=f"dsh-sim-{self.run_id}-{task.id}",
                pure=False,
                priority=len(tasks) - index,  # the planned order: higher runs first
            ): task
            for index, task in enumerate(tasks)
        }
        pending = as_completed(list(futures))
        try:
            while not pending.is_empty():
                while not inbox.empty():
                    event = from_message(inbox.get())
                    if event is not None:
                        emit(event)
                if stop.requested() is not None:
                    if self._cluster is None:  # not ours: ask its workers to stop our tasks
                        DaskEvent(stop_event_name(self.run_id), client=client).set()
                    client.cancel(list(futures), force=True)
                    stop.checkpoint()
                if not pending.has_ready():
                    time.sleep(POLL)
                    continue
                for future in pending.next_batch(block=False):
                    task = futures[future]
                    if future.status == "finished":
                        emit(Finished(future.result()))
                    elif future.status != "cancelled":
                        err = future.exception()
                        emit(Failed(task.id, "?", one_line(err) if err is not None else f"task {future.status}"))
        finally:
            with contextlib.suppress(Exception):
                client.unsubscribe_topic(TOPIC)

    def close(self) -> None:
        """Release the client; the embedded cluster is shut down (its workers end)."""
        logging.getLogger("distributed").setLevel(logging.CRITICAL)  # shutdown chatter is not the user's business
        client, self.client = self.client, None
        with contextlib.suppress(Exception):
            client.close(timeout=10)
        del client  # collected below, under the hook (see _quiet_client_destructors), not at exit
        if self._cluster is not None:
            with contextlib.suppress(Exception):
                self._cluster.close(timeout=10)
            self._cluster = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
        gc.collect()  # a client orphaned by a stop is finalized now, under the hook, not at exit


def _quiet_client_destructors() -> None:
    """A Dask ``Client`` half made when a signal stopped the run closes itself again when it is
    collected — on an event loop that no longer runs — and Python prints that ignored error as
    a traceback at exit, breaking the one line a stopped run prints.  Only that destructor's
    report is dropped; every other unraisable error still reaches the previous hook."""
    previous = sys.unraisablehook
    if getattr(previous, "_dsh_sim_quiet", False):
        return

    def hook(unraisable: Any) -> None:
        if getattr(unraisable.object, "__qualname__", "") != "Client.__del__":
            previous(unraisable)

    hook._dsh_sim_quiet = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook


_quiet_client_destructors()  # on import: the submitting process and every worker that runs a task
