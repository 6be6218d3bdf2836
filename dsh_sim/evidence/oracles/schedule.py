"""The tool scheduler's limits, as the tools saw them run (spec §5.1, §8.9).

* At most ``maxParallelToolCalls`` tool bodies of one process run at once.
* An exclusive call (a tool that is not concurrency-safe) is a barrier: it starts only when
  no other call's body runs, and no other call starts or runs from its start until its result
  is in the log — also when it has no body to run (a call of a tool that does not exist, a
  refused call).

The facts are the simulator's (:class:`~dsh_sim.adapters.observed.ToolMark`): when each call
started (its ``tool/call``, with its arguments), when its body began and ended.  Whether a call
is concurrency-safe is its tool's own answer for its arguments, read through the spec's rule
(:func:`runs_alone`), never the runtime's classification.  Nested calls run inside their
parent's body and are not counted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from dsh_sim.adapters.observed import ToolMark
from dsh_sim.adapters.world_tools import declared_concurrency_safe

Classifier = Callable[[str, Any], Any]  # a tool's own answer: (tool, parsed arguments) -> exactly True when safe


def runs_alone(tool: str, arguments: str | None, says: Classifier = declared_concurrency_safe) -> bool:
    """A call runs alone unless its tool says exactly ``True`` for its arguments (spec §5.1):
    they are parsed as a call's arguments are (empty text is ``{}``, text that is not JSON stays
    text), and a tool whose answer raises has said no."""
    text = arguments or ""
    try:
        parsed: Any = json.loads(text) if text else {}
    except ValueError:
        parsed = text
    try:
        return says(tool, parsed) is not True
    except Exception:
        return True


@attrs.frozen
class Problem:
    call_id: str
    message: str


@attrs.define
class _Process:
    tools: dict[str, str] = attrs.field(factory=dict)  # top-level call id -> tool
    alone: dict[str, bool] = attrs.field(factory=dict)  # top-level call id -> it runs alone (exclusive)
    running: dict[str, str] = attrs.field(factory=dict)  # bodies in flight, in start order


class Schedule:
    """Judges the marks incrementally: :meth:`feed` the run's mark list as it grows."""

    def __init__(self, *, max_parallel: int, says: Classifier = declared_concurrency_safe) -> None:
        self.max_parallel = max_parallel
        self.says = says
        self._seen = 0
        self._processes: dict[int, _Process] = {}

    def feed(self, marks: Sequence[ToolMark]) -> list[Problem]:
        out: list[Problem] = []
        for mark in marks[self._seen :]:
            out.extend(self._one(mark))
        self._seen = len(marks)
        return out

    def _one(self, mark: ToolMark) -> list[Problem]:
        proc = self._processes.setdefault(mark.lifetime, _Process())
        call = mark.call_id
        if call is None:
            return []
        if mark.kind == "call":
            proc.tools[call] = str(mark.tool)
            proc.alone[call] = runs_alone(str(mark.tool), mark.arguments, self.says)
            out = self._barrier(proc, call, "started")
            if proc.alone[call]:
                proc.running[call] = proc.tools[call]  # a barrier from its start to its result
            return out
        if call not in proc.tools:
            return []  # a nested call: part of its parent's body
        if mark.kind == "result":
            proc.running.pop(call, None)
            return []
        if mark.kind == "body":
            if proc.alone[call]:
                return []  # (it holds the barrier since it started)
            out = self._barrier(proc, call, "ran its body")
            proc.running[call] = proc.tools[call]
            if len(proc.running) > self.max_parallel:
                out.append(
                    Problem(
                        call,
                        f"{len(proc.running)} tool bodies run at once ({sorted(proc.running)}), over maxParallelToolCalls {self.max_parallel}",
                    )
                )
            return out
        if mark.kind in ("returned", "raised") and not proc.alone[call]:
            proc.running.pop(call, None)
        return []

    def _barrier(self, proc: _Process, call: str, what: str) -> list[Problem]:
        others = {c: t for c, t in proc.running.items() if c != call}
        if not others:
            return []
        tool = proc.tools[call]
        blocking = [c for c in others if proc.alone[c]]
        if blocking:
            return [
                Problem(
                    call,
                    f"{tool} call {call} {what} while the exclusive call {blocking[0]} ({others[blocking[0]]}) was running "
                    "(an exclusive call runs alone)",
                )
            ]
        if proc.alone[call]:
            return [
                Problem(
                    call, f"the exclusive {tool} call {call} {what} while {sorted(others)} ran their bodies (an exclusive call runs alone)"
                )
            ]
        return []


def group_problems(
    blocks: Sequence[tuple[str, str, str]],
    marks: Sequence[ToolMark],
    lifetime: int,
    *,
    max_parallel: int,
    says: Classifier = declared_concurrency_safe,
) -> list[Problem]:
    """Parallel siblings start together (§5.1, §8.9): in each run of consecutive
    concurrency-safe calls of one step (``blocks``: the model's (call id, tool, arguments) in order), the
    first ``max_parallel`` all start before any of the run's bodies ends — starting a call waits
    for a pool slot, never for a sibling.  (Judged only where nothing else can hold a start back:
    every call of the run started, no cancellation, no perturbation — see the caller.)"""
    out: list[Problem] = []
    runs: list[list[str]] = [[]]
    for call_id, tool, arguments in blocks:
        if not runs_alone(tool, arguments, says):
            runs[-1].append(call_id)
        elif runs[-1]:
            runs.append([])
    for run in runs:
        if len(run) < 2:
            continue
        members = set(run)
        starts: dict[str, int] = {}
        first_end: int | None = None
        for index, mark in enumerate(marks):
            if mark.lifetime != lifetime or mark.call_id not in members:
                continue
            if mark.kind == "call":
                starts.setdefault(mark.call_id, index)
            elif mark.kind in ("returned", "raised") and first_end is None:
                first_end = index
        head = run[:max_parallel]
        if first_end is None or any(call not in starts for call in head):
            continue
        late = [call for call in head if starts[call] > first_end]
        if late:
            out.append(
                Problem(late[0], f"the concurrency-safe calls {head} run in parallel, but {late} started only after a sibling's body ended")
            )
    return out
