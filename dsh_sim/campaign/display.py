"""Progress while ``dsh-sim run`` works: a live ``rich`` panel, or plain lines.

``dsh-sim run`` was silent for most of a minute while it fuzzed.  Now, on a terminal, a live
panel shows the phase, tasks done / total, violations so far, elapsed time and the estimate
of the time left, and one row per busy worker (its task and how far it is); each finished
task's lines scroll above it.  When stdout is not a terminal (CI logs, a pipe) or with
``--json``, the same facts come as plain lines: every finished task's lines, and a status
line at least every :data:`HEARTBEAT` seconds — on stderr with ``--json``, whose stdout
holds only the JSON.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO, Any

from dsh_sim.campaign.board import Board, fmt_seconds
from dsh_sim.campaign.events import Event, Failed, Finished, Retried, WorkerJoined, WorkerLost

HEARTBEAT = 10.0  # seconds between plain status lines


def status_line(board: Board) -> str:
    eta = board.eta()
    parts = [
        f"[{fmt_seconds(board.elapsed())}] {board.phase()}",
        f"{board.done}/{board.total} tasks",
        f"{board.violations} violation(s)",
        f"ETA ~{fmt_seconds(eta)}",
    ]
    busy = "; ".join(f"{worker}: {task} {what}" for worker, task, what in board.worker_lines())
    return " | ".join(parts) + (f" | {busy}" if busy else "")


def echo(print_line: Callable[[str], None], event: Event | None) -> None:
    """What a finished or failed task says, line by line (both displays print the same)."""
    if isinstance(event, Finished):
        for line in event.result.lines:
            print_line(line)
    elif isinstance(event, Failed):
        print_line(f"  TASK FAILED {event.task}: {event.error}")
    elif isinstance(event, WorkerLost):
        print_line(f"  {event.worker} left the cluster: its task goes to another worker")
    elif isinstance(event, WorkerJoined):
        print_line(f"  {event.worker} joined the cluster")
    elif isinstance(event, Retried):
        print_line(f"  task {event.task} submitted again (attempt {event.attempt}): {event.reason}")


class PhaseLines:
    """Progress of what the submitter runs itself after the tasks (the DSH phase: minutes of
    Node processes): a line at most every :data:`HEARTBEAT` seconds, and one when a new kind of
    work begins."""

    def __init__(self, board: Board | None, name: str) -> None:
        self.board, self.name = board, name
        self._last, self._part = time.monotonic(), ""

    def __call__(self, part: str, done: int, total: int) -> None:
        now = time.monotonic()
        kind = part.split(",", 1)[0]  # ("DSH writer", "against DSH", "DSH route")
        if kind == self._part and now - self._last < HEARTBEAT:
            return
        self._last, self._part = now, kind
        elapsed = f"[{fmt_seconds(self.board.elapsed())}] " if self.board is not None else ""
        where = f"{part} {done}/{total}" if total else part.rsplit(", ", 1)[0]  # (a part's start: no count yet)
        print(f"{elapsed}{self.name} | {where}", flush=True)


class PlainDisplay:
    def __init__(self, board: Board, stream: IO[str]) -> None:
        self.board, self.stream = board, stream
        self._last = time.monotonic()

    def __enter__(self) -> PlainDisplay:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def print(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()

    def update(self, event: Event | None = None) -> None:
        echo(self.print, event)
        now = time.monotonic()
        if now - self._last >= HEARTBEAT or (isinstance(event, Finished | Failed) and self.board.done == self.board.total):
            self._last = now
            self.print(status_line(self.board))


class RichDisplay:
    """A ``rich.live.Live`` panel, redrawn four times a second from the board."""

    def __init__(self, board: Board) -> None:
        from rich.console import Console
        from rich.live import Live

        self.board = board
        self.console = Console()
        self._live = Live(console=self.console, get_renderable=self._render, refresh_per_second=4, transient=True)

    def _render(self) -> Any:
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        board = self.board
        head = Table.grid(padding=(0, 2))
        head.add_row(
            Text(board.phase(), style="bold cyan"),
            ProgressBar(total=max(board.total, 1), completed=board.done, width=30),
            Text(f"{board.done}/{board.total} tasks"),
            Text(f"{board.violations} violation(s)", style="bold red" if board.violations else "green"),
            Text(f"elapsed {fmt_seconds(board.elapsed())}"),
            Text(f"ETA ~{fmt_seconds(board.eta())}"),
        )
        workers = Table(box=None, show_header=False, padding=(0, 1))
        for worker, task, what in board.worker_lines():
            workers.add_row(Text(worker, style="bold"), Text(task), Text(what, style="dim"))
        return Group(head, workers)

    def __enter__(self) -> RichDisplay:
        self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.stop()

    def print(self, line: str) -> None:
        self.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def update(self, event: Event | None = None) -> None:
        echo(self.print, event)


Display = PlainDisplay | RichDisplay


def make(board: Board, json_mode: bool) -> Display:
    """Rich on a terminal; plain lines otherwise (on stderr with ``--json``)."""
    if json_mode:
        return PlainDisplay(board, sys.stderr)
    if sys.stdout.isatty():
        return RichDisplay(board)
    return PlainDisplay(board, sys.stdout)
