"""The checker: the one owner of every invariant call site, attached to a simulation.

It observes the kernel through :class:`~dsh_sim.engine.observer.Observer` hooks and runs each
invariant at the moment it concerns — live checks at the named point, recovery checks after
every boot, storage checks at shutdown, the second writer, a failed flush — counting every
check and keeping every violation.  It also turns each crash + recovery into a coverage case.
A driver attaches one per simulation (:meth:`Checker.attach`); the kernel never imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from dsh_sim.engine.observer import Observer
from dsh_sim.engine.points import POINTS, spec
from dsh_sim.evidence import invariants as inv
from dsh_sim.evidence.coverage import case_from_recovery
from dsh_sim.evidence.extra import recovery_judges
from dsh_sim.evidence.invariants import oracles, pace, residue
from dsh_sim.evidence.invariants.closed import check_closed_handle
from dsh_sim.evidence.invariants.errors import check_flush_reports, check_step_error
from dsh_sim.evidence.invariants.lease import MUTATIONS, check_foreign_files, check_lease
from dsh_sim.evidence.invariants.links import check_links_not_followed, refused_for_a_link
from dsh_sim.evidence.invariants.lossless import check_edge_append, owns_step_error
from dsh_sim.evidence.invariants.model_exchange import check_answers, check_requests
from dsh_sim.evidence.invariants.points import NAME as TRUTHFUL
from dsh_sim.evidence.invariants.points import check_announcement
from dsh_sim.evidence.invariants.route import check_route
from dsh_sim.evidence.invariants.window import WindowJudge
from dsh_sim.evidence.oracles import agreement
from dsh_sim.evidence.oracles.approval_policy import PolicyWatch
from dsh_sim.evidence.oracles.grammar import Grammar
from dsh_sim.evidence.oracles.schedule import Schedule, group_problems

if TYPE_CHECKING:
    from dsh_sim.adapters.model import RequestMark
    from dsh_sim.engine.crash import CrashRecord
    from dsh_sim.engine.hang import Hung
    from dsh_sim.engine.history import Corruption, FaultFired, History
    from dsh_sim.engine.lifetime import Lifetime
    from dsh_sim.engine.machine import Simulation
    from dsh_sim.engine.observer import ReaderView
    from runtime.session.events import Event


@attrs.define
class _Watch:
    grammar: Grammar
    tracker: agreement.Tracker
    fed: int  # events of the live log judged so far
    blocks: list[tuple[str, str, str]] = attrs.field(factory=list)  # the open step's tool calls (id, tool, arguments)
    policy: PolicyWatch | None = None  # the approval policy in force (None: no approval service)


def _last_turn(events: Any) -> int:
    for event in reversed(events):
        if event.type == "turn/start":
            return int(event.data["turn"])
    return 0


FOREIGN_STEPS = ("second_writer", "read_only")  # steps that run a process beside the primary


class Checker(Observer):
    def __init__(self, sim: Simulation, *, source: str = "fuzz", torn_class: str | None = None, keep_cases: bool = True) -> None:
        self.sim = sim
        self.keep_cases = keep_cases  # explore builds its cases after the continuation: none here
        self.source = source  # what produced the simulation, for coverage cases
        self.torn_class = torn_class  # explore: the torn-write class of the starting state
        self.violations: list[inv.Violation] = []
        self.checked: dict[str, int] = dict.fromkeys(inv.INVARIANTS, 0)
        self.recoveries: list[dict[str, Any]] = []
        self.verdict_counts: dict[tuple[str, bool], int] = {}
        self.recovered_from: list[CrashRecord] = []
        self.cases: list[dict[str, Any]] = []  # coverage cases (one per crash + recovery)
        self._live: dict[int, _Watch] = {}  # per lifetime: the live log's incremental judges
        self._faults_before_step = 0
        self._stray_at_boot: dict[int, set[str]] = {}
        self._stray_before_step: set[str] = set()  # (a failed boot is judged against what was there before it)
        self._paused_until = float("-inf")
        self._schedule = Schedule(max_parallel=sim.config.max_parallel_tool_calls)
        self._window = WindowJudge()
        self._requests_seen = 0  # model requests judged (model_exchange)
        self._answers_pending: list[RequestMark] = []  # requests whose answer is still streaming
        self._announced_messages: set[tuple[int, Any, Any]] = set()  # (process, turn, step) of each agent.assistant.appended

    @classmethod
    def attach(cls, sim: Simulation, **kw: Any) -> Checker:
        checker = cls(sim, **kw)
        checker._stray_before_step = residue.stray_names(checker)  # (explore starts from a crash image that may hold some)
        sim.observers.append(checker)
        return checker

    @classmethod
    def of(cls, sim: Simulation) -> Checker:
        """The checker attached to ``sim``."""
        for observer in sim.observers:
            if isinstance(observer, cls):
                return observer
        raise LookupError("no checker is attached to this simulation")

    # -- the run's facts, as the invariants read them ----------------------------------------

    @property
    def history(self) -> History:
        return self.sim.history

    @property
    def acked(self) -> dict[int, Event]:
        return self.sim.history.acked

    @property
    def acked_bytes(self) -> bytes:
        return self.sim.history.acked_bytes

    @property
    def faults(self) -> list[FaultFired]:
        return self.sim.history.faults

    @property
    def corruptions(self) -> list[Corruption]:
        return self.sim.history.corruptions

    @property
    def crashes(self) -> list[CrashRecord]:
        """Every crash so far, the one a simulation started after (explore's) first."""
        prior = self.sim.history.prior_crash
        return ([prior] if prior is not None else []) + self.sim.history.crashes

    @property
    def paused_until(self) -> float:
        """When the primary process last stood still while another one ran (a second writer,
        a reader beside it): the simulator steps one process at a time, so virtual time a
        foreign step spends passes the primary by — its window timer cannot fire meanwhile."""
        return self._paused_until

    def report(self, violation: inv.Violation) -> None:
        self.violations.append(violation)

    def count(self, name: str) -> None:
        self.checked[name] += 1

    # -- hooks -------------------------------------------------------------------------------

    def on_acknowledged(self, life: Lifetime, batch: tuple[Event, ...], before: bytes, after: bytes | None) -> None:
        oracles.check_acknowledged_bytes(self, batch, before, after)
        oracles.check_acknowledgement_durable(self, after)

    def on_point(self, life: Lifetime, name: str, details: dict[str, Any]) -> None:
        if name in MUTATIONS:
            check_lease(self, life, name, details)
        point = POINTS.get(name)
        if point is None or point.layer != "runtime":
            # every judge below concerns a runtime announcement; the simulator's own ports
            # announce most points (fs operations), so those return here, unjudged as before
            if point is None:
                spec(name)  # (refuses an undeclared name, as check_announcement does)
            return
        check_announcement(self, life, name, details)
        if name == "agent.assistant.appended":
            self._announced_messages.add((life.index, details.get("turn"), details.get("step")))
        if name == "persist.batch.durable":
            inv.check_single_writer(self, life)
            oracles.check_announcement(self, details)
        elif name == "tools.execute.body" and not details.get("nested"):
            inv.check_body_after_durable_call(self, life, details)
            inv.check_approval_gate(self, life, details)
            self._relies_on_durable(life, "tool/call", details.get("call_id"), "a tool body started")
        elif name == "llm.request":
            inv.check_request_after_durable_header(self, life)
            self._relies_on_durable(life, "request/header", None, "a model request was sent")

    def _relies_on_durable(self, life: Lifetime, kind: str, call_id: Any, what: str) -> None:
        """With the checkpoint policy, the barrier before ``what`` made the event it protects
        durable: the newest ``kind`` (of ``call_id``) must be on the medium now."""
        if not self.sim.config.checkpoint_policy or life.agent is None:
            return
        events = life.agent.session.events
        for index in range(len(events) - 1, -1, -1):
            event = events[index]
            if event.type == kind and (call_id is None or event.data.get("callId") == call_id):
                oracles.check_event_durable(self, events, index, what)
                return

    def before_boot(self, last_crash: CrashRecord | None) -> None:
        if last_crash is not None:
            inv.check_fidelity(self, last_crash)

    def on_second_writer(self, life: Lifetime) -> None:
        inv.check_second_writer(self, life)
        if life.crash is None:
            residue.check_residue(self, life, faults_in_life=True, stray_at_boot=set())  # (the directory belongs to the primary)

    def on_boot(self, life: Lifetime) -> None:
        """Post-recovery invariants, after every boot (the coverage case after a crash)."""
        self._stray_at_boot[life.index] = residue.stray_names(self)
        if life.boot_error is not None and life.crash is None:  # the process exited: what it opened is closed
            faulted = residue.cleanup_faulted(self, life)
            residue.check_residue(self, life, faults_in_life=faulted, stray_at_boot=self._stray_before_step)
        previous = [other for other in self.sim.lifetimes if other.index < life.index]
        crash = next((other.crash for other in reversed(previous) if other.crash is not None), self.history.prior_crash)
        if not previous and crash is None and self.history.seeded is not None and self.sim.kind == "agent":
            oracles.check_seeded_repair(self, life)
        inv.check_recovery(self, life, crash)
        inv.check_idempotent_keys(self)
        check_links_not_followed(self)  # (explore's recovery runs take no steps)
        if crash is not None and crash not in self.recovered_from and inv.io_fault_refused(self, life):
            # a boot an injected fault failed may have written before it gave up (a repair append
            # whose rollback the cancellation stopped): the crash image is no longer what the next
            # boot reads, so the reference model has nothing exact to say about this crash
            self.recovered_from.append(crash)
        if refused_for_a_link(self, life.boot_error):
            return  # the boot met a planted link: the recovery is judged when one gets past it (remove_links)
        if crash is not None and crash not in self.recovered_from:
            if life.crash is None:  # (a boot that crashed itself is judged at the next boot)
                oracles.check_reference(self, life, crash)
                for judge in recovery_judges():  # e.g. --against dsh: the real DSH reads the same crash image
                    judge(self, life, crash)
            self.recovered_from.append(crash)
            if self.keep_cases:
                self.cases.append(
                    case_from_recovery(self.sim, [v.invariant for v in self.violations], crash, life, self.source, self.torn_class)
                )

    def on_hang(self, life: Lifetime, hang: Hung) -> None:
        inv.fail(self, inv.NO_HANG, str(hang), None, f"process {life.index}: {hang.kind} after {hang.batches} scheduler batches")

    def on_flush_failed(self, life: Lifetime, error: BaseException) -> None:
        inv.check_failed_append(self, life, error)

    def on_reader(self, life: Lifetime, view: ReaderView) -> None:
        oracles.check_reader(self, view)

    def on_reader_failed(self, life: Lifetime, error: BaseException) -> None:
        quiet = len(self.history.faults) == self._faults_before_step
        oracles.check_reader_refused(self, error, quiet=quiet)

    def on_step(self, op: str, outcome: str, args: Any = None) -> None:
        self.count(inv.NO_HANG)  # the step's command handed control back, or on_hang reported it
        if self.sim.kind == "agent":
            self._judge_requests()
        self._stray_before_step = residue.stray_names(self)
        inv.check_idempotent_keys(self)  # the ledger can go wrong without any crash
        check_foreign_files(self)
        current = self.sim.current
        if owns_step_error(op, args):
            check_edge_append(self, current, args.value, outcome, current.step_error if current is not None else None)
        else:
            check_step_error(self, op, outcome, current.step_error if current is not None else None)
        check_links_not_followed(self)
        quiet = len(self.history.faults) == self._faults_before_step and not outcome.startswith("crashed")
        check_flush_reports(self, op, outcome, self.history.faults[self._faults_before_step :])
        self._faults_before_step = len(self.history.faults)
        if op in FOREIGN_STEPS:
            self._paused_until = self.sim.now()
        life = self.sim.primary
        if life is not None and not life.dead and life.session is not None:
            if quiet and op == "prompt" and self.sim.kind == "agent":
                pace.check_progress(self, life, outcome, args)
            pace.check_timely(self, life)
        self._window.judge(self, life if life is not None and not life.dead and life.session is not None else None)
        if op == "flush" and outcome == "ok" and life is not None and life.session is not None and not life.dead:
            events = life.session.events
            if events:
                oracles.check_event_durable(self, events, len(events) - 1, "a flush barrier returned")
            elif not self.corruptions and oracles.durable_log(self) is None:
                self.count(oracles.DURABLE)
                inv.fail(
                    self,
                    oracles.DURABLE,
                    "a flush of an empty session returned, but no log is on the medium (spec §4.2: a header-only file)",
                )
        if life is not None and not life.dead and self.sim.kind == "agent":  # (a dead process's memory holds its unwinding)
            self._judge_live(life)

    def _judge_requests(self) -> None:
        """Each model request as it was sent, and its answer once its step has ended."""
        seen = self._requests_seen
        self._requests_seen = check_requests(self, seen)
        self._answers_pending = check_answers(self, self._answers_pending + self.history.model_requests[seen : self._requests_seen])

    def _judge_live(self, life: Lifetime) -> None:
        """Feed what the live log gained since the last step to its grammar and agreement."""
        oracles.check_schedule(self, self._schedule)
        if life.session is None:
            return
        watch = self._live.get(life.index)
        if watch is None:
            report = life.report
            recovered = (*report.events, *getattr(report, "closers", ())) if report is not None else ()
            grammar = Grammar()  # a resumed log is judged from its recovered (closed) end on
            grammar.count, grammar.last_turn = len(recovered), _last_turn(recovered)
            tracker = agreement.Tracker(workspace=self.sim.config.workspace)
            watch = self._live[life.index] = _Watch(grammar, tracker, len(recovered))
            default = self.sim.config.approval_policy
            watch.policy = PolicyWatch.after(recovered, default) if default is not None else None
        events = life.session.events
        fresh = tuple(events[watch.fed :])
        watch.fed = len(events)
        if fresh:
            oracles.check_grammar(self, fresh, closed=False, what="the live log", grammar=watch.grammar)
            oracles.check_agreement(self, fresh, watch.tracker)
            oracles.check_cancellation(self, fresh, life.index)
            oracles.check_result_shape(self, fresh, life.index)
            oracles.check_post_execute(self, fresh, life.index)
            check_route(self, life, fresh)
            self._judge_message_announcements(life, fresh)
            if watch.policy is not None:
                oracles.check_approval_policy(self, fresh, watch.policy)
            self._judge_groups(life, watch, fresh)

    def _judge_message_announcements(self, life: Lifetime, fresh: Any) -> None:
        """Every assistant message a live process appended was announced (agent.assistant.appended,
        moment 1 of a call: where faults and crashes aimed at it strike)."""
        for event in fresh:
            if event.type == "assistant/message":
                self.count(TRUTHFUL)
                turn, step = event.data.get("turn"), event.data.get("step")
                if (life.index, turn, step) not in self._announced_messages:
                    inv.fail(
                        self,
                        TRUTHFUL,
                        f"assistant/message {event.seq} (turn {turn} step {step}) was appended, but agent.assistant.appended was never announced",
                    )

    def _judge_groups(self, life: Lifetime, watch: _Watch, fresh: Any) -> None:
        """At each step's end: its parallel siblings started together (when nothing else could
        hold a start back — no perturbation, no delay at a call's start, no cancellation)."""
        held = self.sim.config.perturb or any(f.point == "tools.call.appended" and f.lifetime == life.index for f in self.faults)
        for event in fresh:
            if event.type == "assistant/message":
                content = event.data["message"]["content"]
                watch.blocks = [(b["id"], b["name"], b.get("arguments", "")) for b in content if b.get("type") == "tool-call"]
            elif event.type == "step/end" and watch.blocks:
                marks = self.history.tool_marks
                cancelled = any(m.kind == "cancel" and m.lifetime == life.index and m.turn == event.data.get("turn") for m in marks)
                if not held and not cancelled:
                    self.count(oracles.SCHEDULE)
                    limit = self.sim.config.max_parallel_tool_calls
                    for problem in group_problems(watch.blocks, marks, life.index, max_parallel=limit):
                        inv.fail(self, oracles.SCHEDULE, problem.message, problem.call_id)
                watch.blocks = []

    def on_shutdown(self, life: Lifetime, faults_during: bool) -> None:
        check_links_not_followed(self)  # (the final drain is a write too)
        if self.sim.kind == "agent":
            self._judge_requests()
        self._window.judge(self, None)
        if life is not self.sim.primary:
            return
        if life.crash is None:
            erred = life.boot_error is not None or life.exit_error is not None  # (descriptors only)
            faulted = erred or residue.cleanup_faulted(self, life)
            residue.check_residue(self, life, faults_in_life=faulted, stray_at_boot=self._stray_at_boot.get(life.index, set()))
            check_closed_handle(self, life)
        inv.check_eventually_durable(self, life, faults_during)
        if life.session is not None:
            inv.check_fail_closed(self, life.session.events)
            if self.sim.kind == "agent":
                self._judge_live(life)
                oracles.recheck_refusals(self, self._live[life.index].tracker)
