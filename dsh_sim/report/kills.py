"""The kill matrix as the report shows it: one column per method, fastest kill, medians.

Rows come from :meth:`dsh_sim.drivers.selftest.KillResult.row`: the fastest kill (``method``,
``time_to_kill``, ``invariant``, ``scenario``), the shrunk fuzz scenario's size
(``scenario_steps``) and, per method, ``by_method[name] = {killed, seconds, invariant,
example, examples, scenario_steps}``.  Rows written before ``by_method`` existed still
render: they just have no per-method columns.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence

from dsh_sim.evidence.records import KillRow, MethodResult

# The self-test's attack methods, in the order it runs them; unknown methods follow, sorted.
METHODS: tuple[str, ...] = ("corpus", "explore", "fuzz")


def methods(kills: Iterable[KillRow]) -> list[str]:
    """Methods present in any row's ``by_method``: known ones in order, then unknown, sorted."""
    present = {m for k in kills for m in (k.by_method or {})}
    return [m for m in METHODS if m in present] + sorted(present - set(METHODS))


def method_result(kill: KillRow, method: str) -> MethodResult | None:
    """What one method did against one mutant; ``None`` when it was not run."""
    return (kill.by_method or {}).get(method)


def method_title(method: str, result: MethodResult) -> str:
    """Tooltip: what the method did, with the count of examples it needed."""
    examples = result.examples
    unit = {"corpus": "scenario(s) replayed", "explore": "crash state(s) explored", "fuzz": "fuzz example(s)"}.get(method, "example(s)")
    verb = "killed" if result.killed else "missed"
    text = f"{method}: {verb} in {float(result.seconds or 0):.3f} s"
    if examples is not None:
        text += f" after {examples} {unit}"
    if result.invariant:
        text += f"; invariant {result.invariant}"
    if result.example:
        text += f"; scenario {result.example}"
    return text


def median_time_to_kill(kills: Iterable[KillRow]) -> float | None:
    """Median of the fastest time to kill over the killed mutants (survivors excluded)."""
    times = [float(k.time_to_kill) for k in kills if k.killed and isinstance(k.time_to_kill, (int, float))]
    return round(statistics.median(times), 3) if times else None


def median_by_method(kills: Sequence[KillRow]) -> dict[str, float]:
    """Per method, the median time it took over the mutants it killed."""
    out: dict[str, float] = {}
    for method in methods(kills):
        times = [float(r.seconds or 0) for k in kills if (r := method_result(k, method)) is not None and r.killed]
        if times:
            out[method] = round(statistics.median(times), 3)
    return out


def survivors(kills: Iterable[KillRow]) -> list[str]:
    return [k.mutant for k in kills if not k.killed]
