"""One paused trio run's thread-local state, put in place for each stretch of its steps.

Several runs can be paused at once on one thread (a second writer boots while the primary
waits), so each stretch of steps installs its run's trio state — trio's thread-local run
context, the async-generator hooks, sniffio's current library — and puts the host's back
afterwards: between steps the host thread is not "inside" any run.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from sniffio import thread_local as sniffio_library

from dsh_sim.engine.determinism import run_module

_RUN = run_module()  # trio's run module, looked up once
Host = tuple[dict[str, Any], Any, str | None]


class RunLocals:
    def __init__(self) -> None:
        self._state: dict[str, Any] = {}  # the run's thread-local trio state between steps
        self._hooks: Any = None  # the run's async-generator hooks between steps

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """This run's state in place for one stretch of steps, then the host's."""
        host = self.install()
        try:
            yield
        finally:
            self.uninstall(host)

    def install(self) -> Host:
        """Put this run's state in place; returns the host's, for :meth:`uninstall` (the
        process's start and steps call the pair directly: one per command)."""
        local = _RUN.GLOBAL_RUN_CONTEXT.__dict__  # this thread's (a thread-local's)
        host = dict(local), sys.get_asyncgen_hooks(), sniffio_library.name
        local.clear()
        local.update(self._state)
        if self._hooks is not None:
            sys.set_asyncgen_hooks(firstiter=self._hooks.firstiter, finalizer=self._hooks.finalizer)
        sniffio_library.name = "trio"
        return host

    def uninstall(self, host: Host) -> None:
        """Keep this run's state for its next step and put the host's back."""
        local = _RUN.GLOBAL_RUN_CONTEXT.__dict__
        host_state, host_hooks, host_library = host
        self._state, self._hooks = dict(local), sys.get_asyncgen_hooks()
        local.clear()
        local.update(host_state)
        sys.set_asyncgen_hooks(firstiter=host_hooks.firstiter, finalizer=host_hooks.finalizer)
        sniffio_library.name = host_library
