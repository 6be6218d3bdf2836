"""``lossless_refused``: an append refuses exactly the data the spec refuses (§1.1).

Judged after each storage ``append`` step that carries an edge value of JSON
(:mod:`dsh_sim.engine.json_values`): a value the spec refuses must end the step with the
``TypeError`` naming "losslessly JSON-serializable" and leave nothing of it in the session; a
value it accepts must be appended (that it reads back exactly is what ``eventually_durable``
and the recovery judges hold it to).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh_sim.engine.json_values import EDGE_VALUES, REFUSAL_TEXT
from dsh_sim.evidence.invariants.base import Invariant, Judge, fail
from dsh_sim.evidence.invariants.moments import Step

if TYPE_CHECKING:
    from dsh_sim.engine.lifetime import Lifetime

NAME = "lossless_refused"


def check_edge_append(obs: Judge, life: Lifetime | None, value: str, outcome: str, error: BaseException | None) -> None:
    if life is None or life.session is None or life.dead or outcome.startswith("crashed"):
        return
    obs.count(NAME)
    edge = EDGE_VALUES[value]
    last = life.session.events[-1] if life.session.events else None
    data = last.data if last is not None else None
    kept = isinstance(data, dict) and "value" in data and repr(data["value"]) == repr(edge.make())
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
        check_edge_append(obs, current, step.args.value, step.outcome, current.step_error if current is not None else None)


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
