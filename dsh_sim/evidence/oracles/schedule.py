"""The tool scheduler's limits, as the tools saw them run (spec §5.1, §8.9).

* At most ``maxParallelToolCalls`` tool bodies of one process run at once.
* An exclusive call (a tool that is not concurrency-safe) is a barrier: it starts only when
  no other call's body runs, and no other call starts or runs while its body does.

The facts are the simulator's (:class:`~dsh_sim.adapters.observed.ToolMark`): when each call
started (its ``tool/call``), when its body began and ended.  Which tool is concurrency-safe is
the tool's own answer (the simulated tools say it whatever the arguments), never the
runtime's classification.  Nested calls run inside their parent's body and are not counted.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from dsh_sim.adapters.observed import ToolMark


@attrs.frozen
class Problem:
    call_id: str
    message: str


@attrs.define
class _Process:
    tools: dict[str, str] = attrs.field(factory=dict)  # top-level call id -> tool
    running: dict[str, str] = attrs.field(factory=dict)  # bodies in flight, in start order


class Schedule:
    """Judges the marks incrementally: :meth:`feed` the run's mark list as it grows."""

    def __init__(self, *, max_parallel: int, safe: frozenset[str]) -> None:
        self.max_parallel = max_parallel
        self.safe = safe
        self._seen = 0
        self._processes: dict[int, _Process] = {}

    def feed(self, marks: Sequence[ToolMark]) -> list[Problem]:
        out: list[Problem] = []
        for mark in marks[self._seen :]:
            out.extend(self._one(mark))
        self._seen = len(marks)
        return out

    def _exclusive(self, tool: str) -> bool:
        return tool not in self.safe

    def _one(self, mark: ToolMark) -> list[Problem]:
        proc = self._processes.setdefault(mark.lifetime, _Process())
        call = mark.call_id
        if call is None:
            return []
        if mark.kind == "call":
            proc.tools[call] = str(mark.tool)
            return self._barrier(proc, call, "started")
        if call not in proc.tools:
            return []  # a nested call: part of its parent's body
        if mark.kind == "body":
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
        proc.running.pop(call, None)  # returned or raised
        return []

    def _barrier(self, proc: _Process, call: str, what: str) -> list[Problem]:
        others = {c: t for c, t in proc.running.items() if c != call}
        if not others:
            return []
        tool = proc.tools[call]
        blocking = [c for c, t in others.items() if self._exclusive(t)]
        if blocking:
            return [Problem(call, f"{tool} call {call} {what} while the exclusive call {blocking[0]} ({others[blocking[0]]}) ran its body")]
        if self._exclusive(tool):
            return [
                Problem(
                    call, f"the exclusive {tool} call {call} {what} while {sorted(others)} ran their bodies (an exclusive call runs alone)"
                )
            ]
        return []


def group_problems(
    blocks: Sequence[tuple[str, str]], marks: Sequence[ToolMark], lifetime: int, *, max_parallel: int, safe: frozenset[str]
) -> list[Problem]:
    """Parallel siblings start together (§5.1, §8.9): in each run of consecutive
    concurrency-safe calls of one step (``blocks``: the model's (call id, tool) in order), the
    first ``max_parallel`` all start before any of the run's bodies ends — starting a call waits
    for a pool slot, never for a sibling.  (Judged only where nothing else can hold a start back:
    every call of the run started, no cancellation, no perturbation — see the caller.)"""
    out: list[Problem] = []
    runs: list[list[str]] = [[]]
    for call_id, tool in blocks:
        if tool in safe:
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
