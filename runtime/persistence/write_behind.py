"""Write-behind for one live session: a fixed 200 ms window, one write in flight (spec §3.5).

* The window is armed when an event arrives and no window is armed; later events join it
  (a fixed window, not a debounce).  On expiry the whole pending prefix is one batch.
* At most one write is in flight.  A window that expires during a write starts its batch as
  soon as that write finishes.
* A failed background write puts its batch back in front of newer events, is reported once,
  and pauses retries until the next event arrives (which arms a fresh window).
* ``flush`` is the barrier: it cancels the window, waits for the write in flight (tolerating
  its failure), then writes everything pending — also events admitted meanwhile — until the
  queue is empty.  Concurrent flushes share one barrier; a failed barrier write rejects the
  flush and keeps the batch.
* A write, once started, is shielded from cancellation so it is never torn in half by a
  cancelled caller; a lost batch is never silently dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

import trio

from runtime.log_text import error_text
from runtime.persistence import context
from runtime.session.events import Event, is_owned
from runtime.session.lossless import lossless_copy

WINDOW_SECONDS = 0.200
log = logging.getLogger("dsh.persistence")

Sink = Callable[[Sequence[Event]], Awaitable[None]]


def _own(event: Event) -> Event:
    """The queue's own copy of an event (the reference structured-clones on admission); an
    event the runtime built (:func:`~runtime.session.events.owned`) is already one."""
    if is_owned(event):
        return event
    try:
        data = lossless_copy(event.data)
        return Event(event.type, event.seq, event.time, data, event.ignorable, event.surface_op, event.source_event_seqs)
    except TypeError:
        return event  # not storable: the sink refuses it and the failure is reported


class _Barrier:
    """One flush in progress; later flush calls wait for its result."""

    def __init__(self) -> None:
        self._done = trio.Event()
        self._error: BaseException | None = None

    def settle(self, error: BaseException | None) -> None:
        self._error = error
        self._done.set()

    async def wait(self) -> bool:
        """``True`` when the barrier succeeded; its failure is raised.

        ``False`` when its owner was cancelled (or interrupted) before finishing: that is
        not this waiter's outcome, so the waiter runs the barrier itself.
        """
        await self._done.wait()
        if self._error is None:
            return True
        if isinstance(self._error, Exception):
            raise self._error
        return False


class WriteBehind:
    def __init__(self, session_id: str, sink: Sink, *, window: float = WINDOW_SECONDS) -> None:
        self.session_id = session_id
        self._sink = sink
        self._window = window
        self._pending: list[Event] = []
        self._deadline: float | None = None
        self._active = False
        self._barrier: _Barrier | None = None
        self._changed = trio.Event()
        self.failures_reported = 0

    @property
    def has_work(self) -> bool:
        return bool(self._pending) or self._active

    @property
    def pending(self) -> tuple[Event, ...]:
        return tuple(self._pending)

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def enqueue(self, event: Event) -> None:
        """Admit one event (a private copy: later mutation by the caller changes nothing)."""
        self._pending.append(_own(event))
        if self._deadline is None and self._barrier is None:
            self._deadline = trio.current_time() + self._window
            self._notify()

    async def run(self) -> None:
        """The background worker; runs until cancelled (by the store on release)."""
        while True:
            while self._deadline is None:
                await self._changed.wait()
            deadline = self._deadline
            changed = self._changed
            with trio.move_on_at(deadline):
                await changed.wait()
                continue
            while self._active:
                await self._changed.wait()
            if self._deadline is None or trio.current_time() < self._deadline:
                continue
            self._deadline = None
            if not self._pending:
                continue
            batch, self._pending = self._pending, []
            with context.durability_op(context.WINDOW_WRITE):
                await self._write(batch, background=True)

    async def _write(self, batch: list[Event], *, background: bool) -> None:
        self._active = True
        try:
            with trio.CancelScope(shield=True):
                await self._sink(batch)
        except BaseException as err:
            self._pending[:0] = batch
            self._deadline = None  # paused until the next event (or an explicit flush)
            if background and isinstance(err, Exception):
                self.failures_reported += 1
                log.warning(  # the error's text, not the error (see runtime.log_text)
                    'session-persistence: background write for session "%s" failed (buffered events retained): %s',
                    self.session_id,
                    error_text(err),
                )
                return
            raise
        finally:
            self._active = False
            self._notify()

    async def flush(self) -> None:
        """Make every event enqueued so far durable, or raise and keep it queued."""
        while self._barrier is not None:
            if await self._barrier.wait():
                return
        barrier = self._barrier = _Barrier()
        try:
            self._deadline = None
            self._notify()
            while self._active:
                await self._changed.wait()
            while self._pending:
                batch, self._pending = self._pending, []
                await self._write(batch, background=False)
        except BaseException as err:
            barrier.settle(err)
            raise
        else:
            barrier.settle(None)
        finally:
            self._barrier = None
