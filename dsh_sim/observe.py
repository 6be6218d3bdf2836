"""What the harness knows that the runtime does not: the evidence invariants judge by.

:class:`Observation` watches every named point of a simulation: which events the runtime
acknowledged as durable (and the log bytes at that moment), which faults fired, every crash
with its evidence (the post-crash disk image, the in-memory log, where each tool call stood
among the four moments), and runs the live invariants at the moments they concern.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from dsh_sim import invariants as inv
from dsh_sim.simfs.crash import PowerCut
from dsh_sim.simfs.disk import Disk, DiskImage
from runtime.persistence import context as durability
from runtime.session.events import Event

if TYPE_CHECKING:
    from dsh_sim.faults import Firing
    from dsh_sim.sim import Lifetime, Simulation

BOUNDARIES = ("before 1", "1→2", "2→3", "3→4", "after 4")


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
    def capture(cls, sim: "Simulation", life: "Lifetime") -> "Evidence":
        op = durability.current()
        return cls(
            barrier=op.barrier,
            step=op.step,
            boundaries=call_boundaries(sim, life),
            in_memory=tuple(life.session.events) if life.session is not None else (),
            time=sim.now(),
            acked_bytes=sim.obs.acked_bytes,
        )

    def record(
        self, *, lifetime: int, point: str | None, details: dict[str, Any], kind: str, label: str, cut: str | None, phase: str, image: DiskImage
    ) -> CrashRecord:
        """The crash record of a crash of ``kind`` at this instant, leaving ``image``."""
        return CrashRecord(
            lifetime=lifetime, point=point, details=details, kind=kind, label=label, cut=cut, phase=phase,
            barrier=self.barrier, step=self.step, boundaries=self.boundaries, in_memory=self.in_memory,
            time=self.time, image=image, acked_bytes=self.acked_bytes,
        )


def crash_phase(disk: Disk, log_path: str, kind: str, cut: PowerCut | None) -> str:
    """Where the crash left the session log: kill, or what power loss did to its unsynced bytes."""
    if kind == "kill":
        return "kill"
    ino = disk.resolve(log_path)
    if ino is None:
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


def call_boundaries(sim: "Simulation", life: "Lifetime") -> dict[str, str]:
    """Each known tool call's position among the four moments at this instant."""
    out: dict[str, str] = {}
    events = tuple(life.agent.session.events) if life.agent is not None else ()
    acked = sim.obs.acked
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
    delivered = {e.call_id.split(":")[0] for e in sim.world.ledger}
    for call_id in out:
        if call_id in results and results[call_id] in acked:
            out[call_id] = "after 4"
        elif call_id in delivered:
            out[call_id] = "3→4"
        elif call_id in calls and calls[call_id] in acked:
            out[call_id] = "2→3"
    for response in sim.model_queue:
        for call in response.tool_calls:
            out.setdefault(call.id, "before 1")
    return out


class Observation:
    def __init__(self, sim: "Simulation") -> None:
        self.sim = sim
        self.acked: dict[int, Event] = {}
        self.acked_bytes = b""
        self.crashes: list[CrashRecord] = []
        self.faults: list[tuple[int, str, str, int, str | None]] = []  # (lifetime, point, action, rule, durability step)
        self.violations: list[inv.Violation] = []
        self.checked: dict[str, int] = {name: 0 for name in inv.INVARIANTS}
        self.corruptions: list[tuple[str, int, bool]] = []  # (path, offset, inside a complete frame)
        self.recoveries: list[dict[str, Any]] = []
        self.verdict_counts: dict[tuple[str, bool], int] = {}
        self.recovered_from: list[CrashRecord] = []
        self.writers: set[int] = set()  # lifetimes that acknowledged appends
        self.cases: list[dict[str, Any]] = []  # coverage cases (one per crash + recovery)

    def report(self, violation: inv.Violation) -> None:
        self.violations.append(violation)

    def count(self, name: str) -> None:
        self.checked[name] += 1

    # -- hooks from the simulation ---------------------------------------------------------

    def on_point(self, life: "Lifetime", name: str, details: dict[str, Any]) -> None:
        if name == "persist.batch.durable":
            inv.check_single_writer(self, life)
            for event in details.get("_events", ()):
                self.acked[event.seq] = event
            data = self.sim.disk.read_path(self.sim.config.log_path)
            if data is not None:
                self.acked_bytes = data
        elif name == "tools.execute.body" and not details.get("nested"):
            inv.check_body_after_durable_call(self, life, details)
            inv.check_approval_gate(self, life, details)
        elif name == "llm.request":
            inv.check_request_after_durable_header(self, life)

    def fired(self, firing: "Firing", life: "Lifetime", point: str) -> None:
        self.faults.append((life.index, point, firing.rule.action, firing.index, durability.current().step))

    def corrupted(self, path: str, offset: int, complete_frame: bool) -> None:
        self.corruptions.append((path, offset, complete_frame))

    def crashed(self, record: CrashRecord) -> None:
        self.crashes.append(record)

    def _committed_at_open(self, life: "Lifetime") -> None:
        """What a process found in complete frames on disk is committed: protect it like an ack.

        (Migrated history, or a log written before this simulation, never passed through
        ``persist.batch.durable``; records recovered from a torn tail are committed only once
        re-appended, which that point announces.)
        """
        if life.boot_error is not None or life.report is None or life.session is None:
            return
        torn = getattr(life.report, "torn", None)
        recovered = len(torn.recovered) if torn is not None else 0
        for event in tuple(life.report.events)[: len(life.report.events) - recovered]:
            self.acked.setdefault(event.seq, event)
        data = self.sim.disk.read_path(self.sim.config.log_path)
        if data is not None and torn is not None:
            data = data[: torn.truncate_to]  # a torn tail is not committed: the writer truncates it
        if data is not None and len(data) > len(self.acked_bytes) and data.startswith(self.acked_bytes):
            self.acked_bytes = data  # everything before the torn tail was committed when we opened

    def second_writer(self, life: "Lifetime") -> None:
        inv.check_second_writer(self, life)

    def booted(self, life: "Lifetime") -> None:
        """Post-recovery invariants, after every boot that follows a crash."""
        previous = [l for l in self.sim.lifetimes if l.index < life.index]
        crash = next((l.crash for l in reversed(previous) if l.crash is not None), self.sim.prior_crash)
        inv.check_recovery(self, life, crash)
        inv.check_idempotent_keys(self)
        self._committed_at_open(life)
        if crash is not None and crash not in self.recovered_from:
            self.recovered_from.append(crash)
            from dsh_sim.coverage import case_from_recovery

            self.cases.append(case_from_recovery(self.sim, crash, life, self.sim.source, self.sim.torn_class))
