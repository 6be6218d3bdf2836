"""The storage state machine: the persistence layer alone, under faults and crashes.

Appends (edge values of JSON among them), explicit flushes (two at once, the first cancelled),
write-behind window expiry, I/O and fsync faults, torn and power-loss crashes (also during
recovery), reopen, a second writer, lock files swapped or removed, and symbolic links planted at
the log or the lock file — checked by the same invariants as the agent machine (acknowledged
events survive, committed bytes are never rewritten, seqs stay dense, one writer at a time, no
write from a dead process, no link followed).

A run may start from a historical v0 log (``seed_v0``): the first boot's write open then
migrates it and publishes v3, optionally with a crash armed at one of the publication steps
(and recovery crashes may hit a second attempt); ``migration_atomic`` judges every boot.
"""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from dsh_sim.drivers.machines import typed
from dsh_sim.drivers.machines.base import SimulationMachine, is_alive, is_dead
from dsh_sim.drivers.machines.strategies import FS_POINTS, crash_specs, io_faults, timings, window_write_faults
from dsh_sim.engine import links
from dsh_sim.engine.config import SimConfig
from dsh_sim.engine.json_values import EDGE_NAMES
from dsh_sim.engine.machine import Simulation
from dsh_sim.engine.points import POINTS
from dsh_sim.evidence.checker import Checker
from dsh_sim.scenario.args import APPEND_SEAMS, FlushArgs, PlantLinkArgs, Step
from dsh_sim.scenario.v0.legacy import growth
from dsh_sim.scenario.v0.strategy import seed_v0_args

STORAGE_POINTS = FS_POINTS + ("persist.batch.durable", "session.flush")
# the steps of publishing a migrated generation: named runtime points, and the fs operations
# of the first boot (hit 1 of fs.write/fs.fsync is the staged file, fs.link the publication)
MIGRATION_POINTS = (
    "persist.migration.prepared",
    "persist.migration.staged",
    "persist.migration.verified",
    "persist.migration.published",
    "fs.write",
    "fs.fsync",
    "fs.link",
    "fs.fsync_dir",
    "fs.unlink",
)
boot_crashes = st.one_of(st.none(), st.tuples(st.sampled_from(MIGRATION_POINTS), st.integers(1, 2), crash_specs))
# where an older runtime, still running, appends a turn to the source (before publication)
SOURCE_APPEND_POINTS = tuple(p for p in MIGRATION_POINTS if POINTS[p].allows("source_append"))
source_appends = st.one_of(st.none(), st.sampled_from(SOURCE_APPEND_POINTS))


def links_in_place(machine: StorageMachine) -> bool:
    sim = machine.sim
    return machine.dead and sim is not None and links.in_place(sim.disk, sim.history)


class StorageMachine(SimulationMachine):
    config = SimConfig()
    last: StorageMachine | None = None

    def crashed(self) -> None:
        record = self._running().history.crashes[-1]
        event(f"storage crash {record.label} phase {record.phase}")

    @initialize(
        seed=st.integers(0, 2**31 - 1),
        compression=st.sampled_from(["zstd", "none"]),
        origin=st.one_of(st.just("fresh"), seed_v0_args()),
        boot_crash=boot_crashes,
        timing=timings,
        source_append=source_appends,
    )
    def start(
        self, seed: int, compression: str, origin: str = "fresh", boot_crash: Any = None, timing: Any = None, source_append: Any = None
    ) -> None:
        self.seed = seed
        cfg = attrs.evolve(type(self).config, compression=compression, approval_tools=(), **(timing or {}))
        self.sim = Simulation(seed, cfg, kind="storage", trace=self.record_trace)
        self.checker = Checker.attach(self.sim)
        if origin != "fresh":  # a historical v0 log of any shape the generator makes
            self.do(Step("seed_v0", origin))
            if boot_crash is not None:
                point, hit, crash = boot_crash
                self.do(typed.arm({"point": point, "action": "crash", "hit": hit, "lifetime": 1, "crash": crash}))
            if source_append is not None and not isinstance(growth(self.sim.history.seeded, compression), str):
                self.do(typed.arm({"point": source_append, "action": "source_append", "hit": 1, "lifetime": 1}))
        self.do(Step("boot"))

    @precondition(is_alive)
    @rule(count=st.integers(1, 5), size=st.sampled_from([8, 200, 5000, 300_000]))
    def append(self, count: int, size: int) -> None:
        """Events of ``size`` bytes; the largest span several zstd blocks in one frame."""
        self.do(typed.append(count=count, size=size))

    @precondition(is_alive)
    @rule(value=st.sampled_from(EDGE_NAMES), via=st.sampled_from(APPEND_SEAMS))
    def append_edge_value(self, value: str, via: str) -> None:
        """An event whose data is an edge value of JSON, at either seam (``Session.append``, or a
        write handle given the caller's event): refused if the spec refuses it
        (``lossless_refused``), else stored and read back exactly."""
        self.do(typed.append(value=value, via=via))

    @precondition(is_alive)
    @rule(
        fault=window_write_faults,
        before=st.integers(1, 3),
        wait=st.sampled_from([0.21, 0.25, 0.6]),
        after=st.integers(1, 3),
        then=st.sampled_from(["nothing", "flush", "window", "append"]),
    )
    def append_across_failed_window_write(self, fault: dict[str, Any], before: int, wait: float, after: int, then: str) -> None:
        """Events admitted while a background window write fails (or is still in flight with a
        slow disk) and before anything retries it: the retry must keep the failed batch in
        front of them, write each event once, and acknowledge nothing it did not make durable."""
        steps = [
            typed.append(count=before),
            typed.arm({**fault, "hit": 1, "lifetime": len(self._running().lifetimes)}),
            typed.advance(wait),
            typed.append(count=after),
        ]
        if then == "flush":
            steps.append(Step("flush"))
        elif then == "window":
            steps.append(typed.advance(0.25))
        elif then == "append":
            steps += [typed.append(count=1), typed.advance(0.25)]
        self.do_while_alive(*steps)

    @precondition(is_alive)
    @rule(wait=st.sampled_from([0.21, 0.25]), then=st.sampled_from(["flush", "append", "crash"]), crash=crash_specs)
    def barrier_meets_write_in_flight(self, wait: float, then: str, crash: dict[str, Any]) -> None:
        """A window expires and its write starts; before it lands (a slow disk keeps it in
        flight) a barrier, more events or a crash arrive."""
        last = {"flush": Step("flush"), "append": typed.append(count=1), "crash": typed.crash_now(crash)}[then]
        self.do_while_alive(typed.append(count=2), typed.advance(wait), last)

    @precondition(is_alive)
    @rule()
    def flush(self) -> None:
        self.do(Step("flush"))

    @precondition(is_alive)
    @rule(
        before=st.integers(1, 3),
        delay=st.sampled_from([0.5, 2.0]),
        after=st.integers(0, 3),
        cancel=st.sampled_from([0.1, 0.3, 1.0]),
    )
    def flushes_race_a_cancel(self, before: int, delay: float, after: int, cancel: float) -> None:
        """Two application tasks flush while a window's write is slow (a delayed fsync), and the
        first task's own scope is cancelled (its caller's timeout) while it holds the barrier: the
        second must run the barrier itself, never take that cancellation for its success."""
        self.do_while_alive(
            typed.append(count=before),
            typed.arm({"point": "fs.fsync", "action": "delay", "delay": delay, "hit": 1, "lifetime": len(self._running().lifetimes)}),
            typed.advance(0.21),
            *([typed.append(count=after)] if after else []),
            Step("flush", FlushArgs(cancel_first_after=cancel)),
        )

    @precondition(is_alive)
    @rule(seconds=st.sampled_from([0.05, 0.2, 0.5]))
    def window(self, seconds: float) -> None:
        self.do(typed.advance(seconds))

    @precondition(is_alive)
    @rule(fault=io_faults, hit=st.integers(1, 3))
    def arm_fault(self, fault: dict[str, Any], hit: int) -> None:
        self.do(typed.arm({**fault, "hit": hit, "lifetime": len(self._running().lifetimes)}))

    @precondition(is_alive)
    @rule(point=st.sampled_from(STORAGE_POINTS), hit=st.integers(1, 3), crash=crash_specs)
    def arm_crash(self, point: str, hit: int, crash: dict[str, Any]) -> None:
        lifetime = len(self._running().lifetimes)
        self.do(typed.arm({"point": point, "action": "crash", "hit": hit, "lifetime": lifetime, "crash": crash}))

    @precondition(is_dead)
    @rule(action=st.sampled_from(["replaced", "removed", "contended"]))
    def arm_lock_race(self, action: str) -> None:
        """The next boot's lock file is replaced or removed by another process (a stale-lock
        cleaner) between its open and its flock — the writer must hold a lock its name reaches,
        or a second writer (the rule after) gets one of its own — or another process wins the
        race to open the session (``contended``): this one must stay out and leave nothing."""
        lifetime = len(self._running().lifetimes) + 1
        self.do(typed.arm({"point": "fs.flock", "action": action, "hit": 1, "lifetime": lifetime}))

    @rule(hit=st.integers(1, 2))
    def arm_publication_conflict(self, hit: int) -> None:
        """Another process puts a file of its own at the name a publication links next (the
        first publication of the log, or a migrated generation): it must stay as it is."""
        sim = self._running()
        lifetime = len(sim.lifetimes) + (0 if self.alive else 1)
        self.do(typed.arm({"point": "fs.link", "action": "target_exists", "hit": hit, "lifetime": max(1, lifetime)}))

    @precondition(is_dead)
    @rule(at=st.sampled_from(["log", "lock"]), hit=st.integers(1, 2), race=st.booleans())
    def plant_link(self, at: str, hit: int, race: bool) -> None:
        """Another program puts a symbolic link (to a file outside the root) in place of the log
        or the lock file: now, between processes, or (``race``) just before one of the next
        boot's opens of it — after its checks, where only ``O_NOFOLLOW`` stands in the way.
        Nothing may be read or written through it (``links_not_followed``); the operator's
        removal (the rule after) lets the session go on."""
        sim = self._running()
        if race:
            path = sim.config.paths.log if at == "log" else sim.config.paths.lock
            rule = {"point": "fs.open", "action": "linked", "hit": hit, "lifetime": len(sim.lifetimes) + 1, "match": {"path": path}}
            self.do(typed.arm(rule))
        else:
            self.do(Step("plant_link", PlantLinkArgs(at)))

    @precondition(links_in_place)
    @rule()
    def remove_links(self) -> None:
        self.do(Step("remove_links"))

    @precondition(is_dead)
    @rule(point=st.sampled_from(STORAGE_POINTS + MIGRATION_POINTS[:4]), hit=st.integers(1, 2), crash=crash_specs)
    def arm_recovery_crash(self, point: str, hit: int, crash: dict[str, Any]) -> None:
        lifetime = len(self._running().lifetimes) + 1
        self.do(typed.arm({"point": point, "action": "crash", "hit": hit, "lifetime": lifetime, "crash": crash}))
