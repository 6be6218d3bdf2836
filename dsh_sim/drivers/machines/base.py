"""What every state machine shares: the simulation, the recorded steps, the invariant check."""

from __future__ import annotations

import sys
from typing import Any

from hypothesis import event, target
from hypothesis import strategies as st
from hypothesis.errors import StopTest
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from dsh_sim.drivers.machines import typed
from dsh_sim.drivers.machines.strategies import corruptions, crash_specs
from dsh_sim.engine.lifetime import Lifetime
from dsh_sim.engine.machine import Simulation
from dsh_sim.evidence.checker import Checker
from dsh_sim.scenario.args import Step
from dsh_sim.scenario.steps import apply


# Preconditions are named functions, not lambdas: Hypothesis describes every precondition it
# evaluates (several per rule draw), and a lambda's description is a look-up in its source cache
# where a function's is its name.  Each reads the machine's property, so subclasses' overrides hold.
def is_alive(machine: SimulationMachine) -> bool:
    return machine.alive


def is_dead(machine: SimulationMachine) -> bool:
    return machine.dead


def can_corrupt(machine: SimulationMachine) -> bool:
    return machine.alive and machine._running().config.compression == "zstd"


def has_log(machine: SimulationMachine) -> bool:
    sim = machine.sim
    return machine.quiet and sim is not None and sim.disk.resolve(sim.config.log_path) is not None


class SimulationMachine(RuleBasedStateMachine):
    """Rules call :meth:`do`; every step is recorded so a failure becomes a scenario file."""

    last: SimulationMachine | None  # the latest instance, set on the concrete class
    # The first example whose graceful stop failed while Hypothesis was discarding it, with the
    # failure's message (see :meth:`teardown`): kept only on a class whose driver reads and
    # resets it (``keeps_unreported``, the fuzz driver's run class), since it holds a simulation.
    keeps_unreported = False
    unreported: tuple[SimulationMachine, str] | None = None
    # Whether the simulations record their trace digest.  Nothing reads a machine run's digest:
    # an example is never replayed from it, and a failing one becomes a scenario whose digest
    # comes from its replay (dsh_sim.drivers.fuzz).  Recording it (a record per task step,
    # named point and filesystem call, plus a trio instrument) was about a tenth of a fuzz run's
    # CPU.  benchmarks/bench_fuzz.py --trace turns it on to compare runs record by record.
    record_trace = False

    def __init__(self) -> None:
        super().__init__()
        type(self).last = self
        self.sim: Simulation | None = None
        self.checker: Checker | None = None
        self.seed = 0
        self.steps: list[Step] = []
        self.failure: str | None = None

    def _running(self) -> Simulation:
        """The simulation ``start`` made (every rule and teardown that needs one runs after it)."""
        if self.sim is None:
            raise RuntimeError(f"{type(self).__name__} has no simulation: start has not run")
        return self.sim

    def _current(self) -> Lifetime:
        """The current process (rules that need one are guarded by ``alive``)."""
        life = self._running().current
        if life is None:
            raise RuntimeError(f"{type(self).__name__}: the simulation has no current process")
        return life

    def do(self, step: Step) -> str:
        assert self.sim is not None
        self.steps.append(step)
        outcome = apply(self.sim, step)
        if outcome.startswith("crashed"):
            self.crashed()
        return outcome

    def do_while_alive(self, *steps: Step) -> None:
        """Several steps in a row, stopping where one leaves no live process (a crash armed
        earlier may strike in any of them); the recorded steps are exactly the ones run."""
        for step in steps:
            if not self.alive:
                return
            self.do(step)

    @property
    def alive(self) -> bool:
        return self.sim is not None and self.sim.alive

    @property
    def dead(self) -> bool:
        return self.sim is not None and not self.sim.alive

    @property
    def quiet(self) -> bool:
        """Alive and not in the middle of anything (the agent machine: no turn in progress)."""
        return self.alive

    # -- rules every machine has ---------------------------------------------------------------

    @precondition(is_alive)
    @rule(crash=crash_specs)
    def crash_now(self, crash: dict[str, Any]) -> None:
        self.do(typed.crash_now(crash))

    @precondition(can_corrupt)
    @rule(fault=corruptions, hit=st.integers(1, 2))
    def corrupt(self, fault: dict[str, Any], hit: int) -> None:
        """A byte of the log flips on the medium (bit rot) once a batch is durable: a damaged
        complete frame must be refused, never repaired or read past.  zstd only: a raw log has
        no checksum, and the spec reads damage there as a crash tail (§ raw scanner)."""
        self.do(typed.arm({**fault, "hit": hit, "lifetime": len(self._running().lifetimes)}))

    @precondition(is_dead)
    @rule()
    def reboot(self) -> None:
        self.do(Step("boot"))

    @precondition(has_log)
    @rule()
    def second_writer(self) -> None:
        self.do(Step("second_writer"))

    def crashed(self) -> None:
        record = self.sim.history.crashes[-1] if self.sim is not None and self.sim.history.crashes else None
        if record is not None:
            event(f"crash {record.label} at {record.point or 'quiescence'} ({record.phase})")

    @invariant()
    def no_violation(self) -> None:
        if self.checker is not None and self.checker.violations:
            self.failure = self.checker.violations[0].invariant
            raise AssertionError("\n".join(v.describe() for v in self.checker.violations))

    def teardown(self) -> None:
        """Stop gracefully, and judge the stop as every step is judged: a graceful stop that
        loses the session is a finding (replay of the saved scenario reports it the same way).

        When Hypothesis ran out of data for the example (a quarter of them), the teardown runs
        while its ``StopTest`` unwinds, and Hypothesis discards the example together with any
        error raised here.  The stop is judged all the same; its failure is kept on the class
        (:attr:`unreported`) for the driver, since the steps run so far are a whole scenario."""
        if self.sim is None:
            return
        judged = self.failure is None  # an example that already failed is not judged twice
        discarded = isinstance(sys.exc_info()[1], StopTest)
        try:
            self.sim.shutdown()
        finally:
            target(float(len(self.sim.history.crashes)), label="crashes survived")
        if not judged:
            return
        if not discarded:
            self.no_violation()
            return
        try:
            self.no_violation()
        except AssertionError as err:
            cls = type(self)
            if cls.keeps_unreported and cls.unreported is None:
                cls.unreported = (self, str(err))
