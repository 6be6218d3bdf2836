"""``errors_documented``: what the runtime raises to its caller is one of its documented errors.

A refusal is part of the contract — the spec's typed persistence errors (``Session*Error``,
an append whose rollback failed too) and the operating system's ``OSError`` that an injected
fault passes through.  Anything else reaching a caller (a ``TypeError``, ``KeyError``,
``AttributeError``, an assertion) is a bug in the runtime, whatever the invariants about the
log say: an operation that should have worked crashed instead.  No named property lists these
bugs one by one; this check closes the whole class.
"""

from __future__ import annotations

import builtins
import functools
import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING

from dsh_sim.evidence.invariants.base import Invariant, Judge, fail
from dsh_sim.evidence.invariants.moments import Step
from runtime.persistence import errors as persistence_errors
from runtime.persistence.context import EXPLICIT_FLUSH

if TYPE_CHECKING:
    from dsh_sim.engine.history import FaultFired

NAME = "errors_documented"


@functools.cache
def documented() -> frozenset[str]:
    """Names of the exception types the runtime may raise to a caller."""
    names = {"AppendRollbackError", "OpenCancelled"}  # (OpenCancelled: the application abandoned its open, not the runtime)
    names |= {
        cls.__name__
        for _, cls in inspect.getmembers(persistence_errors, inspect.isclass)
        if issubclass(cls, persistence_errors.SessionPersistenceError)
    }
    names |= {cls.__name__ for cls in vars(builtins).values() if isinstance(cls, type) and issubclass(cls, OSError)}
    return frozenset(names)


def check_step_error(obs: Judge, op: str, outcome: str, error: BaseException | None = None) -> None:
    """After every step: an ``error:`` or ``refused:`` outcome names a documented error, and an
    operating-system error in it carries the errno of a fault injected into this process."""
    kind, _, name = outcome.partition(":")
    if kind not in ("error", "refused"):
        return
    obs.count(NAME)
    if name not in documented():
        fail(obs, NAME, f"step {op} ended with {name}, which the runtime does not document: a bug, not a refusal", None, outcome)
        return
    injected = injected_errnos(obs)
    for err in _os_errors(error):
        if err.errno not in injected:
            fail(
                obs,
                NAME,
                f"step {op} ended with {type(err).__name__} errno {err.errno} ({err.strerror}), which no injected fault explains: "
                "the simulated disk fails only where a fault says so, so the runtime made a call that cannot succeed",
                None,
                outcome,
            )
            return


def check_flush_reports(obs: Judge, op: str, outcome: str, faults: Sequence[FaultFired]) -> None:
    """A storage ``flush`` whose own write failed (an injected error inside its explicit-flush
    sequence, other than a removal the runtime may let fail) raises it and keeps the events
    queued (spec §10.2); returning as if durable hides the failure from its caller."""
    if op != "flush" or outcome != "ok" or obs.sim.kind == "agent":
        return
    own = [f for f in faults if f.action in ("error", "fsync_fail") and f.durability_step == EXPLICIT_FLUSH and f.point != "fs.unlink"]
    if own:
        obs.count(NAME)
        fail(obs, NAME, f"a flush returned success although its own write failed ({own[0].action} at {own[0].point})")


def injected_errnos(obs: Judge) -> set[int]:
    """The errnos of the filesystem faults fired so far (an error passes through later steps too:
    a failed rollback's bytes are healed by the next append)."""
    from dsh_sim.engine.vocabulary import ERRNOS

    rules = obs.sim.plan.rules
    return {ERRNOS[rules[f.rule].errno] for f in obs.faults if f.action in ("error", "fsync_fail")}


def _os_errors(error: BaseException | None) -> list[OSError]:
    """The operating-system errors in ``error`` (an append whose rollback failed holds two)."""
    if isinstance(error, BaseExceptionGroup):
        return [inner for part in error.exceptions for inner in _os_errors(part)]
    return [error] if isinstance(error, OSError) else []


def _step(obs: Judge, step: Step) -> None:
    from dsh_sim.evidence.invariants.lossless import owns_step_error

    if not owns_step_error(step.op, step.args):  # (an edge value's refusal is lossless_refused's)
        check_step_error(obs, step.op, step.outcome, step.current.step_error if step.current is not None else None)
    check_flush_reports(obs, step.op, step.outcome, step.faults)


ERRORS_DOCUMENTED = Invariant(
    NAME,
    (
        "what the runtime raises to its caller is one of its documented errors (the spec's typed "
        "persistence errors, an append whose rollback failed, an OSError an I/O fault passes through, "
        "with that fault's errno), never a TypeError, KeyError or other programming error; a storage "
        "flush whose own write failed raises"
    ),
    checks={"step": _step},
)
