"""Everything that makes a simulated run repeat exactly lives here.

* Virtual time: trio's ``MockClock`` with ``autojump_threshold=0`` and ``rate=0``.
* Scheduling: trio's deterministic-scheduling switch, and its scheduler RNG seeded per
  process lifetime; each run is stepped by the host through trio's run-loop generator.  All
  are private trio knobs, so the trio range is pinned in
  ``pyproject.toml`` and checked here; ``tests/test_determinism.py`` proves the helper still
  works (same seed → same schedule, different seed → different schedule).
* Ids and randomness: one ``random.Random`` per simulation, derived from the scenario seed.
  Hypothesis reseeds trio's RNG to a fixed value per test case, so :func:`seed_scheduler`
  must be called at every process boot.
"""

from __future__ import annotations

import functools
import hashlib
import random
import uuid
from typing import Any

import trio
import trio.testing

SUPPORTED_TRIO = ((0, 35), (0, 36))  # [low, high): the pinned release (pyproject.toml)
EPOCH_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: simulated wall time starts here


def trio_version() -> tuple[int, int]:
    major, minor = trio.__version__.split(".")[:2]
    return int(major), int(minor)


def check_trio() -> None:
    low, high = SUPPORTED_TRIO
    if not (low <= trio_version() < high):
        raise RuntimeError(
            f"dsh-sim relies on private trio scheduling knobs tested for trio {low[0]}.{low[1]} up to (not "
            f"including) {high[0]}.{high[1]}; found {trio.__version__}"
        )
    run = run_module()
    if not hasattr(run, "_r") or not hasattr(run, "_ALLOW_DETERMINISTIC_SCHEDULING"):
        raise RuntimeError("this trio build lacks the deterministic-scheduling knobs dsh-sim relies on")
    if not all(hasattr(run, name) for name in ("setup_runner", "unrolled_run", "GLOBAL_RUN_CONTEXT")):
        raise RuntimeError("this trio build lacks the run-loop generator dsh-sim steps its processes with")


@functools.cache  # (an import statement per call: one per process boot)
def run_module() -> Any:
    """trio's private ``_run`` module, untyped on purpose: its knobs are private, one is ``Final``.

    Besides the scheduling knobs, :mod:`dsh_sim.engine.process` steps a run through the
    generator behind ``trio.run`` and guest mode (``setup_runner``, ``unrolled_run``)."""
    from trio._core import _run

    return _run


def shuffle_batch(rng: random.Random, batch: list[Any]) -> None:
    """``rng.shuffle(batch)``, without the call for a batch of fewer than two tasks.

    trio shuffles every scheduler batch, and most hold a single task (a simulated process
    steps one task at a time between filesystem calls).  ``Random.shuffle`` draws nothing for
    a list that short, so skipping it leaves the generator's state, and every schedule,
    exactly as they were.

    The batch is kept in the run's thread-local context while its tasks run: trio pops them
    from its end, so it holds the tasks still to run (:mod:`dsh_sim.engine.checkpoints`)."""
    RUN_CONTEXT.batch = batch
    if len(batch) > 1:
        random.Random.shuffle(rng, batch)


def seed_scheduler(seed: int) -> None:
    """Make trio's scheduler deterministic and seed its batch shuffling.

    The batch shuffle of trio's RNG is :func:`shuffle_batch`, set on the instance: the object
    stays trio's own, the one Hypothesis registered and reseeds."""
    run = run_module()
    run._ALLOW_DETERMINISTIC_SCHEDULING = True
    rng = run._r
    rng.shuffle = functools.partial(shuffle_batch, rng)
    rng.seed(seed)


def derive_seed(*parts: object) -> int:
    """A 64-bit seed derived from any printable parts (stable across processes)."""
    text = "\x1f".join(map(repr, parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def new_clock() -> trio.testing.MockClock:
    """trio's ``MockClock`` at rate 0: virtual time moves only by ``jump``.

    At rate 0 its time is the virtual base plus ``0 * (perf_counter() - real base)``, exactly
    the virtual base; the clock reads that directly instead (trio's loop, the host and the
    tracer read the time several times per task step: over 100,000 reads in a short fuzz run,
    each a real-clock read).  MockClock cannot be subclassed, so the instance's method is
    replaced; the rate is never changed (a nonzero rate would need the real clock back)."""
    clock = trio.testing.MockClock(rate=0, autojump_threshold=0)
    clock.current_time = functools.partial(getattr, clock, "_virtual_base")  # type: ignore[method-assign]
    return clock


class SimClock:
    """The clock port over a MockClock: epoch milliseconds of virtual time."""

    def __init__(self, clock: trio.testing.MockClock) -> None:
        self._clock = clock

    def now_ms(self) -> int:
        return EPOCH_MS + round(self._clock.current_time() * 1000)


class SimIds:
    """The ids port drawing from the simulation's seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def uuid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def token_hex(self, nbytes: int) -> str:
        return self._rng.getrandbits(8 * nbytes).to_bytes(nbytes, "big").hex()


check_trio()
RUN_CONTEXT = run_module().GLOBAL_RUN_CONTEXT  # trio's thread-local run context: the running task, the batch (shuffle_batch)
