"""Runtime log records inside simulations.

A simulated crash makes the runtime's background writers fail (their filesystem calls are
refused), and the runtime rightly logs that.  Inside a simulation those records are part of
the run's facts, not terminal noise: :func:`capture_runtime_logs` counts them and keeps the
last few instead of printing.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator


class _Collector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0
        self.last: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        self.last = (self.last + [record.getMessage()])[-20:]


@contextlib.contextmanager
def capture_runtime_logs() -> Iterator[_Collector]:
    logger = logging.getLogger("dsh")
    collector = _Collector()
    previous = logger.propagate
    logger.addHandler(collector)
    logger.propagate = False
    try:
        yield collector
    finally:
        logger.removeHandler(collector)
        logger.propagate = previous
