"""The clock port.

Event timestamps come from :meth:`Clock.now_ms`.  Waiting never uses this port: the runtime
waits with ``trio.sleep``, so a virtual trio clock (``MockClock``) drives every timer.
"""

from __future__ import annotations

from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Unix epoch milliseconds, a safe integer."""
        ...
