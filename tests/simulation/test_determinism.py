"""Determinism is the product: same seed + scenario → same schedule, digest and session bytes."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest
import trio
import trio.testing

from dsh_sim.engine import determinism
from dsh_sim.engine.determinism import (
    check_trio,
    derive_seed,
    new_clock,
    run_module,
    seed_scheduler,
    shuffle_batch,
)
from tests.support.paths import ROOT

SCENARIO = os.path.join(ROOT, "scenarios", "starter", "crash-during-recovery.json")


def schedule(seed: int) -> list[str]:
    """The order in which 6 racing tasks run their steps under a seeded scheduler."""
    order: list[str] = []

    async def worker(name: str) -> None:
        for _ in range(5):
            order.append(name)
            await trio.lowlevel.checkpoint()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            for i in range(6):
                nursery.start_soon(worker, f"w{i}")

    seed_scheduler(seed)
    trio.run(main, clock=new_clock())
    return order


def test_same_seed_same_schedule_different_seed_different_schedule():
    assert schedule(7) == schedule(7)
    assert len({tuple(schedule(seed)) for seed in range(6)}) > 1


def test_the_batch_shuffle_draws_exactly_what_random_shuffle_draws():
    for size in range(6):
        ours, reference = random.Random(11), random.Random(11)
        batch, expected = list(range(size)), list(range(size))
        shuffle_batch(ours, batch)
        reference.shuffle(expected)
        assert batch == expected and ours.getstate() == reference.getstate(), size
    seed_scheduler(3)
    rng = run_module()._r
    assert rng.shuffle.func is shuffle_batch and rng.shuffle.args == (rng,)  # still trio's own object


def test_a_single_task_batch_is_not_shuffled_but_larger_ones_are(monkeypatch):
    calls: list[int] = []
    original = random.Random.shuffle
    monkeypatch.setattr(random.Random, "shuffle", lambda rng, x: calls.append(len(x)) or original(rng, x))
    schedule(5)
    assert calls and min(calls) > 1  # six racing workers: some batches hold several tasks


def test_the_trio_range_is_checked(monkeypatch):
    check_trio()
    monkeypatch.setattr(determinism.trio, "__version__", "0.99.0")
    with pytest.raises(RuntimeError, match="private trio scheduling knobs"):
        check_trio()


def test_derived_seeds_do_not_depend_on_hash_randomization():
    assert derive_seed(1, "ids") == derive_seed(1, "ids") != derive_seed(2, "ids")
    assert derive_seed("x", 3) == 350910598919125271  # pinned: a change here silently re-seeds every scenario


def replay_in_fresh_process(hashseed: str) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": hashseed}
    done = subprocess.run(
        [sys.executable, "-m", "dsh_sim", "replay", SCENARIO, "--json"], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)[0]


@pytest.mark.slow
def test_same_digest_and_session_bytes_in_two_fresh_processes_with_different_hash_seeds():
    a = replay_in_fresh_process("1")
    b = replay_in_fresh_process("12345")
    assert a["digest"] == b["digest"]
    assert a["session_sha256"] == b["session_sha256"] and a["session_sha256"] is not None
    assert a["digest"] == a["recorded_digest"]  # and the same as when the scenario was recorded
