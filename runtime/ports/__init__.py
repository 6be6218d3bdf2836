"""Ports: the only doors between the runtime and the world.

The runtime never calls ``os``, ``open``, ``time``, ``random`` or a network directly.  It
receives these small interfaces instead; :mod:`runtime.adapters` implements them over the
real OS, and ``dsh_sim`` implements them over a simulated world.
"""

from __future__ import annotations

import attrs

from runtime.ports.clock import Clock
from runtime.ports.fs import FileSystem, OpenFlags, StatResult
from runtime.ports.ids import Ids
from runtime.ports.probe import NULL_PROBE, Probe

__all__ = ["NULL_PROBE", "Clock", "FileSystem", "Ids", "OpenFlags", "Ports", "Probe", "StatResult"]


@attrs.frozen
class Ports:
    """Everything the runtime needs from its environment, bundled."""

    fs: FileSystem
    clock: Clock
    ids: Ids
    probe: Probe = NULL_PROBE
