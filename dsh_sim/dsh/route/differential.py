"""The route differential: one scenario on dsh-sim's runtime and on DSH's route, compared.

Two independent implementations of the same route, crashed at the same moment, must agree on
what matters to a user: the verdicts recovery gives (``TOOL_NOT_STARTED`` /
``TOOL_OUTCOME_UNKNOWN`` per call), the world's ledger (which service acted for which call,
with which key), the results the model sees (each call's result text and error flag), the
calls recorded, and how each turn ended.  The logs themselves differ by design (v3 against
v0, and DSH logs inbox splices, request headers and stream chunks dsh-sim does not), so they
are compared through this projection, not byte for byte.

A crash is comparable when it happens at a route point both runtimes have (``llm.request``,
``tools.call.appended``, ``world.deliver``…); a crash inside the file system happens at
different operations in the two writers and is judged on each side alone.  A difference that
is documented is a *finding* (:data:`~.findings.ROUTE_FINDINGS`) with its reason; any other
difference is unexplained.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from dsh_sim.drivers.replay import simulation_for
from dsh_sim.engine.faults import CrashSpec, FaultRule
from dsh_sim.engine.machine import Simulation
from dsh_sim.scenario.args import Step
from dsh_sim.scenario.model import Scenario
from dsh_sim.scenario.steps import StepNotApplicable, apply
from runtime.persistence.log_format import LogCorruption, decode_log

from .log import CODES, decode
from .points import POINTS
from .program import RouteProgram
from .run import RouteRun


@attrs.frozen
class Projection:
    """What a user of either runtime sees of one run."""

    verdicts: tuple[tuple[str, str], ...]
    ledger: tuple[tuple[str, str, str, str | None, bool], ...]
    results: tuple[tuple[str, bool, str], ...]  # (call id, is error, text) as the model sees them
    calls: tuple[tuple[str, str], ...]
    turn_ends: tuple[str, ...]


@attrs.frozen
class Difference:
    aspect: str
    ours: Any
    dsh: Any
    finding: str | None = None

    def line(self) -> str:
        tag = f" [{self.finding}]" if self.finding else ""
        return f"{self.aspect}{tag}: dsh-sim {self.ours!r} / DSH {self.dsh!r}"


@attrs.frozen
class RouteComparison:
    name: str
    comparable: bool  # every crash of the scenario is at a point both runtimes have
    differences: tuple[Difference, ...]
    ours: Projection | None
    dsh: Projection

    @property
    def unexplained(self) -> tuple[Difference, ...]:
        return tuple(d for d in self.differences if d.finding is None)


def _text(content: Any) -> str:
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def _project(events: Sequence[Any], ledger: Sequence[Any]) -> Projection:
    verdicts: dict[str, str] = {}
    results: list[tuple[str, bool, str]] = []
    calls: list[tuple[str, str]] = []
    ends: list[str] = []
    for e in events:
        data = e.data if isinstance(e.data, dict) else {}
        if e.type == "tool/call":
            calls.append((str(data.get("callId")), str(data.get("name"))))
        elif e.type == "tool/result":
            message = data.get("message", {})
            call_id = str(message.get("source", {}).get("callId"))
            error = data.get("error")
            if isinstance(error, dict) and error.get("code") in CODES:
                verdicts[call_id] = str(error["code"])
            for block in message.get("content", []):
                if isinstance(block, dict) and block.get("type") == "tool-result":
                    results.append((call_id, bool(block.get("isError")), _text(block.get("content"))))
        elif e.type == "turn/end":
            reason = data.get("reason", {})
            ends.append(str(reason.get("kind") if isinstance(reason, dict) else reason))
    return Projection(
        tuple(sorted(verdicts.items())),
        tuple((x.service, x.op, x.call_id, x.key, bool(x.applied)) for x in ledger),
        tuple(results),
        tuple(calls),
        tuple(ends),
    )


def run_ours(scenario: Scenario) -> tuple[Simulation, list[str]]:
    """dsh-sim's runtime on ``scenario``, ended as the route runner ends a run: a last boot
    that only recovers when the last process died, then a clean stop."""
    sim, _checker = simulation_for(scenario, trace=False, source="route-differential")
    outcomes: list[str] = []
    try:
        for step in scenario.steps:
            try:
                outcomes.append(apply(sim, step))
            except StepNotApplicable as err:
                outcomes.append(f"not-applicable: {err}")
                break
        if not sim.alive and sim.history.crashes and sim.disk.read_path(sim.config.log_path) is not None:
            try:
                outcomes.append("final:" + apply(sim, Step("boot")))
            except StepNotApplicable as err:
                outcomes.append(f"final:not-applicable: {err}")
    finally:
        sim.shutdown()
    return sim, outcomes


def ours_projection(sim: Simulation) -> Projection | str:
    data = sim.disk.read_path(sim.config.log_path)
    if data is None:
        return _project([], sim.world.ledger)
    try:
        log = decode_log(data, sim.config.compression)
    except LogCorruption as err:
        return f"dsh-sim's final log does not decode: {err}"
    return _project(log.events, sim.world.ledger)


def dsh_projection(run: RouteRun) -> Projection | str:
    events = decode(run.log, run.compression)
    if isinstance(events, str):
        return f"DSH's final log does not decode: {events}"
    return _project(events, run.ledger)


@attrs.frozen
class StateComparison:
    """One kill at a route point both runtimes have, recovered by each: how they differ, or
    that dsh-sim never made the same announcement (``matched`` False)."""

    point: str
    lifetime: int
    occurrence: int
    call_id: str | None
    matched: bool
    differences: tuple[Difference, ...] = ()

    @property
    def unexplained(self) -> tuple[Difference, ...]:
        return tuple(d for d in self.differences if d.finding is None)


_STEPS_WITH_A_TURN = frozenset({"prompt", "cancel", "flush", "advance"})


def compare_kill(
    program: RouteProgram,
    point: str,
    lifetime: int,
    occurrence: int,
    call_id: str | None,
    step: int,
    dsh_log: bytes,
    dsh_ledger: Sequence[Any],
) -> StateComparison | None:
    """The scenario on dsh-sim's runtime killed at the same announcement as DSH was (its steps
    up to the one that was running, one more crash rule), recovered, and compared with DSH's
    recovery of that kill.  ``None``: not a state both can express (no counterpart point, or a
    point announced while a process boots — the two recoveries announce different points)."""
    route_point = POINTS.get(point)
    steps = program.scenario.steps
    if route_point is None or route_point.ours is None or not route_point.comparable:
        return None
    if not 0 <= step < len(steps) or steps[step].op not in _STEPS_WITH_A_TURN:
        return None
    match = (("call_id", call_id),) if call_id else ()
    rule = FaultRule(route_point.ours, "crash", hit=occurrence, lifetime=lifetime, match=match, crash=CrashSpec("kill"))
    scenario = attrs.evolve(program.scenario, steps=steps[: step + 1], fault_plan=(*program.scenario.fault_plan, rule), trace_digest=None)
    sim, _outcomes = run_ours(scenario)
    first = next((c for c in sim.history.crashes if c.lifetime == lifetime), None)
    fired = first is not None and first.point == route_point.ours and (not call_id or first.details.get("call_id") == call_id)
    if not fired:
        return StateComparison(point, lifetime, occurrence, call_id, False)
    mine = ours_projection(sim)
    events = decode(dsh_log, program.config.compression)
    if isinstance(mine, str) or isinstance(events, str):
        return StateComparison(point, lifetime, occurrence, call_id, True, (Difference("decode", mine, events),))
    theirs = _project(events, dsh_ledger)
    differences = []
    for aspect in ("verdicts", "ledger", "results", "calls"):
        a, b = getattr(mine, aspect), getattr(theirs, aspect)
        if a != b:
            differences.append(Difference(aspect, a, b, explain(aspect, a, b, read_only_calls(program.scenario))))
    return StateComparison(point, lifetime, occurrence, call_id, True, tuple(differences))


def comparable(program: RouteProgram, run: RouteRun) -> bool:
    return all(c.point is None or POINTS[c.point].comparable for c in run.crashes) and all(
        POINTS[r.point].comparable for r in program.rules
    )


def compare(program: RouteProgram, run: RouteRun) -> RouteComparison:
    sim, _outcomes = run_ours(program.scenario)
    mine = ours_projection(sim)
    theirs = dsh_projection(run)
    if isinstance(theirs, str):
        return RouteComparison(run.name, False, (Difference("decode", None, theirs),), None, Projection((), (), (), (), ()))
    if isinstance(mine, str):
        return RouteComparison(run.name, False, (Difference("decode", mine, None),), None, theirs)
    differences: list[Difference] = []
    if comparable(program, run):
        for aspect in ("verdicts", "ledger", "results", "calls", "turn_ends"):
            a, b = getattr(mine, aspect), getattr(theirs, aspect)
            if a != b:
                differences.append(Difference(aspect, a, b, explain(aspect, a, b, read_only_calls(program.scenario))))
        return RouteComparison(run.name, True, tuple(differences), mine, theirs)
    return RouteComparison(run.name, False, (), mine, theirs)


def _effects(ledger: Sequence[tuple[str, str, str, str | None, bool]]) -> list[tuple[str, str, str, str | None, bool]]:
    return [entry for entry in ledger if entry[4]]


READ_ONLY_TOOLS = frozenset({"get_balance", "lookup_payment"})  # the concurrency-safe world tools


def read_only_calls(scenario: Scenario) -> frozenset[str]:
    """The ids of the scenario's calls to read-only, concurrency-safe tools."""
    return frozenset(
        call.id
        for step in scenario.steps
        if step.op == "prompt"
        for response in step.args.responses
        for call in response.tool_calls
        if call.name in READ_ONLY_TOOLS
    )


def _without(aspect: str, value: Any, ids: frozenset[str]) -> Any:
    if aspect == "ledger":
        return _effects(value)
    return tuple(item for item in value if item[0] not in ids)


def explain(aspect: str, ours: Any, dsh: Any, reads: frozenset[str] = frozenset()) -> str | None:
    """The documented finding a difference is an instance of, if any: ROUTE-1 when the two
    agree once the concurrency-safe reads (``reads``: their call ids) are set aside."""
    if aspect in ("ledger", "verdicts", "results", "calls") and _without(aspect, ours, reads) == _without(aspect, dsh, reads):
        return "ROUTE-1"
    return None
