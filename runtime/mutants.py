"""Deliberate durability bugs, switched on by name at run time for harness self-tests.

Each mutant is a realistic mistake at one point of the durability route.  The runtime asks
``mutants.on(NAME)`` only at those points; with nothing enabled (the default) the check is
one membership test of an empty frozenset.  Only the harness enables mutants, through
:func:`enabled`, and only by names declared in :data:`CATALOGUE`.
"""

from __future__ import annotations

import contextlib
from typing import Iterable, Iterator

CATALOGUE: dict[str, str] = {
    "checkpoint.no_flush_before_tool_body": "the tools/execute barrier does not flush before the tool body",
    "checkpoint.flush_after_tool_body": "the tools/execute barrier flushes after the tool body instead of before",
    "checkpoint.abort_recheck_after_body": "the cancellation re-check after the tool checkpoint runs after the body (it reports ABORTED_BEFORE_DISPATCH for a body that ran)",
    "checkpoint.no_lazy_flush_before_request": "llm/stream does not flush before the model request",
    "persist.skip_fsync_on_append": "an append batch is written but never fsynced",
    "persist.skip_dir_fsync_after_link": "first publication skips the directory fsync after the hard link",
    "persist.ack_before_fsync": "an append is acknowledged before its fsync (fsync deferred to the next append)",
    "persist.swallow_fsync_error": "a failed append fsync is ignored and the batch acknowledged",
    "persist.skip_rollback_truncate": "a failed append is not truncated back to the prior length",
    "read.accept_torn_final_frame": "a torn final zstd frame is accepted as if complete (never truncated)",
    "read.drop_torn_recovered_records": "complete records inside a torn final frame are dropped",
    "read.skip_corrupt_complete_frame": "a complete frame that fails its checksum is treated as a torn tail and truncated away",
    "repair.not_started_for_recorded": "repair reports TOOL_NOT_STARTED for a call whose tool/call was recorded",
    "repair.seq_gap": "repair closers skip one sequence number",
    "tools.idempotency_key_not_forwarded": "a side-effecting tool gets a fresh idempotency key instead of callId",
    "tools.guard_reopens_denied": "a monotonic guard may turn a denied call back into allowed",
    "lease.no_lock_on_write_open": "a write open does not take the session.lock flock",
    "write_behind.drop_failed_batch": "a failed background batch is dropped instead of retained",
    "approval.fail_open_on_answerer_error": "a failing approval answerer counts as allowed-once",
}

_active: frozenset[str] = frozenset()


def on(name: str) -> bool:
    """Is this mutant enabled?  (Always False outside a harness self-test.)"""
    return name in _active


def active() -> frozenset[str]:
    return _active


@contextlib.contextmanager
def enabled(names: Iterable[str]) -> Iterator[None]:
    """Enable the named mutants for the duration of the block."""
    global _active
    wanted = frozenset(names)
    unknown = sorted(wanted - set(CATALOGUE))
    if unknown:
        raise KeyError(f"unknown mutant(s): {', '.join(unknown)}")
    previous, _active = _active, wanted
    try:
        yield
    finally:
        _active = previous
