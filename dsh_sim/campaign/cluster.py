"""Campaigns on Dask distributed: an embedded LocalCluster, or an existing cluster by address.

Each task is one ``client.submit`` of :func:`task_on_worker`, carrying its own part of the
corpus (nothing a task needs lives only on a worker that may die).  A task's progress comes back as Dask events (``Worker.log_event`` on the
topic :data:`TOPIC`, tagged with the run id so two campaigns on one cluster do not mix),
and its :class:`~dsh_sim.campaign.work.TaskResult` — document, found scenarios as text — as
the future's result, so nothing a worker does needs a shared filesystem.

Workers must run one thread each: a durability mutant switches code for the whole process,
and the collector policy is process-wide (``dask worker --nthreads 1``; the embedded cluster
is made that way).  A stop (SIGINT/SIGTERM) cancels what has not started, sets a Dask
``Event`` that running tasks on an existing cluster poll at their clean points (its workers
are not ours to end), and kills the embedded cluster's worker processes and their re-check
children before closing it.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import queue
import secrets
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
from dsh_sim.campaign.events import ClusterLost, Event, Failed, Finished, Retried, WorkerJoined, WorkerLost, from_message, one_line
from dsh_sim.campaign.tasks import Task, corpus_for
from dsh_sim.campaign.work import TaskResult, run_task
from dsh_sim.errors import InputError

TOPIC = "dsh-sim-progress"
POLL = 0.1  # seconds between looks at results, events and the stop flag
PROGRESS_EVERY = 0.5  # seconds between a task's progress messages
STOP_CHECK_EVERY = 1.0  # seconds between a task's looks at the stop event
WATCH_EVERY = 1.0  # seconds between looks at the cluster's workers and scheduler
LOST_GRACE = 20.0  # default seconds with no worker, or no scheduler, before the run ends incomplete (--cluster-patience)
WORKERS_WAIT = 60.0  # seconds a run on an existing cluster waits for its first worker
MAX_ATTEMPTS = 3  # submissions of a task the cluster dropped (not failed) before it counts as failed


def worker_label(name: object) -> str:
    """How a worker is named on the display: a number in a LocalCluster, else its --name or address."""
    text = str(name)
    return f"worker {text}" if text.isdigit() else text.removeprefix("tcp://")


class TaskStopped(RuntimeError):
    """A task on a worker saw its run's stop event.  Raised there instead of
    :class:`~dsh_sim.campaign.stop.Stopped`: a ``KeyboardInterrupt`` escaping a task ends the
    worker's whole process, and an external cluster's workers are not ours to end."""


class _AskedToStop(stop.Stopped):
    """The run's stop event, seen by a task: a :class:`~dsh_sim.campaign.stop.Stopped` (a
    ``KeyboardInterrupt``) so that Hypothesis and trio let it through untouched (a ``RuntimeError``
    raised inside a fuzz example would be taken for a failure and shrunk), turned into
    :class:`TaskStopped` when it leaves the task."""

    def __init__(self) -> None:
        super().__init__(signal.SIGTERM)
        self.args = ("its submitter",)


class _WorkerContext:
    """What a task on a Dask worker reports to and asks about stopping (see module doc)."""

    def __init__(self, run_id: str, task_id: str, stop_name: str | None) -> None:
        from distributed import get_worker

        self._stop_name = stop_name
        self._worker = get_worker()
        self.worker = worker_label(self._worker.name)
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
        if self._stop_name is None or now - self._checked < STOP_CHECK_EVERY:
            return
        self._checked = now
        from distributed import Event as DaskEvent

        if DaskEvent(self._stop_name).is_set():
            raise _AskedToStop()


def task_on_worker(task: Task, corpus: dict[str, str], run_id: str, found_dir: str, stop_name: str | None) -> TaskResult:
    """The function every campaign task runs as on a Dask worker.  ``corpus`` is the part the
    task reads (it travels with the task: nothing it needs lives only on a worker that may be
    lost).  ``stop_name``: on a cluster that is not ours, the run's stop event to poll (an
    embedded cluster's workers are ended instead: the event needs a client in the worker, which
    complains when its process is closed under it)."""
    # Hypothesis warns when the global ``random`` state moves while it draws; on a worker the
    # worker's own threads use ``random`` meanwhile (the simulation never does: it has seeded
    # generators of its own), so the warning is noise there
    warnings.filterwarnings("ignore", message="Do not use the `random` module inside strategies")
    context = _WorkerContext(run_id, task.id, stop_name)
    context.started()
    try:
        return run_task(task, corpus, context, found_dir)
    except stop.Stopped as stopped:  # (the worker's own signal: a KeyboardInterrupt would end its process)
        raise TaskStopped(f"stopped by {stopped}") from None


def _probe() -> dict[str, Any]:
    import threading

    from dsh_sim import __version__ as version

    return {"dsh_sim": version, "python": sys.version.split()[0], "threads": threading.active_count()}


class DaskCluster:
    """A Dask client on an embedded LocalCluster of ``workers`` processes, or on ``scheduler``."""

    def __init__(self, found_dir: str, *, workers: int = 2, scheduler: str | None = None, patience: float = LOST_GRACE) -> None:
        from distributed import Client, LocalCluster

        self.run_id, self.found_dir = "", found_dir
        self.address = scheduler or "the local cluster"
        self.patience = patience  # seconds with no worker, or no scheduler, before the run ends incomplete
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
            try:
                self.client.wait_for_workers(1, timeout=WORKERS_WAIT)
            except TimeoutError:
                with contextlib.suppress(Exception):
                    self.client.close(timeout=5)
                raise InputError(f"--scheduler {scheduler}: no worker joined the cluster within {WORKERS_WAIT:.0f}s") from None
            self.description = f"Dask cluster at {scheduler}"
        self._check_workers(scheduler)

    def _check_workers(self, scheduler: str | None) -> None:
        from distributed.comm.core import CommClosedError

        info = self.client.scheduler_info(n_workers=-1)["workers"]
        self.workers = len(info)
        where = self.address
        threaded = [w.get("name", addr) for addr, w in info.items() if w.get("nthreads", 1) != 1]
        if threaded:
            self.close()
            raise InputError(f"--scheduler {where}: workers {threaded} run several threads; start them with --nthreads 1")
        probes = self.client.run(_probe, on_error="return")
        alive = set(self.client.scheduler_info(n_workers=-1)["workers"])
        for address, probe in probes.items():
            if isinstance(probe, BaseException):
                if address not in alive or isinstance(probe, (CommClosedError, OSError)):  # it died while asked
                    continue
                self.close()  # the worker cannot even unpickle a dsh_sim function
                raise InputError(f"--scheduler {where}: the workers cannot run dsh-sim ({one_line(probe)}); install it where they run")
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

        inbox: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()

        def on_event(event: tuple[float, Any]) -> None:
            msg = event[1]
            if isinstance(msg, dict) and msg.get("run") == self.run_id:
                inbox.put(msg)

        # this execution's own stop event: a resumed run (same id) never sees an old one set
        stop_name = f"dsh-sim-stop-{self.run_id}-{secrets.token_hex(4)}" if self._cluster is None else None
        priority = {task.id: len(tasks) - index for index, task in enumerate(tasks)}  # the planned order: higher runs first

        def submit(task: Task, attempt: int) -> Any:
            return self.client.submit(
                task_on_worker,
                task,
                corpus_for(task, corpus),
                self.run_id,
                self.found_dir,
                stop_name,
                key=f"dsh-sim-{self.run_id}-{task.id}-{attempt}",
                pure=False,
                priority=priority[task.id],
            )

        self.client.subscribe_topic(TOPIC, on_event)
        futures = {submit(task, 1): (task, 1) for task in tasks}
        pending = as_completed(list(futures))
        watch = _Watch(self, emit)
        try:
            while not pending.is_empty():
                while not inbox.empty():
                    event = from_message(inbox.get())
                    if event is not None:
                        emit(event)
                if stop.requested() is not None:
                    self._stop(stop_name, list(futures))
                    stop.checkpoint()
                watch.look()
                if not pending.has_ready():
                    time.sleep(POLL)
                    continue
                for future in pending.next_batch(block=False):
                    task, attempt = futures.pop(future)
                    reason = None
                    if future.status == "finished":
                        try:
                            result = future.result(timeout=self.patience)
                        except Exception as err:  # its worker died holding the result
                            reason = one_line(err)
                        else:
                            emit(Finished(result))
                            continue
                    elif future.status not in ("cancelled", "lost"):
                        error = future.exception()
                        emit(Failed(task.id, "?", one_line(error) if error is not None else f"task {future.status}"))
                        continue
                    # not by us: the cluster dropped it (its worker left, the scheduler restarted)
                    reason = reason or watch.why_dropped(future)
                    if attempt >= MAX_ATTEMPTS:
                        emit(Failed(task.id, "?", f"dropped by the cluster {attempt} times (last: {reason})"))
                        continue
                    watch.wait_for_scheduler(lambda: self.client.subscribe_topic(TOPIC, on_event))
                    again = submit(task, attempt + 1)
                    futures[again] = (task, attempt + 1)
                    pending.add(again)
                    emit(Retried(task.id, attempt + 1, reason))
        finally:
            with contextlib.suppress(Exception):
                self.client.unsubscribe_topic(TOPIC)
            if stop_name is not None:  # the run's stop signal ends with it
                with contextlib.suppress(Exception):
                    DaskEvent(stop_name, client=self.client).clear()

    def _stop(self, stop_name: str | None, futures: list[Any]) -> None:
        """Cancel what has not started; on a cluster not ours, ask its workers to stop our
        running tasks (at their next clean point, within a second)."""
        from distributed import Event as DaskEvent

        with contextlib.suppress(Exception):
            if stop_name is not None:
                DaskEvent(stop_name, client=self.client).set()
            self.client.cancel(futures, force=True)

    def _end_workers_now(self) -> None:
        """A stopped run's embedded workers (and their re-check children) are killed at once: a
        graceful close waits seconds for a task's thread, and a stop answers within 2 s."""
        import psutil

        pids = []
        for nanny in list(getattr(self._cluster, "workers", {}).values()):
            with contextlib.suppress(AttributeError):
                pids.append(nanny.process.process.pid)
        for pid in pids:
            with contextlib.suppress(psutil.Error):
                worker = psutil.Process(pid)
                for child in [*worker.children(recursive=True), worker]:
                    with contextlib.suppress(psutil.Error):
                        child.kill()

    def reconnect(self) -> bool:
        """A new client to the same scheduler (an external one: it may have restarted)."""
        from distributed import Client

        if self._cluster is not None:
            return False
        try:
            client = Client(self.address, timeout=5)
        except (OSError, TimeoutError):
            return False
        old, self.client = self.client, client
        with contextlib.suppress(Exception):
            old.close(timeout=1)
        return True

    def close(self) -> None:
        """Release the client; the embedded cluster is shut down (its workers end)."""
        logging.getLogger("distributed").setLevel(logging.CRITICAL)  # shutdown chatter is not the user's business
        client, self.client = self.client, None
        with contextlib.suppress(Exception):
            client.close(timeout=10)
        del client  # collected below, under the hook (see _quiet_client_destructors), not at exit
        if self._cluster is not None:
            if stop.requested() is not None:
                self._end_workers_now()
            with contextlib.suppress(Exception):
                self._cluster.close(timeout=10)
            self._cluster = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
        gc.collect()  # a client orphaned by a stop is finalized now, under the hook, not at exit


class _Watch:
    """The cluster as a run sees it: which workers it has (a loss or a join is told) and whether
    its scheduler answers.  Too long with no worker, or without the scheduler, ends the run
    (:class:`ClusterLost`); a lost connection is made again (a client gives up after its
    timeout; a scheduler restarted at the same address is reached by a new one)."""

    def __init__(self, cluster: DaskCluster, emit: Callable[[Event], None]) -> None:
        self._cluster, self._emit = cluster, emit
        self._workers: dict[str, str] | None = None  # address -> label
        self._last = 0.0
        self._empty_since: float | None = None
        self._gone_since: float | None = None
        self._left: list[str] = []  # workers that left since the last dropped task was explained

    def look(self) -> None:
        now = time.monotonic()
        if now - self._last < WATCH_EVERY:
            return
        self._last = now
        client = self._cluster.client
        if client.status != "running":
            self._gone_since = self._gone_since or now
            if now - self._gone_since > self._cluster.patience:
                raise ClusterLost(f"lost the Dask scheduler at {self._cluster.address}: no answer for {self._cluster.patience:g}s")
            return
        self._gone_since = None
        try:
            info = client.scheduler_info(n_workers=-1)["workers"]
        except Exception:  # (a scheduler going away mid-answer: the next look says)
            return
        current = {address: worker_label(worker.get("name", address)) for address, worker in info.items()}
        if self._workers is not None:
            for address in sorted(self._workers.keys() - current.keys()):
                self._left.append(self._workers[address])
                self._emit(WorkerLost(self._workers[address]))
            for address in sorted(current.keys() - self._workers.keys()):
                self._emit(WorkerJoined(current[address]))
        self._workers = current
        if current:
            self._empty_since = None
        else:
            self._empty_since = self._empty_since or now
            if now - self._empty_since > self._cluster.patience:
                raise ClusterLost(f"no Dask worker left at {self._cluster.address} for {self._cluster.patience:g}s")

    def why_dropped(self, future: Any) -> str:
        cancelled = getattr(getattr(future, "_state", None), "exception", None)  # (the client's own record of why)
        if getattr(cancelled, "reason", None) == "scheduler-connection-lost" or self._cluster.client.status != "running":
            return "the connection to the scheduler was lost"
        self._last = 0.0
        self.look()
        if self._left:
            return f"{', '.join(self._left)} left the cluster"
        return "the cluster cancelled it"

    def wait_for_scheduler(self, resubscribe: Callable[[], None]) -> None:
        """Before a task goes again: a client connected to the scheduler (a new one when the
        old one gave up), within the cluster's patience — or the run ends."""
        deadline = time.monotonic() + self._cluster.patience
        while self._cluster.client.status != "running":
            if stop.requested() is not None:
                return  # (the loop stops the run)
            if self._cluster.client.status == "closed" and self._cluster.reconnect():
                resubscribe()
                break
            if time.monotonic() > deadline:
                raise ClusterLost(f"lost the Dask scheduler at {self._cluster.address}: no answer for {self._cluster.patience:g}s")
            time.sleep(POLL)
        self._left.clear()


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
