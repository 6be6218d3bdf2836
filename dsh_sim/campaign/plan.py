"""Splitting a campaign into tasks: the same split for any number of workers.

What a task computes must not depend on how many workers there are, or a two-worker run
could not be compared with a one-worker run of the same seeds.  So the split is fixed by the
corpus and the options alone: replay in chunks of :data:`REPLAY_CHUNK` scenarios, explore in
:data:`EXPLORE_SHARDS` contiguous groups (each group shares one recovery cache: neighbours in
name order — ``torn-zstd-*``, ``boundary-*`` — share most post-crash states), one kill task
per durability mutant, and ``--fuzz-shards`` fuzz shards whose seeds are split from the
campaign seed by name (:func:`split_seed`), so each shard is reproducible on its own with
``dsh-sim fuzz --machine M --seed S --examples N`` (and ``--steps`` if the campaign set it).

Only the fuzz *time* budget uses the worker count: ``--budget`` is seconds of fuzzing per
worker, so the fuzz phase lasts about as long on any cluster (the campaign's total is
budget × workers, shared evenly by the shards).  A time budget never gives reproducible
counts anyway; ``--examples`` does, and it is the same for every worker count: with it, a
shard runs its examples whatever the time (``--budget`` does not apply).
"""

from __future__ import annotations

import hashlib
import math

from dsh_sim.campaign.tasks import Campaign, ExploreShard, FuzzShard, MutantKill, Options, ReplayShard, Task
from dsh_sim.mutants.catalogue import CATALOGUE
from dsh_sim.scenario.files import parse
from dsh_sim.scenario.model import Scenario

REPLAY_CHUNK = 24
NO_TIME_LIMIT = 1e9  # seconds: a fuzz shard that stops at its example count only
EXPLORE_SHARDS = 8
PARTS = ("replay", "explore", "fuzz", "mutants")


def split_seed(seed: int, name: str) -> int:
    """The seed of the part ``name`` of a campaign seeded ``seed`` (32 bits, stable everywhere)."""
    digest = hashlib.sha256(f"dsh-sim campaign {seed} {name}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def chunks(items: list[str], count: int) -> list[list[str]]:
    """``items`` in ``count`` contiguous groups as equal as can be (none empty)."""
    count = max(1, min(count, len(items)))
    size, extra = divmod(len(items), count)
    out, start = [], 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        out.append(items[start:end])
        start = end
    return [group for group in out if group]


def fuzz_machines(shards: int) -> list[str]:
    """Three durability shards to one storage shard (both machines from two shards on)."""
    storage = max(1, shards // 4) if shards >= 2 else 0
    return ["durability"] * (shards - storage) + ["storage"] * storage


def parsed(corpus: dict[str, str]) -> dict[str, Scenario]:
    import json

    return {label: parse(json.loads(text), label) for label, text in corpus.items()}


def plan(options: Options, scenarios: dict[str, str], mutant_corpus: dict[str, str]) -> Campaign:
    """The campaign over ``scenarios`` (label → text, in replay order); mutants are attacked
    with the passing scenarios of ``mutant_corpus`` (the committed starter corpus)."""
    loaded = parsed(scenarios)
    labels = list(scenarios)
    tasks: list[Task] = []
    if "replay" not in options.skip:
        recheck = set(labels[: options.rechecks])
        for index, group in enumerate(chunks(labels, math.ceil(len(labels) / REPLAY_CHUNK))):
            tasks.append(ReplayShard(f"replay-{index}", tuple(group), tuple(x for x in group if x in recheck), readers=index == 0))
    if "fuzz" not in options.skip and options.fuzz_shards:
        # --examples makes the counts reproducible only if nothing else stops a shard first: a
        # shard then runs its examples whatever the time (a time share could cut it short on a
        # slower worker, and the run would still say complete)
        seconds = options.budget * options.workers / options.fuzz_shards if options.examples is None else NO_TIME_LIMIT
        counters: dict[str, int] = {}
        for machine in fuzz_machines(options.fuzz_shards):
            index = counters[machine] = counters.get(machine, -1) + 1
            name = f"fuzz-{machine}-{index}"
            tasks.append(FuzzShard(name, machine, split_seed(options.seed, name), seconds, options.examples, options.steps))
    if "explore" not in options.skip:
        passing = [label for label in labels if loaded[label].passes_clean]
        for index, group in enumerate(chunks(passing, EXPLORE_SHARDS)):
            tasks.append(ExploreShard(f"explore-{index}", tuple(group), options.bound))
    corpus = dict(scenarios)
    if "mutants" not in options.skip:
        kill_corpus = tuple(label for label, s in parsed(mutant_corpus).items() if s.passes_clean)
        corpus.update({label: mutant_corpus[label] for label in kill_corpus})
        tasks.extend(MutantKill(f"mutant-{name}", name, kill_corpus) for name in sorted(CATALOGUE))
    return Campaign(options, tuple(tasks), corpus)


def skipped_self_tests(campaign: Campaign) -> list[str]:
    """Replayed scenarios left out of exploration: self-tests that expect a violation."""
    explored = {label for task in campaign.tasks if isinstance(task, ExploreShard) for label in task.scenarios}
    replayed = [label for task in campaign.tasks if isinstance(task, ReplayShard) for label in task.scenarios]
    return [label for label in replayed if label not in explored]
