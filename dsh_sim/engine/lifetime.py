"""One simulated process lifetime: its trio run, its filesystem view, and what it reported.

A lifetime ends in a crash (with its :class:`~dsh_sim.engine.crash.CrashRecord`), a graceful
stop, or a failed boot; the next one starts over on the same disk and world.
"""

from __future__ import annotations

from typing import Any

import attrs

from dsh_sim.adapters.simfs import ProcessView
from dsh_sim.engine.crash import CrashRecord
from dsh_sim.engine.hang import Hung
from dsh_sim.engine.process import SimProcess
from runtime.agent.runtime import Runtime


@attrs.define(eq=False)
class Lifetime:
    index: int
    proc: SimProcess
    view: ProcessView
    runtime: Runtime | None = None
    agent: Any = None
    report: Any = None
    created: bool = False
    boot_error: BaseException | None = None
    exit_error: BaseException | None = None  # a live process that failed (e.g. its final drain)
    dead: bool = False
    crash: CrashRecord | None = None
    store: Any = None  # the process's SessionStore
    session: Any = None  # the live Session (the agent's, or the storage process's)
    handle: Any = None  # storage processes: the write handle
    direct_read: Any = None  # storage processes: the second session's events after an append at the handle (lossless_refused)
    opening: Any = None  # the application's cancel scope around its session open (a cancel fault during boot)
    step_error: BaseException | None = None  # what the last step raised to its caller (errors_documented)
    hung: Hung | None = None  # a command hung the process (see engine.hang); the harness killed it
    log_at_boot: bytes | None = None  # the session log as this process found it when it started (recovery_maximal)
    tools_mounted: tuple[tuple[str, str], ...] = ()  # (name, description) of every tool the process mounted (model_exchange)

    def live_runtime(self) -> Runtime:
        """The runtime this process booted (set before its agent: a process with an agent has one)."""
        if self.runtime is None:
            raise RuntimeError(f"process {self.index} has no runtime")
        return self.runtime
