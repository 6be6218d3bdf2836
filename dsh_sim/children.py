"""Child processes dsh-sim starts, tracked so that an interrupt ends every one of them.

The determinism re-check replays a scenario in two fresh interpreters.  A SIGTERM to
``dsh-sim run`` used to kill the parent and leave the child replaying (and its trace file
behind).  Now every child is started through :func:`run_child`, which registers it while it
runs, and :func:`kill_all` — called by the signal handler of ``run`` — kills them.  A child
started inside a Dask worker that is itself killed is covered too: the child asks the kernel
(``PR_SET_PDEATHSIG``, see :func:`die_with_parent`) to be killed when its parent goes, so no
interpreter outlives the process that wanted its answer.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence

_LOCK = threading.Lock()
_RUNNING: set[subprocess.Popen[bytes]] = set()
PARENT_ENV = "DSH_SIM_PARENT_PID"
PR_SET_PDEATHSIG = 1


class ChildKilled(RuntimeError):
    """The child was killed by :func:`kill_all` (an interrupt), not by its own failure."""


_killed = threading.Event()


def run_child(argv: Sequence[str], stdin: bytes, env: dict[str, str] | None = None, timeout: float = 600.0) -> tuple[int, bytes, bytes]:
    """Run ``argv`` with ``stdin``; (exit status, stdout, stderr).  Registered while it runs."""
    env = {**(env if env is not None else os.environ), PARENT_ENV: str(os.getpid())}
    proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    with _LOCK:
        _RUNNING.add(proc)
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        with _LOCK:
            _RUNNING.discard(proc)
    if _killed.is_set() and proc.returncode < 0:
        raise ChildKilled(f"{argv[-1]}: stopped by an interrupt")
    return proc.returncode, out, err


def kill_all() -> int:
    """Kill every registered child now (safe in a signal handler: no lock is awaited); how many."""
    _killed.set()
    children = list(_RUNNING)  # a copy without the lock: the handler may interrupt a holder
    for proc in children:
        with contextlib.suppress(OSError):
            proc.send_signal(signal.SIGKILL)
    return len(children)


def running() -> int:
    return len(_RUNNING)


def die_with_parent() -> None:
    """In a child: be killed when the parent dies (Linux), and exit now if it already has.

    ``PR_SET_PDEATHSIG`` fires when the *thread* that forked us ends; :func:`run_child` waits
    for the child in that thread, so it fires only when the parent process goes away."""
    expected = os.environ.get(PARENT_ENV)
    if not sys.platform.startswith("linux") or expected is None:
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if str(os.getppid()) != expected:  # the parent died before the request took effect
        os._exit(1)


def reset() -> None:
    """Forget an earlier :func:`kill_all` (a new run in the same process)."""
    _killed.clear()
