"""The session store: binds live sessions to write handles and runs their write-behind.

A bound session's every appended event is queued on its :class:`WriteBehind`; ``flush`` is
the durability barrier the checkpoint policy and the agent use.  The store owns the worker
tasks in its nursery (structured concurrency): leaving ``open_store`` drains and closes every
binding.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TypeGuard

import attrs
import trio

from runtime.persistence import context
from runtime.persistence.handles import WriteHandle
from runtime.persistence.write_behind import WriteBehind
from runtime.ports.probe import NULL_PROBE, Probe
from runtime.session.session import Session


class SessionNotBoundError(LookupError):
    """A flush for a session that this store does not persist."""


@attrs.define
class Binding:
    session: Session
    handle: WriteHandle
    write_behind: WriteBehind
    scope: trio.CancelScope
    unsubscribe: Callable[[], None]


class SessionStore:
    def __init__(self, nursery: trio.Nursery, probe: Probe = NULL_PROBE) -> None:
        self._nursery = nursery
        self._probe = probe
        self._bindings: dict[str, Binding] = {}

    def is_live(self, session_id: str | None) -> TypeGuard[str]:
        return session_id is not None and session_id in self._bindings

    def session_of(self, session_id: str) -> Session:
        return self._bindings[session_id].session

    def binding(self, session: Session) -> Binding:
        return self._bindings[session.id]

    def bind(self, session: Session, handle: WriteHandle) -> Binding:
        """Persist ``session`` through ``handle``: its unstored suffix first, then every append."""
        if session.id in self._bindings:
            raise ValueError(f'session "{session.id}" is already bound to a live session in this store')
        if handle.next_seq > session.seq:
            raise ValueError(f'session "{session.id}" has {session.seq} events but its stored log already has {handle.next_seq}')
        write_behind = WriteBehind(session.id, handle.append)
        for event in session.events[handle.next_seq :]:
            write_behind.enqueue(event)
        scope = trio.CancelScope()
        binding = Binding(session, handle, write_behind, scope, session.subscribe(write_behind.enqueue))
        self._bindings[session.id] = binding

        async def worker() -> None:
            with scope:
                await write_behind.run()

        self._nursery.start_soon(worker, name=f"write-behind:{session.id}")
        return binding

    async def flush(self, session: Session, reason: str = context.EXPLICIT_FLUSH) -> None:
        """The durability barrier: every event appended so far is durable when this returns."""
        binding = self._bindings.get(session.id)
        if binding is None:
            raise SessionNotBoundError(f'session "{session.id}" is not bound to this store')
        with context.durability_op(reason):
            await self._probe.at("session.flush", session_id=session.id, reason=reason)
            await binding.write_behind.flush()
            await binding.handle.flush()

    async def release(self, session: Session) -> None:
        """Drain, stop the worker and close the handle (ownership is freed even on failure)."""
        binding = self._bindings.get(session.id)
        if binding is None:
            return
        try:
            await self.flush(session, context.EXPLICIT_FLUSH)
        finally:
            binding.unsubscribe()
            binding.scope.cancel()
            del self._bindings[session.id]
            await binding.handle.close()

    async def release_all(self) -> None:
        errors: list[Exception] = []
        for session_id in sorted(self._bindings):
            try:
                await self.release(self._bindings[session_id].session)
            except Exception as err:
                errors.append(err)
        if errors:
            raise ExceptionGroup("session store teardown failed", errors)


@contextlib.asynccontextmanager
async def open_store(probe: Probe = NULL_PROBE) -> AsyncIterator[SessionStore]:
    async with trio.open_nursery() as nursery:
        store = SessionStore(nursery, probe)
        try:
            yield store
        finally:
            with trio.CancelScope(shield=True):
                await store.release_all()
            nursery.cancel_scope.cancel()
