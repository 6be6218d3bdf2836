"""What the harness knows that the runtime does not: facts of one simulated run, no judgement.

The kernel records here, as they happen, everything the judges (``dsh_sim.evidence``) and the
drivers need to know about a run besides the disk and the ledger: which events the runtime
acknowledged as durable (and the log bytes at that moment), which faults fired, which bytes
were corrupted, every crash, which processes wrote, which approval answers failed, and a
historical log a scenario placed before the first boot.  It survives every process lifetime.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

import attrs

from runtime.session.events import Event

if TYPE_CHECKING:
    from dsh_sim.adapters.model import RequestMark
    from dsh_sim.adapters.observed import ToolMark
    from dsh_sim.engine.crash import CrashRecord


_SEQ = operator.attrgetter("seq")


@attrs.frozen
class FaultFired:
    lifetime: int
    point: str
    action: str
    rule: int  # index of the rule in the plan
    durability_step: str | None  # the runtime's durability sequence the fault struck
    time: float = 0.0  # virtual seconds when it fired
    marks: int = 0  # how many tool marks were recorded before it fired (its place among them)


@attrs.frozen
class Corruption:
    path: str
    offset: int
    complete_frame: bool  # inside a complete zstd frame (must be refused, never repaired)


@attrs.frozen
class SeededLog:
    """A historical (v0) generation placed on the disk before the first boot."""

    path: str  # the v0 generation
    target: str  # where its current (v3) generation is published
    data: bytes  # its bytes, which must never change
    # what the log means (a dsh_sim.scenario.v0 description, opaque to the kernel): the judges
    # derive what migrating it must publish from it, never from the runtime's decoder
    description: object = None


@attrs.frozen
class PlantedLink:
    """A symbolic link a foreign actor planted where a session path goes, and what its target
    held then (each name under it, relative, with its bytes; ``None`` for a directory)."""

    path: str
    target: str
    contents: tuple[tuple[str, bytes | None], ...]
    displaced: str | None = None  # where the file that was at ``path`` was moved aside


@attrs.frozen
class WindowFact:
    """One happening the write-behind timing model reads, in the order it happened: an event
    ``admit``-ted to a live session (``seq``), a batch acknowledged (``ack``: ``seq`` its first,
    ``count``), a ``fail``-ed write, a ``barrier`` (flush) starting, a graceful ``stop``
    starting; ``label`` is the runtime's durability label (a background "window write" or the
    barrier's reason)."""

    kind: str
    lifetime: int
    time: float
    seq: int = -1
    count: int = 0
    label: str | None = None


@attrs.define
class History:
    acked: dict[int, Event] = attrs.field(factory=dict)
    acked_bytes: bytes = b""  # the log's bytes at the last acknowledgement (or committed at open)
    crashes: list[CrashRecord] = attrs.field(factory=list)
    faults: list[FaultFired] = attrs.field(factory=list)
    corruptions: list[Corruption] = attrs.field(factory=list)
    writers: set[int] = attrs.field(factory=set)  # lifetimes that acknowledged appends
    answerer_failures: list[str] = attrs.field(factory=list)  # calls whose approval answerer failed
    approval_consulted: list[str] = attrs.field(factory=list)  # approval request ids the simulated user was asked
    tool_marks: list[ToolMark] = attrs.field(factory=list)  # the tool pipeline's moments, in order
    window: list[WindowFact] = attrs.field(factory=list)  # the write-behind's inputs and writes, in order
    model_requests: list[RequestMark] = attrs.field(factory=list)  # every request the model received, in order
    prompts: list[tuple[int, int, str]] = attrs.field(factory=list)  # (lifetime, index of its turn/start, text) per prompt
    seeded: SeededLog | None = None
    planted: list[PlantedLink] = attrs.field(factory=list)  # links planted at session paths (plant_link)
    foreign_files: list[tuple[str, bytes]] = attrs.field(factory=list)  # files other processes put at session names (target_exists)
    prior_crash: CrashRecord | None = None  # explore: the crash this simulation starts after
    # the log (as written) when a truncation or removal failed: the bytes beyond the acknowledged
    # ones it could not remove stay until an append heals them (cleared by an acknowledgement
    # or an open)
    unhealed: bytes | None = None
    # ``acked`` is shared with a snapshot (or taken from one) until this history first changes
    # it: explore snapshots the history at every crash point, and copying a long session's
    # acknowledged events at each of them held memory quadratic in the session's length
    _acked_shared: bool = attrs.field(default=False, repr=False, eq=False)

    _acked_end: int = attrs.field(default=0, repr=False, eq=False)  # one past the highest acknowledged seq

    def acked_end(self) -> int:
        """One past the highest acknowledged seq (0: none; kept as seqs are acknowledged: a
        judge asks at every step, and the map of a long session is long)."""
        return self._acked_end

    def _own_acked(self) -> dict[int, Event]:
        if self._acked_shared:
            self.acked = dict(self.acked)
            self._acked_shared = False
        return self.acked

    def acknowledged(self, lifetime: int, events: tuple[Event, ...], log_bytes: bytes | None) -> None:
        """A batch was acknowledged as durable by process ``lifetime``."""
        self.writers.add(lifetime)
        self.unhealed = None
        acked = self._own_acked() if events else self.acked
        for event in events:
            acked[event.seq] = event
            self._acked_end = max(self._acked_end, event.seq + 1)
        if log_bytes is not None:
            self.acked_bytes = log_bytes

    def committed_at_open(self, events: tuple[Event, ...], recovered: int, log_bytes: bytes | None, truncate_to: int | None) -> None:
        """What a process found in complete frames on disk is committed: protect it like an ack.

        (Migrated history, or a log written before this simulation, never passed through an
        acknowledgement; records recovered from a torn tail are committed only once
        re-appended, which is acknowledged in its turn.)
        """
        self.unhealed = None  # what a failed truncation left is this process's committed log now
        committed = events[: len(events) - recovered]
        if not all(map(self.acked.__contains__, map(_SEQ, committed))):  # (one C-level pass)
            acked = self._own_acked()
            for event in committed:
                acked.setdefault(event.seq, event)
            self._acked_end = max(self._acked_end, max(map(_SEQ, committed)) + 1)
        if log_bytes is not None and truncate_to is not None:
            log_bytes = log_bytes[:truncate_to]  # a torn tail is not committed: the writer truncates it
        if log_bytes is not None and len(log_bytes) > len(self.acked_bytes) and log_bytes.startswith(self.acked_bytes):
            self.acked_bytes = log_bytes

    def snapshot(self) -> History:
        """A copy of the facts that outlive the processes of a run (events are never mutated).

        A run that starts from this instant (explore) has its own processes: which lifetimes
        wrote, crashed or fired faults belongs to the recorded run, not to it."""
        self._acked_shared = True  # (both copy it before they change it)
        return History(
            acked=self.acked,
            acked_bytes=self.acked_bytes,
            acked_shared=True,
            acked_end=self._acked_end,
            corruptions=list(self.corruptions),
            answerer_failures=list(self.answerer_failures),
            approval_consulted=list(self.approval_consulted),
            seeded=self.seeded,
            planted=list(self.planted),
            foreign_files=list(self.foreign_files),
        )

    def describe_faults(self) -> list[list[Any]]:
        return [[f.lifetime, f.point, f.action, f.rule, f.durability_step] for f in self.faults]
