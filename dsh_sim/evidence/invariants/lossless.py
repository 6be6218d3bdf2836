"""``lossless_refused``: an append refuses exactly the data the spec refuses (§1.1).

Judged after each storage ``append`` step that carries an edge value of JSON
(:mod:`dsh_sim.engine.json_values`), at either seam the spec names: ``Session.append``, or a
write handle given an event the caller built (``via="handle"``, a second session of the same
process).  A value the spec refuses must end the step with the ``TypeError`` naming "losslessly
JSON-serializable" and leave nothing of it stored; a value it accepts must be appended — and
read back exactly (at the session seam ``eventually_durable`` and the recovery judges hold it to
that; at the handle seam this judge, from what a read handle reads).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh_sim.engine.json_values import EDGE_VALUES, REFUSAL_TEXT
from dsh_sim.evidence.invariants.base import Invariant, Judge, fail
from dsh_sim.evidence.invariants.moments import Step

if TYPE_CHECKING:
    from dsh_sim.engine.lifetime import Lifetime

NAME = "lossless_refused"


def check_edge_append(
    obs: Judge, life: Lifetime | None, value: str, outcome: str, error: BaseException | None, via: str = "session"
) -> None:
    if life is None or life.session is None or life.dead or outcome.startswith("crashed"):
        return
    obs.count(NAME)
    edge = EDGE_VALUES[value]
    events = life.session.events if via == "session" else (life.direct_read or ())
    last = events[-1] if events else None
    data = last.data if last is not None else None
    kept = isinstance(data, dict) and "value" in data and repr(data["value"]) == repr(edge.make())
    if via == "handle" and not edge.refused and outcome == "ok" and not kept:
        fail(obs, NAME, f"an append of {value} at the write handle was accepted, but a read handle reads it back changed: {data!r}")
    if edge.refused:
        if outcome != "error:TypeError" or REFUSAL_TEXT not in str(error):
            fail(
                obs,
                NAME,
                f"an append of {value} ({edge.why}) ended {outcome!r}: the spec refuses it with a TypeError naming {REFUSAL_TEXT!r}",
            )
        elif kept:
            fail(obs, NAME, f"an append of {value} was refused, but the session holds the event anyway (seq {last.seq if last else '?'})")
    elif outcome != "ok":
        fail(obs, NAME, f"an append of {value} ({edge.why}), which the spec accepts, ended {outcome!r}")


def owns_step_error(op: str, args: object) -> bool:
    """Whether this check, not ``errors_documented``, judges the step's error."""
    return op == "append" and getattr(args, "value", None) is not None


def _step(obs: Judge, step: Step) -> None:
    if owns_step_error(step.op, step.args):
        current = step.current
        via = getattr(step.args, "via", "session")
        if via == "handle" and not step.quiet:
            return  # the handle seam does its own I/O: a fault there says nothing of what it would accept
        error = current.step_error if current is not None else None
        check_edge_append(obs, current, step.args.value, step.outcome, error, via)


LOSSLESS_REFUSED = Invariant(
    NAME,
    (
        "an append refuses exactly the data the spec refuses as not losslessly JSON-serializable (-0, "
        "NaN/Infinity, unsafe integers, a surrogate pair held as two code points, non-string keys, tuples, "
        "sets, cycles) with a TypeError naming it and nothing stored, and appends the rest (lone surrogates "
        "included)"
    ),
    checks={"step": _step},
)
