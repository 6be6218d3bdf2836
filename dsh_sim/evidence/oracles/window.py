"""The write-behind's timing: an executable model of the fixed window (``write_behind_window``).

Written from the spec (§3.5, §10.5), apart from the runtime: a live session's events are
queued; when the queue goes from empty to non-empty a timer of 200 ms is armed and later events
join it without resetting it (a fixed window, not a debounce); on expiry the whole queue is one
batch — one append, one frame, one fsync; one write at a time, and a window that expires during
a write starts its batch as soon as that write ends.  A failed background write puts its batch
back in front and pauses: only the next admitted event arms a fresh window (retained and new
events together).  A flush is a barrier: it cancels the timer, waits for the write in flight,
and drains the queue itself (events admitted meanwhile too); a failed barrier write keeps the
batch and pauses the timer.  A failed write no barrier of the queue made (an append straight
through the write handle) pauses nothing.

:class:`WindowModel` replays these rules over what the simulator saw of one process, in the
order it happened (:class:`~dsh_sim.engine.history.WindowFact`): each event admitted (its
virtual instant), each batch acknowledged (with the runtime's durability label: a background
"window write" or the barrier's reason), each failed write, each barrier.  Only when a write
*starts* is the runtime's to decide; the model says when every background write must start and
exactly which events it holds, and holds the acknowledgements to it:

* a background batch holds exactly the queue at its window's expiry (ties at that instant
  either way) — a batch that also holds later events kept the window open (a debounce);
* it is acknowledged no earlier than the expiry and no later than the expiry plus the write's
  own time (the configured latency of its operations and the perturbation's pauses);
* a background write the rules never start (a retry after a failure no new event armed) is one
  too many, and a window that expired with no write acknowledged by then is one too few;
* a graceful stop cancels the worker and its timer before its store's flush drains the queue:
  from its start no background write begins;
* after a failed barrier write, who owns the queue is not observable (its flush may be
  cancelled, a second flush may take over), so the model follows it without timing or
  checking batches until it is empty — except that the timer stays paused: a background write
  needs an event admitted since the failure;
* at every instant the judge visits, no expired window waits without a write.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from dsh_sim.engine.history import WindowFact

NAME = "write_behind_window"
WINDOW = 0.200  # spec §3.5 / §10.5: LIVE_WRITE_BATCH_MAX_DELAY_MS
BACKGROUND = "window write"  # the runtime's durability label of a background write
TIE = 1e-9  # virtual instants closer than this are the same instant


@attrs.define
class _Write:
    start: float  # the earliest instant it may start (its window's expiry, or the end of the write before it)
    latest: float  # the latest instant it may start (the write before it may go on a little after its acknowledgement)
    seqs: tuple[int, ...]  # the events it must hold: admitted before ``start``
    due: float  # by when it must be acknowledged (inf: it may never come)
    exact: bool = True  # it holds exactly ``seqs`` and any admitted by ``latest``; else at least ``seqs``
    optional: bool = False  # a barrier came at the very instant of the expiry: it may have taken the queue first


@attrs.define
class WindowModel:
    """The spec's write-behind for one process's live session, fed in the order things happened."""

    lifetime: int
    bound: float  # the longest a write may take once it starts
    tail: float = 0.0  # how long a write may go on after its acknowledgement (the perturbation's pause at it)
    pending: list[tuple[int, float]] = attrs.field(factory=list)  # (seq, admitted at)
    deadline: float | None = None
    early_ok: bool = False  # the window's first event was queued before the process could be watched
    active: _Write | None = None  # the background write the rules have started, not yet acknowledged
    last_end: float = float("-inf")  # when the last write ended (a window expired meanwhile starts then)
    stretched: float = float("-inf")  # until when the process was slowed on purpose (a delay fault, a foreign step)
    # a failed background write gives up after its rollback, somewhere in [fault, fault + bound]:
    # a window armed by an event admitted meanwhile may have been paused by the failure, or not
    failing_until: float = float("-inf")
    uncertain: bool = False  # the armed window is such a one: its write may or may not come
    fallback: float | None = None  # then the window a later event surely armed expires here
    barrier: bool = False
    barrier_since: float = float("-inf")  # the barrier's last sign of work (its start, a write of its own)
    # a barrier failed: who owns the queue after it (its owner may be cancelled, a second flush
    # may take over or fail with it) is not observable, so until the queue is empty again the
    # model follows without judging
    murky: bool = False
    admitted_since_failure: bool = False  # an event was admitted after the last failed barrier write (only one arms a window)
    drained: bool = False  # a barrier set out to drain the queue since it was last empty
    stopping: bool = False  # a graceful stop began: the timer is gone, the stop's flush drains the queue
    written: set[int] = attrs.field(factory=set)
    admitted: dict[int, float] = attrs.field(factory=dict)  # seq -> when it was admitted
    fed: int = 0  # facts consumed from the run's list
    problems: list[str] = attrs.field(factory=list)

    def feed(self, facts: Iterable[WindowFact]) -> None:
        for fact in facts:
            if fact.lifetime != self.lifetime:
                continue
            # a write that ends at the very instant its window expires started then: it took the
            # queue as it was; anything else at that instant may have come before the expiry
            self.advance(fact.time + 2 * TIE if fact.kind in ("ack", "fail") else fact.time)
            getattr(self, f"_{fact.kind}")(fact)

    def advance(self, now: float) -> None:
        """Start the background write the timer started before ``now`` (spec: on expiry, the queue;
        what happens at the very instant of the expiry may come before it or after it)."""
        if not self.stopping:  # (the timer went with a stop: no background write starts any more)
            self._start_expired(now)
        write = self.active
        if write is not None and self.stretched >= write.start - TIE:
            # the process stood still at the expiry and since (another process ran, a delay fault):
            # its timer fires when it runs again, and whatever it does first then — a barrier of the
            # command that woke it, its pauses included — may take the queue before the timer
            write.latest = max(write.latest, self.stretched + self.tail)

    def _start_expired(self, now: float) -> None:
        if self.barrier and self.active is None and now > self.barrier_since + self.bound + TIE:
            # a barrier writes what it drains within a write's time: one with nothing to show for
            # so long has ended (its owner was cancelled, or it joined one that failed)
            self.barrier = False
        if self.active is None and not self.barrier and self.deadline is not None and self.deadline < now - TIE and self.pending:
            start = max(self.deadline, self.last_end)
            latest = max(self.deadline, self.last_end + self.tail)
            inside = tuple(seq for seq, at in self.pending if at < start - TIE)
            if not self.uncertain:
                self.active = _Write(start, latest, inside, latest + self.bound)
            else:  # armed during a failing write: this window, or (if the failure paused it) a later event's
                due = float("inf") if self.fallback is None else max(self.fallback, self.last_end + self.tail) + self.bound
                self.active = _Write(start, latest, inside, due, exact=False, optional=self.fallback is None)
            self.deadline, self.uncertain, self.fallback = None, False, None

    def overdue(self, now: float) -> str | None:
        """The background write that should be durable by ``now`` and is not (after :meth:`advance`)."""
        self.advance(now)
        write = self.active
        if write is not None and not write.optional and not self.murky and now > write.due + TIE and self.stretched < write.start:
            return (
                f"the window of seqs {_span(write.seqs)} expired at {write.start:.3f}s; no batch was written by "
                f"{now:.3f}s (due by {write.due:.3f}s: a write takes at most {self.bound:.3f}s here)"
            )
        return None

    # -- what happened -----------------------------------------------------------------------

    def _stop(self, fact: WindowFact) -> None:
        """A graceful stop cancels the process's tasks — the write-behind worker and its timer —
        and then its store drains the queue (a flush: the barrier that follows); a write in flight
        finishes (it is shielded)."""
        if self.active is None and self.deadline is not None and abs(self.deadline - fact.time) <= TIE:
            self.advance(fact.time + 2 * TIE)  # the window expires at this very instant: its write may start first
            if self.active is not None:
                self.active.optional = True  # ...or the stop may cancel the timer first
        if self.active is not None and fact.time <= self.active.latest + TIE:
            self.active.optional = True  # its write may not have started yet (the pause after the write before)
        self.stopping = True
        self.deadline, self.uncertain, self.fallback = None, False, None

    def _admit(self, fact: WindowFact) -> None:
        if fact.seq in self.admitted or fact.seq in self.written:
            return
        self.admitted[fact.seq] = fact.time
        self.pending.append((fact.seq, fact.time))
        self.admitted_since_failure = True
        if self.deadline is None and not self.barrier and not self.stopping:
            self.deadline = fact.time + WINDOW
            self.early_ok = fact.label == "bound"
            self.uncertain = fact.time <= self.failing_until + TIE
            self.fallback = None
        elif self.uncertain and self.fallback is None and fact.time > self.failing_until + TIE:
            self.fallback = fact.time + WINDOW  # the failure is over by now: if it paused the window, this event armed one

    def _barrier(self, fact: WindowFact) -> None:
        if self.active is None and self.deadline is not None and abs(self.deadline - fact.time) <= TIE:
            self.advance(fact.time + 2 * TIE)  # the window expires at this very instant: its write may start first
            if self.active is not None:
                self.active.optional = True  # ...or the flush may take the queue
        if self.active is not None and fact.time <= self.active.latest + TIE:
            # its write starts at this very instant, or may not have started yet (the write before it
            # may still be finishing: the perturbation's pause after its acknowledgement): the flush
            # may take the queue first
            self.active.optional = True
        if self.active is not None and not self.active.exact and fact.time <= self.active.due + TIE:
            self.active.optional = True  # an uncertain window, not yet due: the flush may take it
        self.barrier = True
        self.barrier_since = fact.time
        self.deadline = None
        if self.active is None and not self.pending:
            self.barrier = False  # nothing to drain: the barrier returns at once
        else:
            self.drained = True

    def _ack(self, fact: WindowFact) -> None:
        seqs = tuple(seq for seq in range(fact.seq, fact.seq + fact.count) if seq in self.admitted)
        if not seqs:
            return  # a recovered tail re-appended, or events this process did not admit
        if fact.label == BACKGROUND:
            self._background_ack(fact, seqs)
        else:  # a barrier's batch: the rules do not time it (durable_when_acknowledged holds it)
            write = self.active
            if write is not None and not write.optional and not self.murky:
                self.problems.append(
                    f"the window of seqs {_span(write.seqs)} expired at {write.start:.3f}s, but no background write took it: a barrier "
                    f"({fact.label}) wrote seqs {_span(seqs)} at {fact.time:.3f}s"
                )
            self.active = None
            self.last_end = self.barrier_since = fact.time
            self._written(seqs)
            if not self.pending:
                self.barrier = self.murky = False

    def _background_ack(self, fact: WindowFact, seqs: tuple[int, ...]) -> None:
        write = self.active
        if write is None and self.murky and self.admitted_since_failure:
            write = _Write(fact.time, fact.time, (), float("inf"), exact=False, optional=True)
        if write is None:
            waited = [seq for seq, _ in self.pending]
            why = (
                "a barrier owned the queue"
                if self.barrier
                else "no window had expired"
                if self.deadline is not None
                else "no window was armed"
            )
            self.problems.append(
                f"a background write of seqs {_span(seqs)} was acknowledged at {fact.time:.3f}s, but {why} (queued: {_span(tuple(waited))})"
            )
            self._written(seqs)
            return
        self.active = None
        wanted = set(write.seqs)
        # (an uncertain window may really have been armed later, by an event after the failure:
        # its batch then holds more, but never less)
        stood_still = self.stretched >= write.start  # the timer could not fire at the expiry: later events may join
        if self.murky:
            pass
        elif not wanted <= set(seqs) or (write.exact and not stood_still and not all(self.admitted[s] <= write.latest + TIE for s in seqs)):
            late = [seq for seq in seqs if self.admitted[seq] > write.latest + TIE]
            self.problems.append(
                f"the window that expired at {write.start:.3f}s holds seqs {_span(write.seqs)}, but its batch holds {_span(seqs)}"
                + (f": seqs {_span(tuple(late))} came after it was taken (the window was held open)" if late else "")
            )
        if self.murky:
            pass
        elif fact.time < write.start - TIE and not self.early_ok:
            self.problems.append(
                f"the batch of seqs {_span(seqs)} was written at {fact.time:.3f}s, before its window expired at {write.start:.3f}s"
            )
        elif fact.time > write.due + TIE and self.stretched < write.start:
            self.problems.append(
                f"the batch of seqs {_span(seqs)} was acknowledged at {fact.time:.3f}s, but its window expired at {write.start:.3f}s "
                f"and it was due by {write.due:.3f}s (a write takes at most {self.bound:.3f}s here)"
            )
        self.last_end = fact.time
        self._written(seqs)
        left = [seq for seq, at in self.pending if at <= write.latest + TIE]
        if left and not self.barrier:  # admitted as the queue was taken, just after it: the first of them armed the window
            armed = self.admitted[left[0]] + WINDOW
            self.deadline = min(self.deadline, armed) if self.deadline is not None else armed
        if self.barrier:
            self.barrier_since = fact.time  # the barrier waited for this write; it drains the queue from now
        if self.barrier and not self.pending:
            self.barrier = False  # the barrier waited for this write and finds nothing left to drain
        if not self.pending:
            self.murky = False

    def _fail(self, fact: WindowFact) -> None:
        if fact.label == BACKGROUND:
            write = self.active
            if write is not None:  # the batch goes back in front, retries pause until the next event
                self.active = None
                self.deadline, self.uncertain, self.fallback = None, False, None
                self.last_end = fact.time
                self.failing_until = fact.time + self.bound
        elif fact.label is not None and (self.barrier or self.drained):
            # a barrier's write failed — even where the model had taken the barrier for over (a
            # delay fault slows a flush past a write's time): the flush raised, the batch is kept,
            # the timer paused.  (A write no barrier of this queue made — an append straight
            # through the write handle — pauses nothing: an armed window still expires.)
            self.barrier = False
            self.deadline = None
            self.murky = True
            self.admitted_since_failure = False

    def _written(self, seqs: tuple[int, ...]) -> None:
        self.written.update(seqs)
        self.pending = [(seq, at) for seq, at in self.pending if seq not in self.written]
        if not self.pending:  # (a window armed by an event this batch took along has nothing left to expire for)
            self.deadline, self.uncertain, self.fallback = None, False, None
            self.drained = False


def _span(seqs: tuple[int, ...]) -> str:
    if not seqs:
        return "[]"
    ordered = sorted(seqs)
    if ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"{ordered[0]}..{ordered[-1]}" if len(ordered) > 1 else str(ordered[0])
    return ",".join(map(str, ordered))
