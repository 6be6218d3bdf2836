"""Invariants judged against an executable model written apart from the runtime
(:mod:`dsh_sim.evidence.oracles`): the reference model of recovery, the log grammar and the
world's ledger (the tool pipeline's models: :mod:`.pipeline`).  Each runs its model at the moment it concerns and reports what
it finds through :func:`fail`, so violations read like every other one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dsh_sim.evidence.invariants.base import Invariant, Judge, fail
from dsh_sim.evidence.oracles import agreement, reference
from dsh_sim.evidence.oracles.grammar import Grammar
from dsh_sim.evidence.oracles.grammar import problems as grammar_problems

if TYPE_CHECKING:
    from dsh_sim.engine.crash import CrashRecord
    from dsh_sim.engine.lifetime import Lifetime
    from dsh_sim.evidence.invariants.moments import Boot, Live, Shutdown

REFERENCE = "reference_model"
GRAMMAR = "log_grammar"
AGREEMENT = "world_agreement"


def report_differences(expected: reference.Expected, report: Any, agent: bool) -> list[str]:
    """What the recovery report tells its caller besides the events — where the torn tail
    starts, and each interrupted call's verdict — against the spec's reading of the same bytes."""
    out = []
    torn = getattr(report, "torn", None)
    start = torn.truncate_to if torn is not None else None
    if start != expected.torn_start:
        out.append(f"the recovery report's torn tail starts at {start}, the spec reader's at {expected.torn_start}")
    if agent and dict(report.verdicts) != expected.verdicts:
        out.append(f"the recovery report's verdicts {dict(report.verdicts)} are not the spec's {expected.verdicts}")
    return out


def check_reference(obs: Judge, life: Lifetime, crash: CrashRecord) -> None:
    """After the first boot that follows a crash: the recovery is exactly the reference model's."""
    from dsh_sim.adapters.simfs.disk import Disk

    sim = obs.sim
    compression = sim.config.compression
    if obs.history.seeded is not None and Disk.from_image(crash.image).read_path(sim.config.log_path) is None:
        return  # the log is still the historical generation: judged by migration_atomic
    obs.count(REFERENCE)
    data = Disk.from_image(crash.image).read_path(sim.config.log_path)
    expected = reference.expected_recovery(data, compression)
    if obs.corruptions:
        return  # bytes the harness damaged on purpose: corrupt_frame_refused judges the refusal
    for problem in reference.crash_history_problems(expected, crash.acked_bytes, compression, crash.in_memory):
        fail(obs, REFERENCE, problem, None, f"crash {crash.label} at {crash.point or 'quiescence'} ({crash.phase})")
    report = life.report
    stored = tuple(report.events) if report is not None else ()
    closers = tuple(getattr(report, "closers", ())) if report is not None else ()
    if sim.kind != "agent":
        expected = reference.Expected(expected.stored, (), expected.refused, expected.torn_start)
    if report is None and life.boot_error is None and expected.refused is None and expected.stored:
        fail(
            obs,
            REFERENCE,
            f"recovery started a new session, but the disk holds {len(expected.stored)} events",
            None,
            f"crash {crash.label}",
        )
        return
    for difference in reference.compare(expected, life.boot_error, stored, closers):
        fail(obs, REFERENCE, difference, None, f"crash {crash.label} at {crash.point or 'quiescence'} ({crash.phase})")
    if report is not None and expected.refused is None:
        for difference in report_differences(expected, report, sim.kind == "agent"):
            fail(obs, REFERENCE, difference, None, f"crash {crash.label} at {crash.point or 'quiescence'} ({crash.phase})")


def _history_length(obs: Judge) -> int:
    """How many events of the log a seeded historical log migrated to (0 without one)."""
    from dsh_sim.evidence.invariants.storage import SeededSource

    placed = obs.history.seeded
    if placed is None:
        return 0
    source = SeededSource.of(placed, obs.sim.config.compression)
    return len(source.events) if source.events is not None else 0


def _crash_tail(obs: Judge, boot: Boot) -> reference.Expected | None:
    """After a crash of an agent: what the reference model expects of the recovery, when it is
    exact and the recovery followed it — the turns before the last were judged when they were
    live; the last one was cut by the crash (its latest events never reached a live check), so it
    is judged with the closers (``None``: nothing to judge this way)."""
    from dsh_sim.adapters.simfs.disk import Disk

    crash, sim = boot.crash, obs.sim
    if crash is None or sim.kind != "agent" or obs.corruptions:
        return None
    data = Disk.from_image(crash.image).read_path(sim.config.log_path)
    if obs.history.seeded is not None and data is None:
        return None  # the log is still the historical generation: judged by migration_atomic
    expected = reference.expected_recovery(data, sim.config.compression)
    if expected.refused is not None:
        return None
    if boot.life.report is None and boot.life.boot_error is None and expected.stored:
        return None  # recovery started a new session over a log: reference_model says so
    return expected


def check_grammar_tail(obs: Judge, boot: Boot) -> None:
    """The last turn a crash cut, as repair closed it, is well formed."""
    expected = _crash_tail(obs, boot)
    if expected is None:
        return
    _, problems = reference.repaired_tail(expected, _history_length(obs))
    obs.count(GRAMMAR)
    for problem in problems:
        fail(obs, GRAMMAR, problem)


def check_agreement_tail(obs: Judge, boot: Boot) -> None:
    """The last turn a crash cut, as repair closed it, agrees with the world's ledger."""
    expected = _crash_tail(obs, boot)
    if expected is None:
        return
    obs.count(AGREEMENT)  # (what check_agreement judges with a fresh tracker, remembered)
    for item in reference.tail_disagreements(expected, obs.sim.world.ledger, obs.sim.config.workspace, _history_length(obs)):
        fail(obs, AGREEMENT, item.message, item.call_id)


def check_grammar(obs: Judge, events: Sequence[Any], *, closed: bool, what: str, grammar: Grammar | None = None) -> None:
    """Feed ``events`` to ``grammar`` (a fresh one by default); ``closed``: it must end between turns."""
    obs.count(GRAMMAR)
    for problem in grammar_problems(grammar if grammar is not None else Grammar(), events, closed=closed, what=what):
        fail(obs, GRAMMAR, problem)


def check_agreement(obs: Judge, events: Sequence[Any], tracker: agreement.Tracker | None = None) -> None:
    """Judge ``events`` (fed to ``tracker``, which remembers the log so far) against the ledger."""
    obs.count(AGREEMENT)
    tracker = tracker if tracker is not None else agreement.Tracker(workspace=obs.sim.config.workspace)
    for item in tracker.feed(events, obs.sim.world.ledger):
        fail(obs, AGREEMENT, item.message, item.call_id)


def recheck_refusals(obs: Judge, tracker: agreement.Tracker) -> None:
    """At the end: nothing the log refused reached a service later either."""
    obs.count(AGREEMENT)
    for item in tracker.recheck_refusals(obs.sim.world.ledger):
        fail(obs, AGREEMENT, item.message, item.call_id)


def check_seeded_repair(obs: Judge, life: Lifetime) -> None:
    """The first boot of a seeded (historical) log: what its repair appended is exactly the
    spec's closers for the log it migrated and recovered (§2).  No crash of ours precedes it, so
    the reference model (judged after our crashes) does not see it; the old runtime's crash is
    the history's own shape (an open stream, an open call, a step that ended without its
    results, a call no message announced)."""
    from dsh_sim.evidence.oracles import spec_repair

    report = life.report
    if report is None or life.boot_error is not None or not hasattr(report, "closers"):
        return
    obs.count(REFERENCE)
    stored = [event.to_record() for event in report.events]
    want = spec_repair.closers(stored)
    got = [event.to_record() for event in report.closers]
    if got != want:
        fail(
            obs,
            REFERENCE,
            f"the repair of the seeded history appended {[r['type'] for r in got]}, the spec's closers are {[r['type'] for r in want]}",
            None,
            f"first difference: {next((f'{g} != {w}' for g, w in zip(got, want) if g != w), 'in length')}",
        )


def _last_turn(events: Sequence[Any]) -> int:
    for event in reversed(events):
        if event.type == "turn/start":
            return int(event.data["turn"])
    return 0


def _seeded_repair(obs: Judge, boot: Boot) -> None:
    if boot.first and boot.crash is None and obs.history.seeded is not None and obs.sim.kind == "agent":
        check_seeded_repair(obs, boot.life)


def _grammar_live(obs: Judge, live: Live) -> None:
    if not live.fresh:
        return
    grammars: dict[int, Grammar] = obs.memory(GRAMMAR)
    grammar = grammars.get(live.life.index)
    if grammar is None:  # a resumed log is judged from its recovered (closed) end on
        grammar = grammars[live.life.index] = Grammar()
        grammar.count, grammar.last_turn = len(live.recovered), _last_turn(live.recovered)
    check_grammar(obs, live.fresh, closed=False, what="the live log", grammar=grammar)


def _tracker(obs: Judge, life: Lifetime) -> agreement.Tracker:
    trackers: dict[int, agreement.Tracker] = obs.memory(AGREEMENT)
    tracker = trackers.get(life.index)
    if tracker is None:
        tracker = trackers[life.index] = agreement.Tracker(workspace=obs.sim.config.workspace)
    return tracker


def _agreement_live(obs: Judge, live: Live) -> None:
    if live.fresh:
        check_agreement(obs, live.fresh, _tracker(obs, live.life))


def _agreement_end(obs: Judge, end: Shutdown) -> None:
    recheck_refusals(obs, _tracker(obs, end.life))


REFERENCE_MODEL = Invariant(
    REFERENCE,
    (
        "every recovery is exactly the reference model's: the events a spec reader recovers from the "
        "crash image (between everything acknowledged and everything written) and the spec's closers, "
        "event for event"
    ),
    checks={"boot": _seeded_repair, "recovery": lambda obs, boot: check_reference(obs, boot.life, boot.crash)},
)
LOG_GRAMMAR = Invariant(
    GRAMMAR,
    (
        "every log is well formed: seqs dense, turns contain steps contain calls and results, each opened"
        " turn and step closed in order, one result per call after its tool/call, in the model's order; a"
        " repaired log ends between turns"
    ),
    checks={"live": _grammar_live, "recovery": check_grammar_tail},
    memory=lambda obs: {},
)
WORLD_AGREEMENT = Invariant(
    AGREEMENT,
    (
        "the log and the world's ledger agree for every call: a success reached its service with its own "
        "arguments and key, applied its effect (or found the same effect under its key) and carries that "
        "response; a call the log says was not dispatched reached nothing"
    ),
    checks={"live": _agreement_live, "recovery": check_agreement_tail, "end": _agreement_end},
    memory=lambda obs: {},
)
