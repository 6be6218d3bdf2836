"""Run directories: every run writes only under its own ``OUT/runs/<id>/``.

Two ``dsh-sim run`` in one directory used to share ``reports/results/`` under fixed names,
and each began by deleting the other's files.  Now a run creates a fresh directory
(``mkdir`` is the atomic claim of its id) and holds an exclusive ``flock`` on its ``lock``
file while it runs, so runs go alongside each other, and a ``--resume`` of a run that is
still going is refused in one line naming it (its pid, host and start).  A killed run's lock
goes with its process, so it can be resumed.

Inside: ``campaign.json`` (the planned tasks and corpus: what ``--resume`` runs), ``status.json``
(running / complete / incomplete / failed, the tasks done, the stopping signal; while running,
the pid, host and a heartbeat every :data:`HEARTBEAT` seconds), one results
document per finished task under ``results/<task>.json``, and the report.  Every file is
written whole and durably (:mod:`dsh_sim.outputs`): a task's document exists complete or not
at all, and its existence is what marks the task done.

A run is never left ``running`` after its process died: :func:`read_status` reads such a run as
``incomplete`` (its pid gone from this host, its lock free, or — from another host — no
heartbeat for :data:`STALE` seconds), and the next run or resume in the directory writes that
into its ``status.json``.  The latest complete run's report is ``OUT/latest/`` — a link to its
run directory that one rename replaces, so its three files change together.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterable, Sequence

import attrs
import cattrs

from dsh_sim.campaign import tasks as tasks_mod
from dsh_sim.campaign.tasks import Campaign
from dsh_sim.campaign.work import FoundFile
from dsh_sim.errors import InputError
from dsh_sim.evidence.document import DocumentError, ResultsDocument, read_document
from dsh_sim.evidence.results import write
from dsh_sim.inputs import read_json
from dsh_sim.outputs import ensure_output_dir, replace_staged, write_new, write_replacing

RUNS = "runs"
LATEST = "latest"
DEFAULT_OUT = "reports"
STATES = ("running", "complete", "incomplete", "failed")
HEARTBEAT = 10.0  # seconds between a running run's writes of its status
STALE = 60.0  # seconds without a heartbeat after which a run on another host is taken for dead


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


@attrs.frozen
class Status:
    run: str
    state: str
    pid: int
    host: str
    started: str
    executor: str
    done: tuple[str, ...] = ()
    total: int = 0
    failed: dict[str, str] = attrs.field(factory=dict)  # task id -> error line
    stopped_by: str | None = None
    finished: str | None = None
    argv: tuple[str, ...] = ()
    heartbeat: float | None = None  # while running: when it last said so (seconds since the epoch)


_status_converter = cattrs.Converter(forbid_extra_keys=True)


class RunDir:
    def __init__(self, path: str, lock_fd: int) -> None:
        self.path, self.id, self._lock_fd = path, os.path.basename(path), lock_fd
        self.results = os.path.join(self.path, "results")
        self._status: Status | None = None  # the last status written (what the heartbeat repeats)
        self._writing = threading.Lock()  # the heartbeat and the run write status.json in turn
        self._beating: threading.Event | None = None

    # -- claiming ----------------------------------------------------------------------------

    @classmethod
    def create(cls, out: str) -> RunDir:
        """A new run directory with a fresh id, locked by this process."""
        runs = ensure_output_dir(os.path.join(out, RUNS))
        mark_dead_runs(out)
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S")
        while True:
            run_id = f"{stamp}-{secrets.token_hex(2)}"
            try:
                os.mkdir(os.path.join(runs, run_id))  # the atomic claim of the id
            except FileExistsError:
                continue
            break
        fd = _lock(os.path.join(runs, run_id, "lock"))
        if fd is None:  # cannot happen for a directory we just made; refuse rather than share
            raise InputError(f"{run_id}: run directory already locked")
        run = cls(os.path.join(runs, run_id), fd)
        os.mkdir(run.results)  # an empty result set is a valid one (a run stopped before any task ended)
        return run

    @classmethod
    def resume(cls, out: str, run_id: str) -> RunDir:
        """The run ``run_id`` of ``out``, locked for resuming; refused if it is still running."""
        mark_dead_runs(out)
        path = find(out, run_id)
        if not os.path.isfile(os.path.join(path, "campaign.json")):
            raise InputError(f"{path}: not a dsh-sim run directory (no campaign.json)")
        fd = _lock(os.path.join(path, "lock"))
        if fd is None:
            raise InputError(f"--resume {run_id}: {_who(path)}; wait for it to end (or stop it) before resuming")
        return cls(path, fd)

    def release(self) -> None:
        self.stop_heartbeat()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    def start_heartbeat(self) -> None:
        """Write the status again every :data:`HEARTBEAT` seconds while the run goes (from a
        thread: a phase that reports nothing for minutes still shows the run alive)."""
        if self._beating is not None:
            return
        beating = self._beating = threading.Event()

        def beat() -> None:
            while not beating.wait(HEARTBEAT):
                with self._writing:
                    if self._status is not None and self._status.state == "running" and not beating.is_set():
                        self._write_status(self._status)

        threading.Thread(target=beat, name=f"dsh-sim heartbeat {self.id}", daemon=True).start()

    def stop_heartbeat(self) -> None:
        if self._beating is not None:
            self._beating.set()
            self._beating = None

    # -- contents ----------------------------------------------------------------------------

    def write_campaign(self, campaign: Campaign) -> None:
        write_new(os.path.join(self.path, "campaign.json"), json.dumps(tasks_mod.to_json(campaign), indent=1) + "\n")

    def read_campaign(self) -> Campaign:
        path = os.path.join(self.path, "campaign.json")
        try:
            return tasks_mod.from_json(read_json(path, "campaign file", 256 * 1024 * 1024))
        except (cattrs.BaseValidationError, KeyError, TypeError, ValueError) as err:
            raise InputError(f"{path}: not a readable campaign ({type(err).__name__})") from None

    def write_status(self, status: Status) -> None:
        with self._writing:
            self._status = status
            self._write_status(status)

    def _write_status(self, status: Status) -> None:
        if status.state == "running":
            status = attrs.evolve(status, heartbeat=round(time.time(), 1))
        _store_status(self.path, status)

    def read_status(self) -> Status | None:
        return read_status(self.path)

    def finished(self, campaign: Campaign) -> dict[str, ResultsDocument]:
        """The results document of every task already done (its file complete and valid)."""
        done: dict[str, ResultsDocument] = {}
        for task in campaign.tasks:
            path = self.result_path(task.id)
            if not os.path.isfile(path):
                continue
            with contextlib.suppress(InputError, DocumentError):
                doc = read_document(read_json(path, "results document"))
                if doc.meta is not None and doc.meta.task == task.id and doc.meta.run == self.id:
                    done[task.id] = doc
        return done

    def result_path(self, task_id: str) -> str:
        return os.path.join(self.results, f"{task_id}.json")

    def write_document(self, name: str, doc: ResultsDocument) -> str:
        """A results document of the run itself (not of a task), beside its status."""
        return write(doc, os.path.join(self.path, name))

    def write_result(self, task_id: str, doc: ResultsDocument) -> str:
        return write(doc, self.result_path(task_id))


def save_found(files: Iterable[FoundFile], found_dir: str) -> list[str]:
    """Write found scenarios (text from wherever the task ran) under ``found_dir``: named by
    content, so the same finding from two shards or two runs is one file."""
    paths = []
    for found in files:
        path = os.path.join(found_dir, found.name)
        with contextlib.suppress(FileExistsError):
            write_new(path, found.text)
        paths.append(path)
    return paths


def _lock(path: str) -> int | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _stored_status(path: str) -> Status:
    """``status.json`` of the run at ``path`` as written (raises what reading or structuring raises)."""
    return _status_converter.structure(read_json(os.path.join(path, "status.json"), "status file"), Status)


def _store_status(path: str, status: Status) -> None:
    write_replacing(os.path.join(path, "status.json"), json.dumps(_status_converter.unstructure(status), indent=1) + "\n")


def read_status(path: str) -> Status | None:
    """The status of the run at ``path``; one that says ``running`` whose process is gone reads
    as ``incomplete``, stopped by its process's death."""
    status: Status | None = None
    with contextlib.suppress(InputError, cattrs.BaseValidationError, TypeError, ValueError):
        status = _stored_status(path)
    if status is not None and status.state == "running" and _dead(status, path):
        where = f"pid {status.pid} on {status.host}"
        return attrs.evolve(status, state="incomplete", stopped_by=f"its process died ({where})", heartbeat=None)
    return status


def _dead(status: Status, path: str) -> bool:
    """Whether the process that wrote ``running`` is gone: on this host, its pid is not alive or
    its run's lock is free (the pid was reused); elsewhere, its heartbeat is :data:`STALE`."""
    if status.host != socket.gethostname():
        return status.heartbeat is not None and time.time() - status.heartbeat > STALE
    try:
        os.kill(status.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, someone else's
    if status.pid == os.getpid():
        return False
    try:
        fd = os.open(os.path.join(path, "lock"), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False  # its lock is held: running
    finally:
        os.close(fd)
    return True


def mark_dead_runs(out: str) -> list[str]:
    """Write ``incomplete`` into the status of every run under ``out`` that says ``running``
    but whose process died (taking its lock first, so a live one is never touched)."""
    marked = []
    for run_id in list_runs(out):
        path = os.path.join(out, RUNS, run_id)
        status = read_status(path)
        if status is None or status.state != "incomplete" or not (status.stopped_by or "").startswith("its process died"):
            continue
        with contextlib.suppress(OSError):
            fd = _lock(os.path.join(path, "lock"))
            if fd is None:
                continue
            try:
                if _stored_status(path).state == "running":
                    _store_status(path, attrs.evolve(status, finished=_now()))
                    _record_died(path)
                    marked.append(run_id)
            except (InputError, cattrs.BaseValidationError, TypeError, ValueError):
                pass
            finally:
                os.close(fd)
    return marked


def as_died(doc: ResultsDocument) -> ResultsDocument:
    """A run record whose executions still say ``running`` after their process died (a SIGKILL,
    a power loss: the record is rewritten as the run goes, its end never came) says ``died``."""
    record = doc.campaign
    if record is None or not any(ex.state == "running" for ex in record.executions):
        return doc
    executions = tuple(attrs.evolve(ex, state="died") if ex.state == "running" else ex for ex in record.executions)
    state = "died" if record.state == "running" else record.state
    return attrs.evolve(doc, campaign=attrs.evolve(record, executions=executions, state=state))


def _record_died(path: str) -> None:
    """Say ``died`` in the record of a dead run (its lock held); a record that does not read is left."""
    record = os.path.join(path, RUN_DOCUMENT)
    if not os.path.isfile(record):
        return
    try:
        doc = read_document(read_json(record, "campaign record"))
    except (InputError, DocumentError):
        return
    died = as_died(doc)
    if died is not doc:
        write(died, record)


def publish_latest(run: RunDir, out: str) -> str:
    """Make ``run`` the latest: ``OUT/latest`` links to its directory, replaced by one rename,
    so the report's files change together (never one file at a time)."""
    latest = os.path.join(out, LATEST)
    if os.path.exists(latest) and not os.path.islink(latest):
        raise InputError(f"{latest}: exists and is not the link dsh-sim keeps to the latest run; move it away")
    temp = os.path.join(out, f".{LATEST}-{secrets.token_hex(4)}")
    os.symlink(os.path.relpath(run.path, out), temp)
    replace_staged(temp, latest, out)
    return latest


def _who(path: str) -> str:
    status = read_status(path)
    name = os.path.basename(path)
    if status is None:
        return f"run {name} is still running"
    return f"run {name} is still running (pid {status.pid} on {status.host}, started {status.started})"


def new_status(run: RunDir, executor: str, total: int, argv: Sequence[str], done: Iterable[str] = ()) -> Status:
    return Status(run.id, "running", os.getpid(), socket.gethostname(), _now(), executor, tuple(done), total, argv=tuple(argv))


def ended(status: Status, state: str, stopped_by: str | None = None) -> Status:
    return attrs.evolve(status, state=state, stopped_by=stopped_by, finished=_now())


def find(out: str, run_id: str) -> str:
    """The directory of run ``run_id`` under ``out`` (``latest``: the newest; a path to a run
    directory works too)."""
    if run_id == "latest" and list_runs(out):
        run_id = list_runs(out)[-1]
    if os.path.isfile(os.path.join(run_id, "campaign.json")):
        return run_id.rstrip(os.sep)
    if not run_id or os.sep in run_id or run_id in (".", ".."):
        raise InputError(f"{run_id}: not a run id or run directory")
    path = os.path.join(out, RUNS, run_id)
    if not os.path.isdir(path):
        known = ", ".join(list_runs(out)[-3:]) or "none yet"
        raise InputError(f"{run_id}: no such run under {os.path.join(out, RUNS)} (latest: {known})")
    return path


def list_runs(out: str) -> list[str]:
    """Run ids under ``out``, oldest first (ids begin with their UTC start time)."""
    runs = os.path.join(out, RUNS)
    if not os.path.isdir(runs):
        return []
    return sorted(name for name in os.listdir(runs) if os.path.isfile(os.path.join(runs, name, "campaign.json")))


DSH_RESULTS = "dsh"  # a run's DSH-phase result documents (dsh_sim.campaign.runner._dsh_phase)
RUN_DOCUMENT = "run.json"  # the run's own results document (dsh_sim.campaign.timing)


def resolve_inputs(items: Sequence[str], out: str) -> list[str]:
    """``--from`` items as result files or directories: a path as given (a run directory
    means its results), anything else a run id under ``out`` (or under ``reports/`` when
    ``out`` holds no runs: ``dsh-sim report --out elsewhere --from ID``)."""
    resolved = []
    for item in items:
        if os.path.isfile(os.path.join(item, "campaign.json")):
            run = item
        elif os.path.exists(item):
            resolved.append(item)
            continue
        elif out != DEFAULT_OUT and not list_runs(out) and os.path.isdir(os.path.join(DEFAULT_OUT, RUNS, item)):
            run = find(DEFAULT_OUT, item)  # `report --out ELSEWHERE --from ID`
        else:
            run = find(out, item)
        resolved.append(os.path.join(run, "results"))
        if os.path.isfile(os.path.join(run, RUN_DOCUMENT)):  # the run's own: seed, command line, time per phase
            resolved.append(os.path.join(run, RUN_DOCUMENT))
        if os.path.isdir(os.path.join(run, DSH_RESULTS)):  # the DSH phase's documents, when it ran
            resolved.append(os.path.join(run, DSH_RESULTS))
    return list(dict.fromkeys(resolved))  # a run named twice counts once


__all__ = [
    "LATEST",
    "RUNS",
    "RunDir",
    "Status",
    "list_runs",
    "mark_dead_runs",
    "publish_latest",
    "read_status",
    "resolve_inputs",
    "save_found",
]
