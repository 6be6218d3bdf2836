"""The in-memory session log: dense sequence numbers from 0, atomic appends.

``append`` is an in-memory commit and nothing more: durability is the job of whoever
listens (the persistence write-behind) and of explicit ``flush`` barriers.  Listeners run
synchronously inside ``append`` so that the order of events seen by persistence is exactly
the order of seqs.
"""

from __future__ import annotations

import itertools
import logging
import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from runtime.log_text import error_text
from runtime.ports.clock import Clock
from runtime.session.events import EnvelopeError, Event, SurfaceOp, owned, validate_surface
from runtime.session.lossless import holds_split_pair, lossless_copy

Listener = Callable[[Event], None]
_SEQ = operator.attrgetter("seq")
_TYPE = operator.attrgetter("type")
log = logging.getLogger("dsh.session")


class SessionSeedError(ValueError):
    """A resume/fork seed is not a contiguous log from seq 0."""


class Session:
    def __init__(self, session_id: str, clock: Clock, seed: Iterable[Event] = ()) -> None:
        self.id = session_id
        self._clock = clock
        self._log: list[Event] = []
        self._view: tuple[Event, ...] = ()  # ``events`` as last handed out (the log only grows)
        self._last: dict[str, Event] = {}  # the newest event of each type
        self._listeners: list[Listener] = []
        events = list(seed)
        # (C-level passes over a resumed log; the walk below only says where it is wrong)
        if not all(map(isinstance, events, itertools.repeat(Event))) or list(map(_SEQ, events)) != list(range(len(events))):
            for index, event in enumerate(events):
                if not isinstance(event, Event):
                    raise SessionSeedError(f"seed event at index {index} has an invalid event envelope")
                if event.seq != index:
                    raise SessionSeedError(
                        f"seed event at index {index} has seq {event.seq} (expected {index}); seed must be contiguous from 0"
                    )
        self._log.extend(events)
        self._last.update(zip(map(_TYPE, events), events))  # (a later event of a type replaces an earlier one)
        self.first_live_seq = len(self._log)
        if self._log and self._log[-1].type != "session/end-seed":
            end_seed = owned(Event("session/end-seed", len(self._log), self._clock.now_ms(), {}))
            self._log.append(end_seed)
            self._last[end_seed.type] = end_seed

    @property
    def seq(self) -> int:
        """The seq the next appended event will get (= the log length)."""
        return len(self._log)

    @property
    def events(self) -> Sequence[Event]:
        """The log as an immutable sequence: the same object until the next append."""
        if len(self._view) != len(self._log):
            self._view = tuple(self._log)
        return self._view

    def __len__(self) -> int:
        return len(self._log)

    def __bool__(self) -> bool:  # an empty session is still a session
        return True

    def __getitem__(self, seq: int) -> Event:
        return self._log[seq]

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def append(
        self,
        type: str,
        data: Any,
        *,
        surface_op: SurfaceOp | None = None,
        source_event_seqs: Sequence[int] | None = None,
        ignorable: bool = False,
    ) -> Event:
        """Commit one event in memory; ``TypeError`` (nothing stored) for non-lossless data."""
        if holds_split_pair(type):
            raise ValueError("event type holds a surrogate pair as two code points (it would read back as one)")
        copied = lossless_copy(data)
        op = lossless_copy(surface_op, "surfaceOp") if surface_op is not None else None
        sources = tuple(source_event_seqs) if source_event_seqs is not None else None
        event = Event(type, len(self._log), self._clock.now_ms(), copied, ignorable, op, sources)  # (owned once valid)
        try:
            validate_surface(event)
        except EnvelopeError as err:
            raise ValueError(str(err)) from None
        if sources is not None and (len(set(sources)) != len(sources) or any(s >= event.seq or s < 0 for s in sources)):
            raise ValueError(f"sourceEventSeqs of {type} must be unique earlier seqs")
        self._log.append(owned(event))  # (the data is this copy: the write path need not copy it again)
        self._last[type] = event
        for listener in tuple(self._listeners):
            try:
                listener(event)
            except Exception as err:  # the event is committed; an observer cannot undo it
                log.warning("session/event listener threw: %s", error_text(err))  # see runtime.log_text
        return event

    def open_turn(self) -> int | None:
        """The number of the turn that is open at the end of the log, if any."""
        for event in reversed(self._log):
            if event.type == "turn/end":
                return None
            if event.type == "turn/start":
                return int(event.data["turn"])
        return None

    def last_of(self, type: str) -> Event | None:
        """The newest event of ``type`` (kept as events are appended: the loop asks for a
        header or a context that may lie at the start of a long log)."""
        return self._last.get(type)
