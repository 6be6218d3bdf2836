"""The local provider chain (spec §7): bubblewrap, then Landlock, else SANDBOX_UNAVAILABLE.

Each backend is tried by a functional probe (it confines ``true``), once; the first that
works confines every call.  Bubblewrap comes first because it confines more (namespaces:
network, processes, IPC, a private view of the filesystem) and reports ``full``; Landlock
works where bubblewrap cannot start and reports ``partial`` with what it leaves open.  When
neither works the chain refuses, naming why each failed: it never runs a command unconfined.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from runtime.adapters.bwrap import BubblewrapProvider, RunResult
from runtime.adapters.landlock import LandlockProvider
from runtime.agent.sandbox import ConfinedArgv, SandboxPolicy, SandboxUnavailableError, check_confinable


class Backend(Protocol):
    name: str

    def probe(self) -> str | None: ...

    def confine(self, argv: Sequence[str], policy: SandboxPolicy) -> ConfinedArgv: ...

    def run(self, argv: Sequence[str], policy: SandboxPolicy, *, timeout: float | None = None) -> RunResult: ...


class LocalSandboxProvider:
    """The first working backend of ``backends`` (default: bubblewrap, then Landlock)."""

    def __init__(self, backends: Sequence[Backend] | None = None, *, allowed_root: str | None = None) -> None:
        if backends is None:
            backends = (BubblewrapProvider(allowed_root=allowed_root), LandlockProvider(allowed_root=allowed_root))
        self.backends = tuple(backends)

    def selected(self) -> Backend | None:
        """The backend that confines here (probing each at most once), or None."""
        for backend in self.backends:
            if backend.probe() is None:
                return backend
        return None

    def unavailable_detail(self) -> str:
        return "; ".join(f"{backend.name}: {backend.probe()}" for backend in self.backends) or "no sandbox backend is configured"

    def confine(self, argv: Sequence[str], policy: SandboxPolicy) -> ConfinedArgv:
        mode = check_confinable(argv, policy)
        backend = self.selected()
        if backend is None:
            raise SandboxUnavailableError(mode, self.unavailable_detail())
        return backend.confine(argv, policy)

    def run(self, argv: Sequence[str], policy: SandboxPolicy, *, timeout: float | None = None) -> RunResult:
        """Confine with the selected backend and run; a setup failure raises."""
        mode = check_confinable(argv, policy)
        backend = self.selected()
        if backend is None:
            raise SandboxUnavailableError(mode, self.unavailable_detail())
        return backend.run(argv, policy, timeout=timeout)
