"""Crash recovery: read the valid prefix, append the closers durably, seed a session.

This is the only place repair is committed.  Reading never writes; the write handle's first
mutation truncates a torn tail and re-appends its recovered records before the closers.
"""

from __future__ import annotations

import attrs

from runtime.persistence import context
from runtime.persistence.errors import SessionPersistenceCorruptionError
from runtime.persistence.handles import WriteHandle
from runtime.persistence.log_format import TornTail
from runtime.session.events import Event
from runtime.session.repair import RepairRefused, interrupted_turn_closers, verdicts


@attrs.frozen
class RecoveryReport:
    events: tuple[Event, ...]  # the stored valid prefix (recovered torn records included)
    closers: tuple[Event, ...]  # what repair appended
    torn: TornTail | None  # the torn tail found at open, if any

    @property
    def verdicts(self) -> dict[str, str]:
        return verdicts(self.closers)


async def repair_and_seed(handle: WriteHandle) -> RecoveryReport:
    torn = handle.torn_tail
    events = tuple(handle.read_opened())  # the spec's read(0) right after open, without reading the log again
    try:
        closers = tuple(interrupted_turn_closers(events))
    except RepairRefused as err:
        raise SessionPersistenceCorruptionError(handle.session_id, str(err), handle.paths.log if handle.paths else None) from None
    if closers:
        with context.durability_op(context.REPAIR_APPEND):
            await handle.append(closers)
    return RecoveryReport(events, closers, torn)
