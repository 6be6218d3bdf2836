"""The route's decisions: an executable model of the tool pipeline, compared exactly (``route_decisions``).

Written from the spec (§5.2 per call, §5.3 cancellation, §6 approval, §4 barrier C), never
from the runtime's code.  For every top-level call whose ``tool/result`` a live process
appended, :func:`predict` walks the pipeline with the facts the simulator saw on its side of
the ports — the moments of the call (:class:`~dsh_sim.adapters.observed.ToolMark`: started,
the gate's and guard's answers, the question to the simulated user and its answer, the
dispatch, the body and what it returned or raised, post-execute), the turn's cancellation and
the faults — and the inputs the scenario gave (the tool, the deployment's approval policy and
tools, its gate and guard scripts).  It says what must have happened:

* whether pre-execute ran, whether the guard ran, whether the body ran (the ledger's side);
* the approval question, if any: its reason and its outcome (``approval/asked`` and
  ``approval/decided`` with one fresh id, between the call's ``tool/call`` and its result);
* the result, exactly: the text ``Error: <reason>`` of a refusal, a failure's error info, the
  body's own content (after post-execute), ``ABORTED`` or ``ABORTED_BEFORE_DISPATCH``.

The waterfall, as the spec orders it: a call started after its turn was cancelled, or whose
prepare finds the signal aborted, is ``ABORTED_BEFORE_DISPATCH`` before any hook runs; the
gate's answer (or the default: ask for a tool that needs approval, else allow) decides; a gate
that raises fails the call closed (a final error, no post-execute); ``ask`` goes through the
approval seam (no service: deny with the ask's reason; policy ``never``: rejected without
asking; a signal aborted: cancelled without asking; a failing or out-of-vocabulary answer:
unavailable; a cancellation while the user thinks: cancelled, the late answer discarded); only
``allowed-once`` allows; after an allow the guards run, and may only deny; a deny is an error
result that still passes post-execute; a cancellation now is ``ABORTED_BEFORE_DISPATCH``; the
barrier before the body may fail (a final error) or find the signal aborted; a body that throws
is a final error; a success returned after the cancellation is ``ABORTED``.  A graceful stop
tears the step down instead: a final result that had settled stands, any other is ``ABORTED``
when the body had started and ``ABORTED_BEFORE_DISPATCH`` when it had not; a stop may also come
after the call finished, so there either answer is right.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from dsh_sim.adapters.observed import ToolMark
from dsh_sim.adapters.policy import (
    GATE_ASKS,
    GATE_DENIAL,
    GATE_FAILURE,
    GUARD_DENIAL,
    GUARD_FAILURE,
    POST_FAILURE,
    POST_FEEDBACK,
    CallPolicy,
)
from dsh_sim.adapters.post_execute_note import NOTE_BLOCK
from dsh_sim.engine.history import FaultFired

NAME = "route_decisions"
APPROVAL_OUTCOMES = ("allowed-once", "rejected", "cancelled", "unavailable")
CHECKPOINT_C = "tools/execute"  # the durability step a barrier-C flush runs under
NOT_FAILURES = ("delay", "cancel", "crash", "corrupt", "source_append", "linked")  # faults that fail no operation


@attrs.frozen
class Result:
    """A tool result as the route must produce it; ``content is None``: any ``Error: …`` text
    (a failed barrier's error, whose words are the filesystem's)."""

    content: tuple[dict[str, Any], ...] | None
    is_error: bool
    info: tuple[str, str] | None = None  # (name, code) of the error info the log records
    meta: Any = None

    @classmethod
    def error(cls, message: str, info: tuple[str, str] | None = None) -> Result:
        return cls(({"type": "text", "text": f"Error: {message}"},), True, info)

    def describe(self) -> str:
        if self.content is None:
            return "a final error (any text)"
        text = " ".join(str(block.get("text")) for block in self.content)
        code = f" [{self.info[1]}]" if self.info else ""
        return f"{'an error' if self.is_error else 'a success'} {text!r}{code}"


BEFORE_DISPATCH = Result.error("tool call aborted before dispatch", ("AbortError", "ABORTED_BEFORE_DISPATCH"))
ABORTED = Result.error("tool call aborted", ("AbortError", "ABORTED"))
ANY_ERROR = Result(None, True)  # an error in the runtime's own words (a failed barrier's, a decision that is none)


@attrs.frozen
class Expected:
    """What the route must have done for one call.  ``results`` holds the acceptable results
    (more than one only around a graceful stop; none: the call has not finished); ``asked`` is
    the approval question's (reason, outcome), or ``None`` for none; ``pre``, ``gate``,
    ``guard``, ``body``, ``post``: whether each ran (``None``: either, around a stop);
    ``problems``: facts that contradict the route outright."""

    results: tuple[Result, ...]
    asked: tuple[str, str] | None = None
    pre: bool | None = True
    gate: bool | None = False
    guard: bool | None = False
    body: bool | None = False
    post: bool | None = False
    guard2: bool | None = False  # the second (audit) guard: only after the first let the call through
    why: str = ""  # the path through the pipeline, for the violation's evidence
    problems: tuple[str, ...] = ()


@attrs.frozen
class Deployment:
    """What the scenario's configuration says of the deployment (inputs, not facts)."""

    approval_service: bool
    approval_tools: tuple[str, ...]
    post_note: bool
    checkpoint: bool
    policies: Mapping[str, CallPolicy]
    unknown_tools: frozenset[str] = frozenset()  # names the deployment has no tool for


@attrs.define
class Facts:
    """One call's moments in one process, as indexes into the run's mark list (``None``: not seen)."""

    marks: Sequence[ToolMark]
    call: int
    cancel: int | None = None  # the turn's first cancellation by its signal (a cancel step or fault)
    stop: int | None = None  # the graceful stop that tore the turn down, if one did
    at: dict[str, int] = attrs.field(factory=dict)  # kind -> first index after the call started
    checkpoint_failed: int | None = None  # where a barrier-C flush of this process failed after the call started
    cancel_in_flush: bool = False  # the cancellation fired while a barrier-C flush was under way

    def seen(self, kind: str) -> bool:
        return kind in self.at

    def mark(self, kind: str) -> ToolMark:
        return self.marks[self.at[kind]]

    def cancelled_before(self, kind: str) -> bool:
        """The turn was cancelled (by its signal) before ``kind`` happened, or ``kind`` never
        happened after a cancellation."""
        if self.cancel is None:
            return False
        return self.at.get(kind, len(self.marks)) > self.cancel


def facts(marks: Sequence[ToolMark], faults: Sequence[FaultFired], lifetime: int, call_id: str, turn: Any) -> Facts | None:
    """The moments of ``call_id`` in process ``lifetime`` (the last start of it there)."""
    start = None
    for index in range(len(marks) - 1, -1, -1):
        mark = marks[index]
        if mark.kind == "call" and mark.lifetime == lifetime and mark.call_id == call_id:
            start = index
            break
    if start is None:
        return None
    found = Facts(marks, start)
    for index, mark in enumerate(marks):
        if mark.lifetime != lifetime:
            continue
        if mark.kind == "cancel":
            if mark.turn == turn and mark.how == "stop" and found.stop is None:
                found.stop = index
            elif mark.turn == turn and mark.how != "stop" and found.cancel is None:
                found.cancel = index
        elif index > start and mark.call_id == call_id:
            found.at.setdefault(mark.kind, index)
    failures = [
        f.marks
        for f in faults
        if f.lifetime == lifetime and f.durability_step == CHECKPOINT_C and f.marks > start and f.action not in NOT_FAILURES
    ]
    found.checkpoint_failed = min(failures) if failures else None
    found.cancel_in_flush = found.cancel is not None and any(
        f.lifetime == lifetime and f.action == "cancel" and f.durability_step == CHECKPOINT_C and f.marks == found.cancel for f in faults
    )
    return found


def predict(tool: str, policy_in_force: str | None, deployment: Deployment, found: Facts, call_id: str) -> Expected:
    """The route's answer for one call, from the deployment and what the simulator saw."""
    if (found.cancel is not None and found.cancel < found.call) or (found.stop is not None and found.stop < found.call):
        return Expected((BEFORE_DISPATCH,), pre=False, why="started after its turn was cancelled")
    route = _Route(tool, policy_in_force, deployment, found, call_id)
    expected = route.run()
    if found.stop is not None:
        return _torn_down(expected, found)
    return expected


class _Route:
    """One walk down the pipeline (spec §5.2), collecting what it passed on the way."""

    def __init__(self, tool: str, policy_in_force: str | None, deployment: Deployment, found: Facts, call_id: str) -> None:
        self.tool, self.policy_in_force, self.deployment, self.found = tool, policy_in_force, deployment, found
        self.script = deployment.policies.get(call_id)
        self.path: list[str] = []
        self.problems: list[str] = []
        self.asked: tuple[str, str] | None = None
        self.guard = False
        self.guard2 = False

    def done(self, results: tuple[Result, ...], *, pre: bool = True, body: bool = False, post: bool = False) -> Expected:
        gate = pre and self.script is not None
        return Expected(
            results, self.asked, pre, gate, self.guard, body, post, self.guard2, "; ".join(self.path), tuple(dict.fromkeys(self.problems))
        )

    def pending(self, *, gate: bool = False) -> Expected:
        """The call is still deciding at the stage just reached (what ran so far is judged)."""
        done = self.done(())
        return attrs.evolve(done, gate=None) if gate else done

    def run(self) -> Expected:
        found, tool, script = self.found, self.tool, self.script
        if found.cancelled_before("pre"):
            self.path.append("prepare found the signal aborted")
            return self.done((BEFORE_DISPATCH,), pre=False)
        default = "ask" if tool in self.deployment.approval_tools else "allow"
        decision, reason = default, (f'tool "{tool}" requires approval' if default == "ask" else None)
        if not found.seen("pre"):
            self.path.append("pre-execute has not run")
            return self.done((), pre=False)
        if script is None:
            self.path.append(f"pre-execute decided {default}")
        elif not found.seen("gate"):
            self.path.append("the gate has not answered")
            return self.pending(gate=True)
        else:
            self.path.append(f"the gate answered {script.gate}")
            if script.gate == "raise":
                return self.done((Result.error(GATE_FAILURE),))
            if script.gate == "invalid":  # no decision at all: denied (in the runtime's words), never allowed
                self.path.append("denied: the gate gave no decision")
                return self.done((self.post_execute(ANY_ERROR),), post=True)
            if script.gate in ("allow", "deny", "ask"):
                decision = script.gate
                reason = {"deny": GATE_DENIAL, "ask": GATE_ASKS, "allow": None}[script.gate]
        if decision == "ask":
            assert reason is not None
            decision, reason = self._ask(reason)
            if decision == "pending":
                return self.done(())
            if decision == "aborted":
                return self.done((BEFORE_DISPATCH,))
        if decision == "allow" and script is not None:
            self.guard = True
            if not found.seen("guard"):
                self.path.append("the guard has not answered")
                return self.pending()
            self.path.append(f"the guard answered {script.guard}")
            if script.guard == "raise":
                return self.done((Result.error(GUARD_FAILURE),))
            if script.guard == "deny":
                decision, reason = "deny", GUARD_DENIAL
            else:
                self.guard2 = True  # the first guard let it through: the next one is asked
        if decision == "deny":
            assert reason is not None
            self.path.append(f"denied: {reason}")
            return self.done((self.post_execute(Result.error(reason)),), post=True)
        return self._dispatch()

    def _ask(self, reason: str) -> tuple[str, str | None]:
        """The approval seam (spec §6): the decision it leads to, with the denial's reason."""
        tool, found = self.tool, self.found
        if not self.deployment.approval_service:
            self.path.append("no approval service: denied with the ask's reason")
            return "deny", reason
        outcome = self._outcome()
        if outcome is None:
            self.asked = (reason, "pending")
            return "pending", None
        self.asked = (reason, outcome)
        if outcome == "allowed-once":
            return "allow", None
        if outcome == "cancelled" and found.cancelled_before("answered"):
            # (a user who answered "cancelled" before any cancellation denies the call: its signal
            # had not aborted when the registry read the outcome)
            self.path.append("the question was cancelled with its call")
            return "aborted", None
        return "deny", {
            "rejected": f'the user rejected tool "{tool}"',
            "cancelled": f'approval for tool "{tool}" was cancelled',
            "unavailable": f'tool "{tool}" requires approval, but no approval channel is available',
        }[outcome]

    def _outcome(self) -> str | None:
        """The question's outcome (``None``: still unanswered)."""
        found = self.found
        asked = found.seen("asked")
        if found.cancelled_before("gate" if self.script is not None else "pre"):
            self.path.append("asked after the signal aborted: cancelled without asking")
            if asked:
                self.problems.append("the simulated user was asked although the call's signal had aborted before the question")
            return "cancelled"
        if self.policy_in_force == "never":
            self.path.append("policy never: rejected without asking")
            if asked:
                self.problems.append("the simulated user was asked under approval policy never (the service must reject by itself)")
            return "rejected"
        if not asked:
            self.problems.append("the route asks the simulated user (approval policy ask), but they were never asked")
            return "unavailable"
        answered = found.at.get("answered")
        cancel = found.cancel
        if cancel is not None and cancel > found.at["asked"] and (answered is None or answered > cancel):
            self.path.append("cancelled while the user thought")
            if answered is not None and found.mark("answered").how == "waited":
                self.problems.append(
                    "the simulated user went on thinking after the call was cancelled and answered: the question must end with its call"
                )
            return "cancelled"
        if answered is None:
            if found.stop is not None:
                self.path.append("torn down while the user thought")
                return "cancelled"
            self.path.append("the user has not answered")
            return None
        answer = found.mark("answered").answer
        self.path.append(f"the user answered {answer}")
        return answer if answer in APPROVAL_OUTCOMES else "unavailable"

    def _dispatch(self) -> Expected:
        """Allowed: the barrier before the body, the body, post-execute (spec §5.2 step 3-4, §4 C)."""
        found = self.found
        failed = found.checkpoint_failed
        # no such tool: no dispatch is announced; its final error is decided where the body would
        # be, right before the result is committed
        dispatched = "result" if self.tool in self.deployment.unknown_tools else "dispatch"
        # a cancellation that fires while the barrier's flush is under way does not stop it: a
        # flush that then rejects is the result (spec §4 C: the abort is read after the flush resolves)
        if found.cancelled_before(dispatched) and (failed is None or (failed > (found.cancel or 0) and not found.cancel_in_flush)):
            self.path.append("allowed, but the turn was cancelled before dispatch")
            return self.done((BEFORE_DISPATCH,))
        if failed is not None and not found.seen("dispatch"):
            self.path.append("the barrier before the body failed")
            return self.done((ANY_ERROR,))
        if self.tool in self.deployment.unknown_tools:
            self.path.append("no such tool: a final error")
            return self.done((Result.error(f'unknown tool "{self.tool}"'),))
        raised = found.at.get("raised")
        if not found.seen("body"):
            if raised is not None:  # the fault plan replaced the body (tool_failure at the dispatch)
                self.path.append("the body was replaced by an injected failure")
                return self.done((_raised(found.mark("raised")),))
            self.path.append("dispatched, the body has not run")
            return self.done((), body=True)
        self.path.append("the body ran")
        returned = found.at.get("returned")
        if raised is not None and (returned is None or raised < returned):
            self.path.append("it raised")
            mark = found.mark("raised")
            if mark.error is None:  # torn down by a cancellation (a graceful stop): see _torn_down
                return self.done((), body=True)
            return self.done((_raised(mark),), body=True)
        if returned is None:
            return self.done((), body=True)
        value = found.mark("returned").result
        result = Result(tuple(value.content), bool(value.is_error), _info(value), value.meta)
        if found.cancelled_before("returned") and not result.is_error:
            self.path.append("it returned a success after the turn was cancelled")
            return self.done((ABORTED,), body=True)
        return self.done((self.post_execute(result),), body=True, post=True)

    def post_execute(self, result: Result) -> Result:
        """The deployment's post-execute: its review (scripted) blocks or fails, else the note
        plugin appends its block to every result that passes."""
        script = self.script
        if script is not None and script.post == "block":
            self.path.append("post-execute blocked it")
            return Result.error(POST_FEEDBACK)
        if script is not None and script.post == "raise":
            self.path.append("post-execute failed")
            return Result.error(POST_FAILURE)
        return _post(self.deployment, result)


def _raised(mark: ToolMark) -> Result:
    message, name, code = mark.error or ("", None, None)
    return Result.error(message, (name, code) if name and code else None)


def _info(result: Any) -> tuple[str, str] | None:
    error = getattr(result, "error", None)
    name, code = getattr(error, "name", None), getattr(error, "code", None)
    return (name, code) if name is not None and code is not None else None


def _post(deployment: Deployment, result: Result) -> Result:
    """Post-execute of the deployment: the note plugin appends its block to every result."""
    if deployment.post_note and result.content is not None:
        return attrs.evolve(result, content=(*result.content, dict(NOTE_BLOCK)))
    return result


def _torn_down(normal: Expected, found: Facts) -> Expected:
    """A graceful stop tore the step down (spec §5.3): started calls without a committed result
    get ABORTED when their body had begun, else ABORTED_BEFORE_DISPATCH; but the stop may come
    after the call finished or at the very moment it settles, so its normal result stands too.
    What ran is then judged only where the route forbids it (a body the route never dispatches)."""
    torn = ABORTED if found.seen("body") else BEFORE_DISPATCH
    asked = normal.asked
    if asked is not None and asked[1] == "pending":
        asked = (asked[0], "cancelled")
    why = f"{normal.why}; or a graceful stop tore the step down first" if normal.why else "a graceful stop tore the step down"
    return Expected(
        (*normal.results, torn) if torn not in normal.results else normal.results,
        asked,
        None,
        None,
        None if normal.guard else False,
        None if normal.body else False,
        None,
        None if normal.guard2 else False,
        why,
        normal.problems,
    )


def logged_result(data: Mapping[str, Any]) -> Result:
    block = data["message"]["content"][0]
    info = data.get("error")
    pair = (str(info.get("name")), str(info.get("code"))) if isinstance(info, dict) else None
    return Result(tuple(block.get("content", ())), bool(block.get("isError")), pair, data.get("meta"))


def matches(logged: Result, expected: Result) -> bool:
    if expected.content is None:
        text = logged.content[0].get("text", "") if logged.content else ""
        return logged.is_error and str(text).startswith("Error: ")
    return logged == expected


def judge_call(
    expected: Expected, data: Mapping[str, Any], questions: Sequence[tuple[Mapping[str, Any], Mapping[str, Any] | None]], found: Facts
) -> list[str]:
    """How the log of one call (its result's data, its approval pairs) and the simulator's
    record depart from the prediction."""
    out = list(expected.problems)
    logged = logged_result(data)
    if not expected.results:
        out.append(f"the result is {logged.describe()}, but the call had not finished ({expected.why})")
    elif not any(matches(logged, e) for e in expected.results):
        wanted = " or ".join(e.describe() for e in expected.results)
        out.append(f"the result is {logged.describe()}, but the route gives {wanted}")
    if expected.asked is None and questions:
        out.append(f"an approval question was asked ({questions[0][0].get('reason')!r}), but the route asks none")
    if expected.asked is not None:
        reason, outcome = expected.asked
        if len(questions) != 1:
            out.append(f"{len(questions)} approval questions for the call, but the route asks one ({reason!r} → {outcome})")
        else:
            asked, decided = questions[0]
            if asked.get("reason") != reason:
                out.append(f"the approval question says {asked.get('reason')!r}, not {reason!r}")
            got = decided.get("outcome") if decided is not None else None
            if got != outcome:
                out.append(f"the approval was decided {got!r}, but the route decides {outcome!r}")
    for kind, what in (
        ("pre", "tools/pre-execute"),
        ("gate", "the policy gate"),
        ("guard", "the monotonic guard"),
        ("body", "the tool body"),
        ("post", "tools/post-execute"),
    ):
        wanted_run = getattr(expected, kind)
        if wanted_run is not None and found.seen(kind) != wanted_run:
            out.append(
                f"{what} ran, but the route does not reach it" if found.seen(kind) else f"the route reaches {what}, but it never ran"
            )
    return out


def approval_pairs(events: Iterable[Any], call_id: str) -> list[tuple[Mapping[str, Any], Mapping[str, Any] | None]]:
    """The approval questions asked for ``call_id`` in ``events`` and their decisions (by id)."""
    asked: dict[str, Mapping[str, Any]] = {}
    decided: dict[str, Mapping[str, Any]] = {}
    for event in events:
        if event.type == "approval/asked" and event.data.get("callId") == call_id:
            asked[event.data["id"]] = event.data
        elif event.type == "approval/decided":
            decided[event.data["id"]] = event.data
    return [(data, decided.get(ident)) for ident, data in asked.items()]
