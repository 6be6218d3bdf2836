"""Which durability operation is running, as an observable context.

The runtime labels the work it does on the filesystem ("tools/execute" flush, "window
write", "first publication", ...).  Nothing in the runtime depends on the label; it exists so
that observers (logs, a test harness's coverage report) can say which barrier a filesystem
operation belonged to.  The innermost label and its outer barrier are both kept.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

import attrs

PRE_STEP = "pre-step"
LLM_STREAM = "llm/stream"
TOOLS_EXECUTE = "tools/execute"
WINDOW_WRITE = "window write"
EXPLICIT_FLUSH = "explicit flush"
FIRST_PUBLICATION = "first publication"
TORN_TAIL_REWRITE = "torn-tail rewrite"
REPAIR_APPEND = "repair append"
MIGRATION = "migration"


@attrs.frozen
class DurabilityOp:
    barrier: str | None  # the outermost label: who asked for durability
    step: str | None  # the innermost label: what the backend is doing


_current: ContextVar[DurabilityOp] = ContextVar("dsh_durability_op", default=DurabilityOp(None, None))  # noqa: B039 (frozen)


def current() -> DurabilityOp:
    return _current.get()


@contextlib.contextmanager
def durability_op(label: str) -> Iterator[None]:
    outer = _current.get()
    token = _current.set(DurabilityOp(outer.barrier or label, label))
    try:
        yield
    finally:
        _current.reset(token)
