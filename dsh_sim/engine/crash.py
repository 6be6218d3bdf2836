"""A crash, as the judges see it: where it struck, what it left, where each call stood.

:class:`Evidence` is what the harness knows at an instant besides the disk (the barrier and
durability step under way, each tool call's position among the four moments, the in-memory
log, the acknowledged bytes); it is taken where a crash happens and where explore only records
a point to crash later, so both are judged by the same facts.  :func:`crash_phase` names what a
crash did to the session log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from dsh_sim.adapters.simfs.crash import PowerCut
from dsh_sim.adapters.simfs.disk import Disk, DiskImage
from runtime.persistence import context as durability
from runtime.session.events import Event

if TYPE_CHECKING:
    from dsh_sim.adapters.world import World
    from runtime.adapters.script_model import ScriptedResponse


@attrs.frozen
class CrashRecord:
    lifetime: int
    point: str | None
    details: dict[str, Any]
    kind: str
    label: str
    cut: str | None
    phase: str
    barrier: str | None
    step: str | None
    boundaries: dict[str, str]  # call id -> side-effect boundary at the crash
    in_memory: tuple[Event, ...]
    time: float
    image: DiskImage
    acked_bytes: bytes


@attrs.frozen
class Evidence:
    """What a crash at this instant would leave for the judges, besides the disk.

    Taken where a crash happens (:meth:`Simulation.crash_process`) and where one is only
    recorded for later exploration (``explore.Recorder``), so both judge by the same facts.
    """

    barrier: str | None
    step: str | None
    boundaries: dict[str, str]
    in_memory: tuple[Event, ...]
    time: float
    acked_bytes: bytes

    @classmethod
    def capture(
        cls,
        in_memory: Sequence[Event],
        *,
        agent: bool,
        world: World,
        scripted: Sequence[ScriptedResponse],
        acked: Mapping[int, Event],
        acked_bytes: bytes,
        now: float,
    ) -> Evidence:
        """The evidence at this instant: ``in_memory`` is the process's live log (``agent``: an
        agent's, whose tool calls have boundaries), ``scripted`` what the model has still to
        say, ``acked`` and ``acked_bytes`` what the runtime acknowledged so far."""
        op = durability.current()
        boundaries, events = _LAST.of(in_memory, agent, world.ledger, scripted, acked)
        return cls(barrier=op.barrier, step=op.step, boundaries=boundaries, in_memory=events, time=now, acked_bytes=acked_bytes)

    def record(
        self,
        *,
        lifetime: int,
        point: str | None,
        details: dict[str, Any],
        kind: str,
        label: str,
        cut: str | None,
        phase: str,
        image: DiskImage,
    ) -> CrashRecord:
        """The crash record of a crash of ``kind`` at this instant, leaving ``image``."""
        return CrashRecord(
            lifetime=lifetime,
            point=point,
            details=details,
            kind=kind,
            label=label,
            cut=cut,
            phase=phase,
            barrier=self.barrier,
            step=self.step,
            boundaries=self.boundaries,
            in_memory=self.in_memory,
            time=self.time,
            image=image,
            acked_bytes=self.acked_bytes,
        )


def crash_phase(disk: Disk, log_path: str, kind: str, cut: PowerCut | None) -> str:
    """Where the crash left the session log: kill, or what power loss did to its unsynced bytes."""
    if kind == "kill":
        return "kill"
    ino = disk.resolve(log_path)
    if ino is None or not disk.is_file(ino):  # (not there, or a link planted in its place)
        unpublished = any(name.startswith("session.") for d in disk.iter_dirs() for name in d.unsynced_names())
        return "power:before-publication" if unpublished else "power:no-log"
    parent = disk.resolve(log_path.rsplit("/", 1)[0])
    if parent is not None and log_path.rsplit("/", 1)[1] in disk.dir(parent).unsynced_names():
        if cut is None:
            return "power:publication-unsynced"
        keep = {(d, n): k for d, n, k in cut.entries}
        return "power:publication-kept" if keep.get((parent, log_path.rsplit("/", 1)[1])) else "power:publication-dropped"
    node = disk.file(ino)
    if not node.pending:
        return "power:synced"
    if cut is None:
        return "power:unsynced"
    choice = next((f for f in cut.files if f.ino == ino), None)
    if choice is None or (choice.keep_ops == 0 and choice.torn_bytes is None and choice.subset is None):
        return "power:unsynced-dropped"
    if choice.torn_bytes is not None:
        return "power:torn"
    if choice.subset is not None:
        return "power:reordered"
    return "power:unsynced-kept" if choice.keep_ops == len(node.pending) else "power:partial"


def _shape(items: Sequence[Any] | Mapping[Any, Any]) -> tuple[Any, ...]:
    """What tells a grown or changed sequence (or mapping) from the one seen before: the very
    object, its length, and its first and last items (the harness's lists only grow at their
    end or lose their front; a rolled-back batch's events come back as new objects)."""
    if isinstance(items, Mapping):
        return (items, len(items))
    return (items, len(items), items[0] if items else None, items[-1] if items else None)


class _LastEvidence:
    """The boundaries and the in-memory log of the previous capture, given again while what
    they are computed from is unchanged.

    Explore captures evidence at every named point, and most points change neither the live
    log nor the ledger, the acknowledged seqs or the model's script: walking every event of a
    long session again at each of them made recording quadratic, and a tuple and a dict per
    point held memory quadratic in the session's length.  Holding the objects compared keeps
    their identities from being reused."""

    def __init__(self) -> None:
        self._key: tuple[Any, ...] = ()
        self._value: tuple[dict[str, str], tuple[Event, ...]] = ({}, ())

    def of(
        self, events: Sequence[Event], agent: bool, ledger: Sequence[Any], scripted: Sequence[Any], acked: Mapping[int, Event]
    ) -> tuple[dict[str, str], tuple[Event, ...]]:
        key = (agent, _shape(events), _shape(ledger), _shape(scripted), _shape(acked))
        if len(key) != len(self._key) or not all(_same_shape(a, b) for a, b in zip(key, self._key)):
            boundaries = call_boundaries(events if agent else (), ledger, scripted, acked)
            self._key, self._value = key, (boundaries, tuple(events))
        return self._value


def _same_shape(a: Any, b: Any) -> bool:
    if type(a) is not tuple:
        return bool(a == b)
    return len(a) == len(b) and a[0] is b[0] and a[1] == b[1] and all(x is y for x, y in zip(a[2:], b[2:]))


_LAST = _LastEvidence()


def call_boundaries(
    events: Sequence[Event], ledger: Sequence[Any], scripted: Sequence[ScriptedResponse], acked: Mapping[int, Event]
) -> dict[str, str]:
    """Each tool call of an agent's live log (or still scripted) placed among the four moments."""
    out: dict[str, str] = {}
    calls: dict[str, int] = {}
    results: dict[str, int] = {}
    for event in events:
        if event.type == "assistant/message":
            for block in event.data["message"]["content"]:
                if block.get("type") == "tool-call":
                    out[block["id"]] = "1→2"
        elif event.type == "tool/call":
            calls[event.data["callId"]] = event.seq
        elif event.type == "tool/result":
            results[event.data["message"]["source"]["callId"]] = event.seq
    delivered = {e.call_id.split(":")[0] for e in ledger}
    for call_id in out:
        if call_id in results and results[call_id] in acked:
            out[call_id] = "after 4"
        elif call_id in delivered:
            out[call_id] = "3→4"
        elif call_id in calls and calls[call_id] in acked:
            out[call_id] = "2→3"
    for response in scripted:
        for call in response.tool_calls:
            out.setdefault(call.id, "before 1")
    return out


@attrs.frozen
class CrashPoint:
    """An instant of a recorded run where a crash could strike, with all a run that starts
    from the crash needs: the disk image, the world, the history, the evidence."""

    index: int  # order among the points captured in the run
    step_index: int  # the scenario step that was running
    lifetime: int
    point: str
    occurrence: int  # this point's hit count within its lifetime
    details: dict[str, Any]
    image: DiskImage
    world: Any  # the World at this instant (a snapshot)
    history: Any  # the History at this instant (a snapshot)
    evidence: Evidence

    def record(self, *, kind: str, label: str, cut: str | None, phase: str, image: DiskImage) -> CrashRecord:
        """The crash record of a crash of ``kind`` here, leaving ``image``."""
        return self.evidence.record(
            lifetime=self.lifetime, point=self.point, details=self.details, kind=kind, label=label, cut=cut, phase=phase, image=image
        )
