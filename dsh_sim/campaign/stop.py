"""Stopping a campaign on SIGINT or SIGTERM: a flag, polled at safe points.

The handler never raises into whatever the main thread happens to run (a trio scheduler, a
Hypothesis engine): an exception there can leave their state half-updated and turn an
interrupt into a harness error or, worse, a shrunk "finding".  It only sets a flag and kills
the re-check children (:func:`dsh_sim.children.kill_all`).  The work polls the flag where
stopping is clean — between scenarios, after each crash point of an exploration, after each
fuzz batch — and raises :class:`Stopped` there; the executor's wait loop polls it too and
then cancels the cluster's work.  The second signal of the same kind gives up on a clean
stop and exits at once.

:class:`Stopped` is a ``KeyboardInterrupt``: Hypothesis, trio and the drivers already let
that through untouched, without treating it as a failure of the code under test.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from dsh_sim import children

EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}


class Stopped(KeyboardInterrupt):
    """The campaign was asked to stop by ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(signal.Signals(self.signum), 128 + self.signum)


_flag = threading.Event()
_signum: list[int] = []


def request(signum: int) -> None:
    """Ask everything to stop (what the handler does; tests call it directly)."""
    if not _signum:
        _signum.append(signum)
    _flag.set()
    children.kill_all()


def requested() -> int | None:
    """The signal that asked for a stop, or ``None``."""
    return _signum[0] if _flag.is_set() and _signum else None


def checkpoint() -> None:
    """Raise :class:`Stopped` if a stop was requested (call it only where stopping is clean)."""
    signum = requested()
    if signum is not None:
        raise Stopped(signum)


def reset() -> None:
    _flag.clear()
    _signum.clear()
    children.reset()


def _handler(signum: int, frame: FrameType | None) -> None:
    if _flag.is_set() and _signum and _signum[0] == signum:
        os._exit(EXIT_CODES.get(signal.Signals(signum), 128 + signum))  # asked twice: no more waiting
    request(signum)


@contextlib.contextmanager
def handling() -> Iterator[None]:
    """SIGINT and SIGTERM set the stop flag while inside (main thread only)."""
    reset()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
