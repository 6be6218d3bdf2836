"""Production adapters of the ports: the real OS filesystem, wall clock and ids."""

from __future__ import annotations

from runtime.adapters.os_fs import OsFileSystem
from runtime.adapters.system import SystemClock, SystemIds
from runtime.ports import Ports

__all__ = ["OsFileSystem", "SystemClock", "SystemIds", "production_ports"]


def production_ports() -> Ports:
    """Ports over the real OS, real time and real randomness."""
    return Ports(fs=OsFileSystem(), clock=SystemClock(), ids=SystemIds())
