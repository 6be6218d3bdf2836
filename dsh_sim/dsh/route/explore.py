"""Every crash state of a scenario on the DSH route, recovered by DSH and judged by the ledger.

Record: the scenario runs once on the route host (:class:`~.run.RouteRunner`); at every
named point — route interceptors, world requests, SimFS operations — the disk image and the
world's ledger are kept.  Explore: each point as a kill (the page cache survives) and as every
power-loss state the prefix model allows (torn at codec-aware cuts, unsynced directory entries
kept or dropped).  Each distinct post-crash state (log bytes × effects the world applied) is
recovered once by DSH — a fresh Cordis app on a long-lived host process, resumed with DSH's
own repair, settled and stopped — and judged: ``recovery_succeeds``, ``seq_dense``,
``one_result_per_call``, ``verdict_soundness`` and ``world_agreement`` against the ledger at the
crash, ``eventually_durable`` after the recovery's clean stop.

With ``differential``, every kill at a point both runtimes have is also replayed on dsh-sim's
runtime (the scenario plus one crash rule at the same announcement) and the verdicts and the
ledger compared (:mod:`.differential`).
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import attrs

from dsh_sim.adapters.simfs.crash import PowerCut, apply_power_cut
from dsh_sim.adapters.simfs.disk import Disk, DiskImage
from dsh_sim.adapters.world import LedgerEntry
from dsh_sim.dsh.bridge import BridgeError
from dsh_sim.dsh.explore_dsh import crash_states_of
from dsh_sim.dsh.install import Installation
from dsh_sim.dsh.simfs_server import SimFsServer
from dsh_sim.evidence.document import DshRouteRow

from .differential import StateComparison, compare_kill
from .host import EffectCheck
from .judge import judge
from .log import decode, verdicts
from .program import RouteProgram
from .run import Recovery, RouteRun, RouteRunner, durable_events, found_synced


@attrs.frozen
class RecordedPoint:
    index: int
    lifetime: int
    point: str
    details: tuple[tuple[str, str], ...]
    occurrence: int  # this announcement is the n-th of (lifetime, point, call id) — how a rule names it
    step: int  # the index of the scenario step that was running
    image: DiskImage
    ledger: tuple[LedgerEntry, ...]
    effects: tuple[EffectCheck, ...]


@attrs.frozen
class RouteViolationAt:
    invariant: str
    point: int
    name: str
    crash: str
    detail: str
    finding: str | None = None


@attrs.frozen
class RouteExploreResult:
    scenario: str
    points: int
    states: int
    recoveries: int
    violations: tuple[RouteViolationAt, ...]
    verdicts: dict[str, int]  # verdict class -> crash states that produced it
    per_point: dict[str, int]  # point -> crash states
    checked: dict[str, int]
    seconds: float
    compared: tuple[StateComparison, ...] = ()  # kills at route points, against dsh-sim's runtime
    confusion: dict[str, dict[str, int]] = attrs.field(factory=dict)  # verdict -> ground truth -> crash states

    @property
    def unmatched(self) -> int:
        return sum(not c.matched for c in self.compared)

    def row(self, path: str) -> DshRouteRow:
        """The report's row: route coverage, verdicts against the ledger, the comparison."""
        return DshRouteRow(
            scenario=path,
            name=self.scenario,
            crash_points=self.points,
            states=self.states,
            recoveries=self.recoveries,
            points_hit=len(self.per_point),
            verdicts=self.verdicts,
            confusion=self.confusion,
            kills_compared=sum(c.matched for c in self.compared),
            kills_differing=sum(bool(c.differences) for c in self.compared),
            kills_unexplained=sum(bool(c.unexplained) for c in self.compared),
            not_announced_by_dsh_sim=self.unmatched,
            explained=dict(Counter(v.finding for v in self.violations if v.finding)),
            unexplained=sum(v.finding is None for v in self.violations),
            seconds=round(self.seconds, 3),
        )

    def document(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "runtime": "dsh-route",
            "crash_points": self.points,
            "states": self.states,
            "recoveries_run": self.recoveries,
            "verdicts": self.verdicts,
            "confusion": self.confusion,
            "per_point": self.per_point,
            "checked": self.checked,
            "violations": [attrs.asdict(v) for v in self.violations],
            "seconds": round(self.seconds, 3),
            "differential": {
                "kills_compared": sum(c.matched for c in self.compared),
                "not_announced_by_dsh_sim": self.unmatched,
                "differences": [attrs.asdict(c) for c in self.compared if c.differences],
            },
        }


def record(install: Installation, program: RouteProgram, **plugins: Any) -> tuple[RouteRun, list[RecordedPoint], RouteRunner]:
    runner = RouteRunner(install, program, **plugins)
    points: list[RecordedPoint] = []
    seen: Counter[tuple[int, str, str]] = Counter()

    def on_point(point: str, details: dict[str, Any]) -> None:
        sim = runner.sim
        key = (sim.lifetime, point, str(details.get("call_id", "")))
        seen[key] += 1
        points.append(
            RecordedPoint(
                len(points),
                sim.lifetime,
                point,
                tuple(sorted((k, str(v)) for k, v in details.items())),
                seen[key],
                runner.current_step,
                sim.disk.image(),
                tuple(sim.world.ledger),
                tuple(sim.effects),
            )
        )

    runner.sim.on_point = on_point
    run = runner.run()
    return run, points, runner


def explore_route(
    install: Installation,
    program: RouteProgram,
    *,
    crash: str = "both",
    differential: bool = False,
    on_point: Callable[[int, int], None] | None = None,
    **plugins: Any,
) -> tuple[RouteExploreResult, list[RecordedPoint]]:
    """The route's recording crashed at every point, each state recovered and judged (and, with
    ``differential``, each kill compared with dsh-sim's recovery).  ``on_point(done, total)``
    after each point: progress, and where a campaign stops when asked (it raises)."""
    started = time.perf_counter()
    _run, points, runner = record(install, program, **plugins)
    runner.sim.on_point = None  # recoveries announce points too: not crash points of the recording
    runner.sim.active = [False] * len(runner.sim.rules)
    cfg = program.config
    violations: list[RouteViolationAt] = []
    checked: Counter[str] = Counter()
    verdict_counts: Counter[str] = Counter()
    per_point: Counter[str] = Counter()
    cache: dict[str, tuple[list[tuple[str, str, str | None]], dict[str, str], bytes]] = {}
    compared: list[StateComparison] = []
    confusion: dict[str, dict[str, int]] = {}
    states = 0
    host = None
    try:
        for done, point in enumerate(points, 1):
            for kind, cut in crash_states_of(point.image, crash):
                states += 1
                per_point[point.point] += 1
                disk = Disk.from_image(point.image)
                if cut is not None:
                    apply_power_cut(disk, cut)
                before = disk.read_path(runner.path)
                applied = tuple(sorted({e.call_id for e in point.ledger if e.applied}))
                # the whole disk, not only the log's bytes: whether its directory entry is durable
                # decides what a later power loss keeps
                key = hashlib.sha256(repr((disk.image(), applied)).encode()).hexdigest()
                found = cache.get(key)
                if found is None and before is None:
                    # nothing was persisted: nothing to recover; effects the world saw are unrecorded
                    run = RouteRun(program.scenario.name, (), (), (), point.ledger, (), b"", None, None, {}, "", cfg.compression, {})
                    found_violations, counts = judge(run, checkpoint_policy=False)
                    checked.update(counts)
                    found = ([(v.invariant, v.detail, v.finding) for v in found_violations], {}, b"")
                    cache[key] = found
                if found is None:
                    synced = found_synced(disk, runner.path)
                    kept = durable_events(disk, runner.path, cfg.compression)
                    if host is None:
                        host = runner.sim.spawn(install, runner.seed)
                    host.fs = SimFsServer(disk, 1000 + states, f"{runner.seed}:explore:{states}")
                    recovered = _recover(host, runner, states)
                    run = RouteRun(
                        program.scenario.name,
                        (),
                        (),
                        (Recovery(2, before or b"", disk.read_path(runner.path), recovered.get("error"), synced, kept),),
                        point.ledger,
                        (),
                        disk.read_path(runner.path) or b"",
                        recovered.get("durable"),
                        recovered.get("events"),
                        {},
                        "",
                        cfg.compression,
                        {},
                    )
                    found_violations, counts = judge(run, checkpoint_policy=False)
                    checked.update(counts)
                    final = decode(run.log, cfg.compression)
                    found = (
                        [(v.invariant, v.detail, v.finding) for v in found_violations],
                        verdicts(final) if isinstance(final, list) else {},
                        run.log,
                    )
                    cache[key] = found
                    if recovered.get("host_died"):
                        host.close()
                        host = None
                for invariant, detail, finding in found[0]:
                    violations.append(RouteViolationAt(invariant, point.index, point.point, kind, detail, finding))
                applied_calls = {e.call_id for e in point.ledger if e.applied}
                for call_id, verdict in found[1].items():
                    verdict_counts[verdict] += 1
                    truth = "applied" if call_id in applied_calls else "not applied"
                    confusion.setdefault(verdict, {}).setdefault(truth, 0)
                    confusion[verdict][truth] += 1
                if differential and kind == "kill":
                    details = dict(point.details)
                    comparison = compare_kill(
                        program,
                        point.point,
                        point.lifetime,
                        point.occurrence,
                        details.get("call_id") or None,
                        point.step,
                        found[2],
                        point.ledger,
                    )
                    if comparison is not None:
                        compared.append(comparison)
            if on_point is not None:
                on_point(done, len(points))
    finally:
        if host is not None:
            host.close()
    result = RouteExploreResult(
        program.scenario.name,
        len(points),
        states,
        len(cache),
        tuple(violations),
        dict(sorted(verdict_counts.items())),
        dict(sorted(per_point.items())),
        dict(sorted(checked.items())),
        time.perf_counter() - started,
        tuple(compared),
        confusion,
    )
    return result, points


def _recover(host: Any, runner: RouteRunner, serial: int) -> dict[str, Any]:
    """One recovery on the long-lived host: its stop's event count and durable bytes."""
    start = runner.start_args(resume=True, lifetime=1000 + serial, now=None)
    try:
        reply = host.request("recover", **start)
    except BridgeError as err:  # the host died recovering this state: a failed recovery, a new host next
        return {"error": str(err), "host_died": True}
    if not reply.ok:
        error = reply.error or {}
        return {"error": f"{error.get('name')}: {error.get('message')}"}
    disk: Disk = host.fs.disk
    after_power = Disk.from_image(disk.image())
    apply_power_cut(after_power, PowerCut())
    return {"events": int(reply.value["events"]), "durable": after_power.read_path(runner.path)}
