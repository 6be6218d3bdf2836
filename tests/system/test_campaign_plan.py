"""The campaign's split into tasks: fixed by the corpus and the options, not by the workers."""

from __future__ import annotations

import json
import os

import attrs
import pytest

from dsh_sim.campaign import tasks as tasks_mod
from dsh_sim.campaign.plan import EXPLORE_SHARDS, NO_TIME_LIMIT, chunks, fuzz_machines, plan, split_seed
from dsh_sim.campaign.runner import read_texts
from dsh_sim.campaign.tasks import ExploreShard, FuzzShard, MutantKill, Options, ReplayShard
from dsh_sim.mutants.catalogue import CATALOGUE
from dsh_sim.scenario.files import corpus, discover
from tests.support.campaign import QuietContext
from tests.support.paths import ROOT

STARTER = os.path.join(ROOT, "scenarios", "starter")


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    files, _ = corpus(os.path.join(ROOT, "scenarios"))
    return read_texts(files)


def options(**kw: object) -> Options:
    base = {"seed": 7, "budget": 60.0, "examples": None, "workers": 1, "fuzz_shards": 4, "bound": None}
    return Options(**{**base, **kw})  # type: ignore[arg-type]


def test_split_seeds_are_stable_and_distinct() -> None:
    names = [f"fuzz-durability-{i}" for i in range(50)]
    seeds = [split_seed(7, name) for name in names]
    assert len(set(seeds)) == len(seeds)
    assert seeds == [split_seed(7, name) for name in names]  # a pure function of (seed, name)
    assert split_seed(8, names[0]) != seeds[0]
    assert all(0 <= s < 2**32 for s in seeds)
    # fixed values: the split must not change between versions, or old campaigns stop reproducing
    assert split_seed(1, "fuzz-durability-0") == 1216937002


def test_chunks_are_contiguous_balanced_and_cover_everything() -> None:
    items = [str(i) for i in range(11)]
    groups = chunks(items, 4)
    assert [len(g) for g in groups] == [3, 3, 3, 2]
    assert [x for g in groups for x in g] == items
    assert chunks(items[:2], 8) == [["0"], ["1"]]


def test_fuzz_shards_keep_three_durability_to_one_storage() -> None:
    assert fuzz_machines(4) == ["durability"] * 3 + ["storage"]
    assert fuzz_machines(8).count("storage") == 2
    assert fuzz_machines(2) == ["durability", "storage"]
    assert fuzz_machines(1) == ["durability"]


def test_the_tasks_do_not_depend_on_the_worker_count(texts: dict[str, str]) -> None:
    """Only the fuzz time budget scales with the workers; ids, seeds, scenarios, example
    counts — everything that decides the counts — are the same."""
    mutant_corpus = read_texts(discover(STARTER))
    one = plan(options(examples=5), texts, mutant_corpus)
    many = plan(options(examples=5, workers=6), texts, mutant_corpus)

    def without_budget(task: object) -> object:
        return attrs.evolve(task, budget=0.0) if isinstance(task, FuzzShard) else task

    assert [without_budget(t) for t in one.tasks] == [without_budget(t) for t in many.tasks]
    # with --examples nothing else stops a shard: the counts are the same on any cluster (a time
    # share once cut shards short on a cluster, 370 examples against 412 in process, "complete")
    assert {t.budget for t in one.tasks + many.tasks if isinstance(t, FuzzShard)} == {NO_TIME_LIMIT}
    timed_one, timed_many = plan(options(), texts, mutant_corpus), plan(options(workers=6), texts, mutant_corpus)
    assert {t.budget for t in timed_one.tasks if isinstance(t, FuzzShard)} == {15.0}  # 60 s for one worker, shared by 4 shards
    assert {t.budget for t in timed_many.tasks if isinstance(t, FuzzShard)} == {90.0}


def test_the_plan_covers_the_whole_corpus_once(texts: dict[str, str]) -> None:
    campaign = plan(options(), texts, read_texts(discover(STARTER)))
    replayed = [s for t in campaign.tasks if isinstance(t, ReplayShard) for s in t.scenarios]
    assert replayed == list(texts)
    explored = [s for t in campaign.tasks if isinstance(t, ExploreShard) for s in t.scenarios]
    assert len({t.id for t in campaign.tasks if isinstance(t, ExploreShard)}) == EXPLORE_SHARDS
    assert len(explored) == len(set(explored)) and set(explored) < set(texts)  # self-tests are replayed, not explored
    rechecked = [s for t in campaign.tasks if isinstance(t, ReplayShard) for s in t.recheck]
    assert rechecked == list(texts)[:2]
    assert sorted(t.mutant for t in campaign.tasks if isinstance(t, MutantKill)) == sorted(CATALOGUE)
    assert len({t.id for t in campaign.tasks}) == len(campaign.tasks)


def test_skipped_parts_plan_no_tasks(texts: dict[str, str]) -> None:
    campaign = plan(options(skip=("explore", "mutants")), texts, {})
    assert {type(t) for t in campaign.tasks} == {ReplayShard, FuzzShard}


def test_a_campaign_survives_its_json_round_trip(texts: dict[str, str]) -> None:
    campaign = plan(options(examples=3, bound=9), texts, read_texts(discover(STARTER)))
    again = tasks_mod.from_json(json.loads(json.dumps(tasks_mod.to_json(campaign))))
    assert again == campaign
    kinds = {t["kind"] for t in tasks_mod.to_json(campaign)["tasks"]}
    assert kinds == {"replay", "explore", "fuzz", "mutants"}


def test_the_first_replay_shard_alone_runs_the_reader_differential(texts: dict[str, str]) -> None:
    replays = [t for t in plan(options(), texts, {}).tasks if isinstance(t, ReplayShard)]
    assert [t.readers for t in replays] == [True] + [False] * (len(replays) - 1)


def test_a_reader_mismatch_is_a_violation_of_the_replay_shard(texts: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """The differential's verdict reaches the campaign's documents (a runtime reader that
    disagrees with the spec's makes ``dsh-sim run`` fail): here a mismatch is planted."""
    from dsh_sim.campaign import work
    from dsh_sim.drivers import faultsweep, readers

    def differential(sources, originals, plan, groups=readers.GROUPS, between=None):
        assert {name for name, *_ in originals} == set(readers.READER_SCENARIOS)  # the corpus's logs are read too
        return readers.ReaderRun(1, 1, ("case x: the runtime read 2 records, the spec 3",))

    monkeypatch.setattr(readers, "differential", differential)
    monkeypatch.setattr(faultsweep, "SWEEP_SET", ())  # the sweep has its own test below
    labels = [label for label in texts if os.path.basename(label)[:-5] in readers.READER_SCENARIOS]
    task = ReplayShard("replay-0", tuple(labels), readers=True)
    result = work.run_task(task, texts, QuietContext(), str(tmp_path))
    assert [v.invariant for v in result.document.violations or ()] == ["reader_differential"]
    clean = work.run_task(attrs.evolve(task, readers=False), texts, QuietContext(), str(tmp_path))
    assert clean.document.violations == ()


@pytest.mark.slow
def test_the_failure_sweep_of_the_first_replay_shard_is_clean_and_reports_violations(
    texts: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """The sweep scenarios hold under every injected failure on the shipped runtime; a runtime
    whose error path breaks an invariant turns the run red, the variant saved as a scenario."""
    from dsh_sim.campaign import work
    from dsh_sim.drivers import faultsweep
    from dsh_sim.mutants.patch import Edit, applied

    lines: list[str] = []
    corpus = list(work.parsed(texts).values())
    rows, found = work._failure_sweep(corpus, lines, work._Sink(str(tmp_path)), QuietContext())
    assert found == [] and len(lines) == len(faultsweep.SWEEP_SET)
    assert sorted(r.scenario for r in rows) == sorted(faultsweep.SWEEP_SET) and all(r.runs and not r.violations for r in rows)
    monkeypatch.setattr(faultsweep, "SWEEP_SET", ("write-path-publication-then-appends",))
    leaks_temp = Edit(  # a failed publication no longer removes its temp file
        "runtime.persistence.durable",
        "publish_new_file",
        "            await unlink_quietly(fs, temp)\n        raise\n",
        "        raise\n",
    )
    sink = work._Sink(str(tmp_path))
    with applied([leaks_temp]):
        rows, found = work._failure_sweep(corpus, [], sink, QuietContext())
    assert found and {v.source for v in found} == {"sweep"} and rows[0].violations == len(found)
    assert sink.files


def test_the_fuzz_step_count_reaches_every_fuzz_shard_and_survives_the_round_trip(texts: dict[str, str]) -> None:
    campaign = plan(options(examples=3, steps=7), texts, {})
    shards = [t for t in campaign.tasks if isinstance(t, FuzzShard)]
    assert shards and {t.steps for t in shards} == {7}
    assert tasks_mod.from_json(json.loads(json.dumps(tasks_mod.to_json(campaign)))) == campaign


def test_a_plan_saved_before_the_step_count_existed_loads_with_the_profile_default(texts: dict[str, str]) -> None:
    saved = tasks_mod.to_json(plan(options(examples=3), texts, {}))
    del saved["options"]["steps"]
    for task in saved["tasks"]:
        task.pop("steps", None)
    again = tasks_mod.from_json(json.loads(json.dumps(saved)))
    assert again.options.steps is None
    assert {t.steps for t in again.tasks if isinstance(t, FuzzShard)} == {None}
