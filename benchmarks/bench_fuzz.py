"""Hypothesis rule-steps per second and crash-recover cycles per second, full runtime.

Runs the durability state machine (the whole agent runtime: loop, checkpoint policy,
approval, write-behind store, JSONL+zstd backend, over SimFS and the simulated world) with
``run_state_machine_as_test`` for ``--examples`` examples of up to ``--steps`` rules each,
generation only (no shrinking; the correct runtime finds nothing to shrink), seeded.

Figures, over the CPU time of the whole Hypothesis run (``time.process_time``: the machine is
shared, so wall time would measure the neighbours):

* steps/s — simulation steps applied (``len(machine.steps)``, what ``dsh-sim fuzz`` counts);
* crash-recover cycles/s — a crash followed by a boot that recovered from it (one coverage
  case in ``checker.cases`` each).

The workload fingerprint hashes, for every example in order, its steps, what the checker
judged (checks counted, violations), how often each named point was reached, the virtual time
and the bytes of the session log at the end: two builds that print the same fingerprint ran
the same examples to the same outcomes, so a speed-up that prints it unchanged did not test
less.  The machines record no trace digest (``dsh-sim fuzz`` reads none); ``--trace`` records
it, as the simulations did before, and also prints the trace fingerprint — steps, trace
digest and judgements of every example — which compares two builds record by record (task
steps, points, faults, filesystem calls).  The run uses the fixed constants pool of
``dsh-sim fuzz`` (:mod:`dsh_sim.drivers.constants`), so the examples do not depend on what
the process happened to import.

There is no outside baseline for these; the ratio printed is internal to the run: the
CPU cost of one crash-recover cycle (the step that crashed + the recovery boot) against a
plain work step (a prompt or append/flush that completed), plus the share of the CPU time
spent inside steps rather than in Hypothesis (drawing data, preconditions, invariants).
``--machine storage`` measures the persistence-level machine instead.

    python benchmarks/bench_fuzz.py --examples 40 --seed 1
"""

from __future__ import annotations

import argparse
import hashlib
import time
from typing import Any

from _bench import print_table
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from dsh_sim.drivers import profiles
from dsh_sim.drivers.constants import fixed_constants, project_constants
from dsh_sim.drivers.machines.durability import DurabilityMachine
from dsh_sim.drivers.machines.storage import StorageMachine
from dsh_sim.engine.collector import CollectorPolicy
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.scenario.codec import describe_step
from dsh_sim.scenario.steps import Step

MACHINES = {"durability": DurabilityMachine, "storage": StorageMachine}
WORK_OPS = ("prompt", "retry_unknown", "append", "flush")


class Tally:
    def __init__(self) -> None:
        self.examples = 0
        self.steps = 0
        self.cycles = 0
        self.crashes = 0
        self.kinds: dict[str, list[float]] = {}
        self.fingerprint = hashlib.sha256()
        self.trace_fingerprint = hashlib.sha256()  # --trace only
        self.fingerprint_cpu = 0.0  # the fingerprint's own cost, left out of the figures

    def add(self, kind: str, seconds: float) -> None:
        self.kinds.setdefault(kind, []).append(seconds)

    def mean(self, kind: str) -> float:
        values = self.kinds.get(kind, [])
        return sum(values) / len(values) if values else float("nan")


def counting_machine(base: type, tally: Tally, seed: int, trace: bool = False) -> type:
    """``base`` with every step timed and classified, and each example's totals counted."""

    def do(self: Any, step: Step) -> str:
        sim = self.sim
        recovering = step.op == "boot" and bool(sim.lifetimes) and sim.lifetimes[-1].crash is not None
        start = time.process_time()
        outcome = base.do(self, step)
        seconds = time.process_time() - start
        if outcome.startswith("crashed"):
            kind = "crashing step"
        elif recovering:
            kind = "recovery boot"
        elif step.op == "boot":
            kind = "first boot"
        elif step.op in WORK_OPS:
            kind = "work step"
        else:
            kind = "other step"
        tally.add(kind, seconds)
        return outcome

    def teardown(self: Any) -> None:
        try:
            base.teardown(self)
        finally:
            if self.sim is not None:
                tally.examples += 1
                tally.steps += len(self.steps)
                tally.cycles += len(self.checker.cases)
                tally.crashes += len(self.sim.history.crashes)
                begun = time.process_time()
                sim, checker = self.sim, self.checker
                steps = [describe_step(s) for s in self.steps]
                judged = (sorted(checker.checked.items()), [v.describe() for v in checker.violations])
                log = sim.disk.read_path(sim.config.log_path)
                end = (sorted(sim.point_hits.items()), sim.now(), hashlib.sha256(log).hexdigest() if log is not None else None)
                tally.fingerprint.update(repr((steps, judged, end)).encode())
                if sim.trace.enabled:
                    tally.trace_fingerprint.update(repr((steps, sim.trace.digest(), judged)).encode())
                tally.fingerprint_cpu += time.process_time() - begun

    cls = type(f"Bench{base.__name__}", (base,), {"do": do, "teardown": teardown, "last": None, "record_trace": trace})
    cls._hypothesis_internal_use_seed = seed  # what @seed does (as dsh_sim.drivers.fuzz sets it)
    return cls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machine", choices=sorted(MACHINES), default="durability")
    parser.add_argument("--examples", type=int, default=40, help="Hypothesis examples (default 40)")
    parser.add_argument(
        "--steps",
        type=int,
        default=profiles.fuzz_settings().stateful_step_count,
        help="stateful_step_count: rules per example (default: the fuzz profile's, as dsh-sim fuzz)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--trace",
        action="store_true",
        help="record every simulation's trace digest (dsh-sim fuzz does not) and print the trace fingerprint",
    )
    args = parser.parse_args()

    tally = Tally()
    machine = counting_machine(MACHINES[args.machine], tally, args.seed, args.trace)
    run_settings = settings(profiles.fuzz_settings(), max_examples=args.examples, stateful_step_count=args.steps, phases=(Phase.generate,))
    project_constants()  # built once per process (cached), before the clock starts
    start = time.process_time()
    # the collector settings and the fixed constants pool dsh-sim fuzz runs with: the same seed
    # draws the same examples whatever the process imported (and whatever the code imports)
    with capture_runtime_logs(), CollectorPolicy() as collector, fixed_constants():
        collector.freeze()  # as dsh_sim.drivers.fuzz does
        run_state_machine_as_test(machine, settings=run_settings)
    cpu = time.process_time() - start - tally.fingerprint_cpu

    in_steps = sum(sum(v) for v in tally.kinds.values())
    rows = []
    for kind in ("first boot", "work step", "other step", "crashing step", "recovery boot"):
        values = tally.kinds.get(kind, [])
        rows.append([kind, len(values), sum(values), 1e3 * tally.mean(kind)])
    print(
        f"{args.machine} machine: {tally.examples} examples, {tally.steps} steps, {tally.crashes} crashes, "
        f"{tally.cycles} crash-recover cycles in {cpu:.2f} CPU-s (seed {args.seed}, ≤{args.steps} rules/example)"
    )
    print_table(["step kind", "count", "CPU s", "mean ms"], rows)
    cycle = tally.mean("crashing step") + tally.mean("recovery boot")
    plain = tally.mean("work step")
    print()
    print_table(
        ["figure", "value"],
        [
            ["rule-steps / CPU-s", tally.steps / cpu],
            ["examples / CPU-s", tally.examples / cpu],
            ["crash-recover cycles / CPU-s", tally.cycles / cpu],
            ["ms per crash-recover cycle (crashing step + recovery boot)", 1e3 * cycle],
            ["ms per plain work step", 1e3 * plain],
            ["ratio cycle : plain step", cycle / plain],
            ["share of CPU time inside steps", in_steps / cpu],
        ],
    )
    print(
        f"workload fingerprint (steps, judgements, point hits, virtual time, log bytes of every example): {tally.fingerprint.hexdigest()[:16]}"
    )
    if args.trace:
        print(f"trace fingerprint (steps, trace digests, judgements of every example): {tally.trace_fingerprint.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
