"""How a simulated adapter asks the simulation for a fault: the domain gate.

The world, the model, the answerer and the sandbox announce a named point through a
:data:`DomainGate` and get back the domain fault to act out (or ``None``).  The kernel
supplies the gate (``dsh_sim.engine.gates.Gate.domain``); adapters know only this shape.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol


class DomainFault(Protocol):
    """What an adapter reads of a fault rule: which fault, and how long it takes (read-only)."""

    @property
    def action(self) -> str: ...

    @property
    def delay(self) -> float: ...


DomainGate = Callable[[str, dict[str, Any]], Awaitable[DomainFault | None]]
