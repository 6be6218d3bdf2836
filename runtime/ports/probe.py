"""The probe port: where the runtime announces its named points.

Every place where a test harness may inject a fault, a delay or a crash is a *named point*
announced by name (a harness keeps the registry of names, e.g. ``dsh_sim/points.py``).  The runtime calls ``await probe.at(name, **details)``
there; in production the probe does nothing.  A harness's probe may sleep, raise an error
the point allows, or end the simulated process.  Faults enter the runtime nowhere else.
"""

from __future__ import annotations

from typing import Any, Protocol


class Probe(Protocol):
    async def at(self, point: str, **details: Any) -> None: ...


class NullProbe:
    """The production probe: a named point is a no-op."""

    async def at(self, point: str, **details: Any) -> None:
        return None


NULL_PROBE: Probe = NullProbe()
