"""A Dask cluster started from the command line (``dask scheduler`` + ``dask worker`` processes
on loopback), with the faults the chaos suite puts on it: kill a worker (its nanny brings it
back), kill a worker and its nanny, restart the scheduler at the same address."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
from distributed import Client

DASK = [sys.executable, "-m", "dask"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(what: str, ready: Callable[[], bool], timeout: float = 120, every: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f}s"
        time.sleep(every)


class ExternalCluster:
    def __init__(self, base: Path, workers: int = 2) -> None:
        self.base = base
        self.port = _free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.scheduler: subprocess.Popen[bytes] | None = None
        self.nannies: list[subprocess.Popen[bytes]] = []
        self.start_scheduler()
        for _ in range(workers):
            self.add_worker()
        self.wait_for_workers(workers)

    def _popen(self, args: list[str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen([*DASK, *args], cwd=self.base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def start_scheduler(self) -> None:
        self.scheduler = self._popen(["scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard"])
        wait_until("the scheduler listens", self._listening)

    def _listening(self) -> bool:
        assert self.scheduler is not None and self.scheduler.poll() is None, "the dask scheduler exited"
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", self.port)) == 0

    def add_worker(self) -> None:
        args = ["worker", self.address, "--nthreads", "1", "--no-dashboard", "--local-directory", str(self.base)]
        self.nannies.append(self._popen(args))

    def client(self) -> Client:
        return Client(self.address, timeout=30)

    def wait_for_workers(self, n: int) -> None:
        with self.client() as client:
            client.wait_for_workers(n, timeout=120)

    def worker_pids(self) -> dict[str, int]:
        """Worker address -> the pid of its worker process (a child of its nanny)."""
        with self.client() as client:
            return dict(client.run(os.getpid))

    def busy(self, prefix: str = "dsh-sim-") -> dict[str, list[str]]:
        """Worker address -> the keys of ours it is processing now."""
        with self.client() as client:
            processing = client.processing()
        return {
            w: [str(k) for k in keys if str(k).startswith(prefix)]
            for w, keys in processing.items()
            if any(str(k).startswith(prefix) for k in keys)
        }

    def kill_worker(self, address: str, *, nanny: bool = False) -> int:
        """SIGKILL the worker process at ``address`` (and its nanny, which would start it again)."""
        pid = self.worker_pids()[address]
        process = psutil.Process(pid)
        parent = process.parent()
        if nanny and parent is not None:
            os.kill(parent.pid, signal.SIGKILL)
        os.kill(pid, signal.SIGKILL)
        return pid

    def kill_all_workers(self) -> None:
        for nanny in self.nannies:
            for child in psutil.Process(nanny.pid).children(recursive=True):
                child.kill()
            nanny.kill()
            nanny.wait()
        self.nannies = []

    def restart_scheduler(self) -> None:
        assert self.scheduler is not None
        self.scheduler.kill()
        self.scheduler.wait()
        self.start_scheduler()

    def stop(self) -> None:
        for proc in [*self.nannies, *([self.scheduler] if self.scheduler else [])]:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()


def scheduler_file(path: Path) -> str:
    return str(json.loads(path.read_text())["address"])
