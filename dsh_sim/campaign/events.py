"""What an executor tells the submitting process while a campaign runs.

The same four events come from a task in this process and from a task on a Dask worker (as
``log_event`` messages, turned back into these values), so the progress display and the run
directory do not know where a task ran.
"""

from __future__ import annotations

from typing import Any

import attrs

from dsh_sim.campaign.work import TaskResult


@attrs.frozen
class Started:
    task: str
    worker: str


@attrs.frozen
class Progress:
    task: str
    worker: str
    done: int
    total: int | None
    note: str


@attrs.frozen
class Finished:
    result: TaskResult


@attrs.frozen
class Failed:
    task: str
    worker: str
    error: str  # one line


@attrs.frozen
class Retried:
    """The cluster dropped ``task`` before it ended (its worker died, the scheduler restarted):
    it was submitted again, ``attempt`` counting from 1."""

    task: str
    attempt: int
    reason: str


@attrs.frozen
class WorkerLost:
    """``worker`` left the cluster; what it ran goes to the others."""

    worker: str


@attrs.frozen
class WorkerJoined:
    worker: str


Event = Started | Progress | Finished | Failed | Retried | WorkerLost | WorkerJoined


class ClusterLost(Exception):
    """The cluster can no longer run the campaign (no worker left, the scheduler gone): the run
    ends incomplete with this one line, and ``--resume`` finishes it."""


def from_message(msg: dict[str, Any]) -> Started | Progress | None:
    """A worker's progress message as an event (``None``: not one of ours)."""
    kind = msg.get("event")
    if kind == "started":
        return Started(str(msg["task"]), str(msg["who"]))
    if kind == "progress":
        total = msg.get("total")
        return Progress(str(msg["task"]), str(msg["who"]), int(msg["done"]), None if total is None else int(total), str(msg["note"]))
    return None


def one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"[:300]
