"""The tasks a campaign is made of, and the campaign itself, as small frozen values.

A task names everything it needs — scenario labels into the campaign's corpus, a seed, a
budget — and nothing about where it runs: the same task gives the same result document in
this process, in a local Dask worker or on another machine.  The corpus travels as text
(label → the file's JSON), so a worker needs no checkout of the submitter's scenarios.
Values convert to and from JSON with cattrs (the run directory keeps the campaign, so
``--resume`` runs exactly the tasks that were planned).
"""

from __future__ import annotations

from typing import Any

import attrs
import cattrs
from cattrs.strategies import configure_tagged_union


@attrs.frozen
class ReplayShard:
    """Replay these scenarios; re-run ``recheck`` of them in two fresh processes (determinism);
    with ``readers``, also run the reader differential (:mod:`dsh_sim.drivers.readers`) and the
    failure-path sweep (:mod:`dsh_sim.drivers.faultsweep`)."""

    id: str
    scenarios: tuple[str, ...]
    recheck: tuple[str, ...] = ()
    readers: bool = False


@attrs.frozen
class ExploreShard:
    """Explore every crash state of these scenarios, sharing one recovery cache."""

    id: str
    scenarios: tuple[str, ...]
    bound: int | None = None


@attrs.frozen
class FuzzShard:
    """Fuzz ``machine`` from ``seed`` for ``budget`` seconds or ``examples`` examples, of at
    most ``steps`` rules each (None: the fuzz profile's)."""

    id: str
    machine: str
    seed: int
    budget: float
    examples: int | None = None
    steps: int | None = None


@attrs.frozen
class MutantKill:
    """Switch ``mutant`` on and replay the passing ``corpus``: is it killed?"""

    id: str
    mutant: str
    corpus: tuple[str, ...]


Task = ReplayShard | ExploreShard | FuzzShard | MutantKill
KINDS: dict[type, str] = {ReplayShard: "replay", ExploreShard: "explore", FuzzShard: "fuzz", MutantKill: "mutants"}


def corpus_for(task: Task, corpus: dict[str, str]) -> dict[str, str]:
    """The part of the corpus ``task`` reads: it travels with the task, so a task never depends
    on data a lost worker held (a replay shard running the reader differential and the sweep
    reads the whole corpus: their scenarios may sit in other shards)."""
    if isinstance(task, ReplayShard):
        if task.readers:
            return corpus
        return {label: corpus[label] for label in dict.fromkeys((*task.scenarios, *task.recheck))}
    if isinstance(task, ExploreShard):
        return {label: corpus[label] for label in task.scenarios}
    if isinstance(task, MutantKill):
        return {label: corpus[label] for label in task.corpus}
    return {}


def kind_of(task: Task) -> str:
    """The kind of results document the task writes (``replay``, ``explore``, ``fuzz``, ``mutants``)."""
    return KINDS[type(task)]


@attrs.frozen
class Options:
    """What the campaign was asked for (kept for ``--resume`` and the report's runs table)."""

    seed: int
    budget: float
    examples: int | None
    workers: int
    fuzz_shards: int
    bound: int | None
    skip: tuple[str, ...] = ()
    rechecks: int = 2  # scenarios replayed again in two fresh processes (determinism)
    steps: int | None = None  # rules per fuzz example (None: the fuzz profile's)


@attrs.frozen
class Campaign:
    options: Options
    tasks: tuple[Task, ...]
    corpus: dict[str, str]  # scenario label (its path on the submitting machine) -> file text

    def task(self, task_id: str) -> Task:
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise KeyError(task_id)


converter = cattrs.Converter(forbid_extra_keys=True)
configure_tagged_union(Task, converter, tag_name="kind", tag_generator=lambda cls: KINDS[cls])


def to_json(campaign: Campaign) -> dict[str, Any]:
    out: dict[str, Any] = converter.unstructure(campaign)
    return out


def from_json(obj: Any) -> Campaign:
    campaign: Campaign = converter.structure(obj, Campaign)
    return campaign
