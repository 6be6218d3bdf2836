"""A cooperative abort signal (the runtime's AbortSignal).

Cancellation in the agent is a *fact the code checks*, not an exception thrown into every
await: the tool checkpoint must finish its flush and then recheck the signal, and a tool
body that succeeds after cancellation is reported as ``ABORTED``.  Waits that should stop on
abort (the model stream, an approval question) run in a :meth:`linked_scope`, a trio cancel
scope that the signal cancels.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import trio


class AbortSignal:
    def __init__(self) -> None:
        self.aborted = False
        self.reason: Any = None
        self._scopes: list[trio.CancelScope] = []
        self._event = trio.Event()
        self._children: list[AbortSignal] = []

    def child(self) -> AbortSignal:
        """A signal that aborts with this one but can also abort on its own."""
        child = AbortSignal()
        if self.aborted:
            child.abort(self.reason)
        else:
            self._children.append(child)
        return child

    def abort(self, reason: Any = None) -> None:
        if self.aborted:
            return
        self.aborted = True
        self.reason = reason
        self._event.set()
        for scope in tuple(self._scopes):
            scope.cancel()
        for child in tuple(self._children):
            child.abort(reason)

    async def wait(self) -> None:
        await self._event.wait()

    @contextlib.contextmanager
    def linked_scope(self) -> Iterator[trio.CancelScope]:
        """A cancel scope cancelled when (or if already) this signal aborts."""
        scope = trio.CancelScope()
        if self.aborted:
            scope.cancel()
        self._scopes.append(scope)
        try:
            with scope:
                yield scope
        finally:
            self._scopes.remove(scope)
