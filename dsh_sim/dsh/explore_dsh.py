"""``dsh-sim explore --runtime dsh``: crash the published DSH writer at every filesystem
operation and power-loss state, recover with DSH, and judge DSH by dsh-sim's invariants.

Record: the real backend (Node, through the SimFS shim) creates the session and appends the
shape's batches on a simulated disk; before every mutating filesystem call the disk image
is a crash point, with the batches acknowledged so far (their ``append`` resolved).
Explore: every crash point as a kill (page cache kept) and as every power-loss state the
prefix model allows (codec-aware torn cuts, unsynced directory entries kept or dropped).
Each post-crash disk is recovered by a fresh DSH backend (``list``, ``readFrom``,
``inspect``, ``load``, a second ``load``) and then continued by one appended turn; identical
post-crash logs are recovered once.

Checks (the names of dsh-sim's invariants, applied to DSH): ``recovery_succeeds`` (DSH must
read every state its own writer's crash leaves), ``acked_events_survive``, ``seq_dense``,
``committed_bytes_stable``, ``verdict_soundness`` (checkpoint model: a ``tool/call`` that
was acknowledged may have had its effect, so ``TOOL_NOT_STARTED`` is unsound for it),
``closers`` (DSH's closers equal dsh-sim's repair of the same prefix), ``repair_idempotent``,
``resume_continues`` (an append after recovery lands at the next seq), and ``differential``
(dsh-sim's reader finds the same prefix in the same bytes).
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from dsh_sim.adapters.simfs.crash import PowerCut, apply_power_cut, crash_states
from dsh_sim.adapters.simfs.disk import Disk, DiskImage
from dsh_sim.adapters.simfs.torn import codec_cut_points
from dsh_sim.dsh.bridge import Bridge
from dsh_sim.dsh.install import Installation
from dsh_sim.dsh.normalize import canonical, closer_verdicts, ours
from dsh_sim.dsh.shapes import Log
from dsh_sim.dsh.simfs_server import SimFsServer
from dsh_sim.evidence.document import DshExploreRow, DshViolation, ResultsDocument, Violation, unstructure

ROOT = "/sim/dsh-root"
SUFFIX = {"none": "session.jsonl", "zstd": "session.jsonl.zstd"}


@attrs.frozen
class DshPoint:
    index: int
    op: str
    path: str
    image: DiskImage
    acked_batches: int
    acked_bytes: bytes  # the log file's content when the last acknowledged append resolved


@attrs.frozen
class DshExploreResult:
    """The DSH writer crashed at every filesystem operation of one session shape: the crash
    points and states, the distinct DSH recoveries, and every violation."""

    shape: str
    compression: str
    points: int
    states: int
    recoveries: int
    violations: tuple[DshViolation, ...]
    seconds: float
    per_op: dict[str, int]  # filesystem operation -> crash states before it
    checked: dict[str, int] = attrs.field(factory=dict)  # invariant -> checks, over the distinct recoveries
    points_by_op: dict[str, int] = attrs.field(factory=dict)  # filesystem operation -> crash points before it

    def row(self, scenario: str | None = None) -> DshExploreRow:
        """The row of a results document's ``dsh_explore`` (``scenario``: whose shape this is)."""
        return DshExploreRow(
            shape=self.shape,
            compression=self.compression,
            scenario=scenario,
            crash_points=self.points,
            states=self.states,
            recoveries_run=self.recoveries,
            per_op=self.per_op,
            points_by_op=self.points_by_op,
            checked=self.checked,
            violations=self.violations,
            seconds=round(self.seconds, 3),
        )

    def document(self) -> dict[str, Any]:
        """:meth:`row` as JSON (without the scenario)."""
        return unstructure(self.row())


def log_path(log: Log, compression: str) -> str:
    return f"{ROOT}/--work-proj--/{log.id}/{SUFFIX[compression]}"


def record(install: Installation, log: Log, compression: str, seed: str) -> list[DshPoint]:
    disk = Disk()
    disk.mkdirs_durable("/sim")
    path = log_path(log, compression)
    points: list[DshPoint] = []
    acked = [0]
    acked_bytes = [b""]

    def before(op: str, args: dict[str, Any]) -> None:
        target = str(args.get("path", args.get("dst", "")))
        points.append(DshPoint(len(points), op, target, disk.image(), acked[0], acked_bytes[0]))

    server = SimFsServer(disk, 1, seed, before)
    with Bridge(install, fs=server) as bridge:
        bridge.request("create", key="w", root=ROOT, compression=compression, meta=log.meta()).unwrap()
        for batch in log.batches:
            bridge.request("append", key="w", root=ROOT, compression=compression, session=log.id, events=batch).unwrap()
            acked[0] += 1
            acked_bytes[0] = disk.read_path(path) or b""
    points.append(DshPoint(len(points), "end", path, disk.image(), acked[0], acked_bytes[0]))
    return points


def _states(point: DshPoint, crash: str) -> list[tuple[str, PowerCut | None]]:
    return crash_states_of(point.image, crash)


def crash_states_of(image: DiskImage, crash: str) -> list[tuple[str, PowerCut | None]]:
    """The deaths explored at a crash point with disk ``image``: a kill, and every power-loss
    state of the prefix model (codec-aware torn cuts)."""
    out: list[tuple[str, PowerCut | None]] = []
    if crash in ("kill", "both"):
        out.append(("kill", None))
    if crash in ("power", "both"):
        out.extend(("power", cut) for cut in crash_states(Disk.from_image(image), "prefix", codec_cut_points))
    return out


def continuation(log: Log, stored: int) -> list[dict[str, Any]]:
    """One balanced turn at the next seqs (what a resumed agent appends)."""
    turn = 1 + max((e["data"]["turn"] for e in log.events[:stored] if e["type"] == "turn/start"), default=0)
    kinds = [("turn/start", {"turn": turn}), ("turn/end", {"turn": turn, "reason": {"kind": "completed"}})]
    return [{"type": k, "seq": stored + i, "time": 2_000_000_000_000 + i, "data": d} for i, (k, d) in enumerate(kinds)]


def judge(
    log: Log,
    compression: str,
    point: DshPoint,
    crash: str,
    data: bytes | None,
    probe: dict[str, Any],
    after: bytes | None,
    checked: dict[str, int] | None = None,
) -> list[str]:
    """The violations of one recovery, as ``invariant: detail`` lines; ``checked`` counts each
    invariant this recovery was judged by."""
    out: list[str] = []
    counts = checked if checked is not None else {}

    def count(*names: str) -> None:
        for name in names:
            counts[name] = counts.get(name, 0) + 1

    acked = [e for batch in log.batches[: point.acked_batches] for e in batch]
    count("acked_events_survive")
    if data is None:
        if acked:
            out.append(f"acked_events_survive: the log is gone after {len(acked)} acknowledged events")
        return out
    count("recovery_succeeds")
    for step in ("readFrom", "inspect", "load", "reload"):
        if not probe[step]["ok"]:
            return out + [f"recovery_succeeds: DSH {step} refuses its own crash state: {probe[step]['error'].get('message')}"]
    stored, loaded = probe["readFrom"]["value"], probe["load"]["value"]
    count("seq_dense", "committed_bytes_stable", "repair_idempotent", "differential", "verdict_soundness")
    if [e["seq"] for e in loaded] != list(range(len(loaded))):
        out.append("seq_dense: recovered seqs are not dense from 0")
    if [canonical(e) for e in stored[: len(acked)]] != [canonical(e) for e in acked]:
        out.append(f"acked_events_survive: {len(acked)} acknowledged events, DSH recovered {len(stored)} and they differ")
    if after is not None and point.acked_bytes and after[: len(point.acked_bytes)] != point.acked_bytes:
        out.append("committed_bytes_stable: DSH's recovery rewrote acknowledged bytes")
    if [canonical(e) for e in probe["reload"]["value"]] != [canonical(e) for e in loaded]:
        out.append("repair_idempotent: a second load differs from the first")
    mine, _ = ours(data, compression)
    if mine.refusal is not None:
        out.append(f"differential: dsh-sim refuses what DSH recovers ({mine.refusal.klass}: {mine.refusal.text})")
    else:
        if mine.events != tuple(canonical(e) for e in stored):
            out.append(f"differential: dsh-sim's prefix has {len(mine.events)} events, DSH's {len(stored)}")
        count("closers")
        if mine.closers != tuple(canonical(e) for e in loaded[len(stored) :]):
            out.append("closers: DSH's closers differ from dsh-sim's repair of the same prefix")
    acked_calls = {e["data"]["callId"] for e in acked if e["type"] == "tool/call"}
    for call, verdict in closer_verdicts(loaded[len(stored) :]).items():
        if verdict == "TOOL_NOT_STARTED" and call in acked_calls:
            out.append(f"verdict_soundness: {call} was durably started (acknowledged tool/call) but DSH says TOOL_NOT_STARTED")
    return out


def explore_dsh(
    install: Installation,
    log: Log,
    compression: str,
    *,
    name: str = "",
    crash: str = "both",
    bound: int | None = None,
    on_point: Callable[[int, int], None] | None = None,
) -> DshExploreResult:
    """DSH's writer crashed at every point of ``log``'s recording (at most ``bound`` states a
    point), each state recovered by DSH and judged.  ``on_point(done, total)`` after each point:
    progress, and where a campaign stops when asked (it raises)."""
    started = time.perf_counter()
    seed = f"dsh-explore:{name or log.id}:{compression}"
    points = record(install, log, compression, seed)
    path = log_path(log, compression)
    cache: dict[str, list[str]] = {}
    violations: list[DshViolation] = []
    per_op: dict[str, int] = {}
    checked: dict[str, int] = {}
    states = 0
    server = SimFsServer(Disk(), 2, seed)
    with Bridge(install, fs=server) as bridge:
        for done, point in enumerate(points, 1):
            options = _states(point, crash)
            if bound is not None and len(options) > bound:
                options = options[:1] + options[1 :: max(1, len(options) // bound)][: bound - 1]
            for kind, cut in options:
                states += 1
                per_op[point.op] = per_op.get(point.op, 0) + 1
                disk = Disk.from_image(point.image)
                if cut is not None:
                    apply_power_cut(disk, cut)
                data = disk.read_path(path)
                key = hashlib.sha256((data or b"<none>") + repr(point.acked_batches).encode()).hexdigest()
                if key not in cache:
                    cache[key] = _recover(bridge, server, disk, log, compression, point, kind, data, checked)
                label = kind if cut is None else f"power:{cut.describe()}"
                violations.extend(DshViolation(v.split(":", 1)[0], point.index, label, v.split(":", 1)[1].strip()) for v in cache[key])
            if on_point is not None:
                on_point(done, len(points))
    return DshExploreResult(
        name or log.id,
        compression,
        len(points),
        states,
        len(cache),
        tuple(violations),
        time.perf_counter() - started,
        per_op,
        checked,
        dict(Counter(p.op for p in points)),
    )


def _recover(
    bridge: Bridge,
    server: SimFsServer,
    disk: Disk,
    log: Log,
    compression: str,
    point: DshPoint,
    kind: str,
    data: bytes | None,
    checked: dict[str, int],
) -> list[str]:
    server.__init__(disk, 2, server.seed)  # type: ignore[misc]  # a fresh process view on the post-crash disk
    probe = bridge.request("probe", root=ROOT, compression=compression, session=log.id).unwrap()
    after = disk.read_path(log_path(log, compression))
    problems = judge(log, compression, point, kind, data, probe, after, checked)
    if data is not None and probe["load"]["ok"]:
        checked["resume_continues"] = checked.get("resume_continues", 0) + 1
        stored = len(probe["load"]["value"])
        key = f"resume:{hashlib.sha256(data).hexdigest()}"
        more = continuation(log, stored)
        appended = bridge.request("append", key=key, root=ROOT, compression=compression, session=log.id, events=more)
        read = bridge.request("readFrom", key=key, root=ROOT, compression=compression, session=log.id)
        bridge.request("close", key=key)
        if not appended.ok or not read.ok or [e["seq"] for e in read.value] != list(range(stored + len(more))):
            problems.append(f"resume_continues: appending at seq {stored} after recovery failed: {appended.error or read.error}")
    return problems


def summarize(results: Sequence[DshExploreResult]) -> dict[str, Any]:
    return {
        "shapes": [r.document() for r in results],
        "states": sum(r.states for r in results),
        "violations": sum(len(r.violations) for r in results),
    }


def results_document(results: Sequence[tuple[str, DshExploreResult]]) -> ResultsDocument:
    """A results document (``dsh-sim report`` merges it): the shapes explored under
    ``dsh_explore`` (the report's DSH section), every DSH violation as a violation of the run.
    ``results`` pairs each result with the scenario whose shape it explored."""
    from dsh_sim.evidence.results import meta

    return ResultsDocument(
        meta=meta(
            "explore-dsh",
            shapes=len(results),
            states=sum(r.states for _, r in results),
            seconds=round(sum(r.seconds for _, r in results), 3),
        ),
        dsh_explore=tuple(r.row(path) for path, r in results),
        violations=tuple(
            Violation(
                v.invariant, f"the DSH writer ({r.shape}, {r.compression}) at point {v.point} ({v.crash}): {v.detail}", path, "explore-dsh"
            )
            for path, r in results
            for v in r.violations
        ),
    )
