"""The durability state machine: crash the runtime between any two moments of a call.

Rules draw concrete steps (a prompt with its model script, a crash aimed at a named point,
an I/O or network fault, a cancellation, a reboot ...) and run them through the same
:func:`dsh_sim.scenario.steps.apply` the replayer uses.  Every step is recorded, so the minimal
failing example Hypothesis shrinks to is saved as a scenario file, not a blob.
"""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import event, target
from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from dsh_sim.drivers.machines import typed
from dsh_sim.drivers.machines.base import SimulationMachine, is_alive, is_dead
from dsh_sim.drivers.machines.strategies import (
    BOUNDARY_CHOICES,
    FS_POINTS,
    MOMENT_POINTS,
    aimable_calls,
    aimed_crash_rule,
    crash_specs,
    deployments,
    domain_faults,
    io_faults,
    timings,
    turn_script,
)
from dsh_sim.engine.config import SimConfig
from dsh_sim.engine.machine import Simulation
from dsh_sim.evidence.checker import Checker
from dsh_sim.scenario.args import Step


def is_idle(machine: DurabilityMachine) -> bool:
    return machine.idle


def in_turn(machine: DurabilityMachine) -> bool:
    return machine.alive and machine._current().agent.turn_active


def has_unknown_outcome(machine: DurabilityMachine) -> bool:
    """Idle, and the latest recovery left a call whose outcome is unknown."""
    report = machine._current().report if machine.idle else None
    return report is not None and "TOOL_OUTCOME_UNKNOWN" in report.verdicts.values()


class DurabilityMachine(SimulationMachine):
    """Subclass and set ``config`` to fuzz another deployment (e.g. no checkpoint policy)."""

    config = SimConfig()
    last: DurabilityMachine | None = None

    def __init__(self) -> None:
        super().__init__()
        self.next_id = [1]
        self.policy = [False]  # the deployment mounts its policy plugin (drawn at start)
        # one strategy per example, not one per prompt: a new composite is wrapped and validated
        # on its first draw; drawing from this one gives exactly the same scripts
        self.turn_scripts = turn_script(self.next_id, self.policy)

    def crashed(self) -> None:
        super().crashed()
        for boundary in sorted(set(self._running().history.crashes[-1].boundaries.values())):
            event(f"crash with a call at boundary {boundary}")

    @property
    def alive(self) -> bool:
        life = self.sim.current if self.sim is not None and self.sim.alive else None  # alive: current is set
        return life is not None and life.agent is not None

    @property
    def idle(self) -> bool:
        return self.alive and not self._current().agent.turn_active

    @property
    def quiet(self) -> bool:
        return self.idle

    # -- rules -----------------------------------------------------------------------------

    @initialize(
        seed=st.integers(0, 2**31 - 1),
        compression=st.sampled_from(["zstd", "none"]),
        timing=timings,
        policy=st.booleans(),
        shape=deployments,
    )
    def start(self, seed: int, compression: str, timing: Any = None, policy: bool = False, shape: Any = None) -> None:
        self.seed = seed
        self.policy[0] = policy
        cfg = attrs.evolve(type(self).config, compression=compression, policy=policy, **(timing or {}), **(shape or {}))
        self.sim = Simulation(seed, cfg, trace=self.record_trace)
        self.checker = Checker.attach(self.sim)
        self.do(Step("boot"))

    @precondition(is_idle)
    @rule(data=st.data())
    def prompt(self, data: st.DataObject) -> None:
        self.do(typed.prompt(data.draw(self.turn_scripts)))

    @precondition(is_idle)
    @rule(data=st.data(), boundary=st.sampled_from(BOUNDARY_CHOICES[1:]), crash=crash_specs)
    def prompt_crashing(self, data: st.DataObject, boundary: str, crash: dict[str, Any]) -> None:
        """A prompt with a crash aimed between two moments of one of its calls."""
        script = data.draw(self.turn_scripts)
        calls = aimable_calls(script)
        if calls:
            step, call_id = data.draw(st.sampled_from(calls[::-1]))  # later calls first: they depend on earlier ones
            event(f"crash aimed at {boundary}")
            self.do(typed.arm(aimed_crash_rule(script, step, call_id, boundary, crash, len(self._running().lifetimes))))
        self.do(typed.prompt(script))

    @precondition(is_alive)
    @rule(
        fault=st.one_of(
            st.builds(
                lambda p, c: {"point": p, "action": "crash", "crash": c},
                st.sampled_from(MOMENT_POINTS + FS_POINTS + ("llm.chunk",)),  # llm.chunk: mid-stream, maybe no call pending
                crash_specs,
            ),
            io_faults,
            domain_faults,
        ),
        hit=st.integers(1, 3),
    )
    def arm(self, fault: dict[str, Any], hit: int) -> None:
        """A crash at any named point, or an I/O, network, approval, sandbox, or model fault."""
        self.do(typed.arm({**fault, "hit": hit, "lifetime": len(self._running().lifetimes)}))

    @precondition(is_dead)
    @rule(point=st.sampled_from(FS_POINTS + ("persist.batch.durable",)), hit=st.integers(1, 3), crash=crash_specs)
    def arm_recovery_crash(self, point: str, hit: int, crash: dict[str, Any]) -> None:
        lifetime = len(self._running().lifetimes) + 1
        self.do(typed.arm({"point": point, "action": "crash", "hit": hit, "lifetime": lifetime, "crash": crash}))

    @precondition(is_alive)
    @rule(seconds=st.sampled_from([0.05, 0.2, 1.0]))
    def advance(self, seconds: float) -> None:
        self.do(typed.advance(seconds))

    @precondition(in_turn)
    @rule()
    def cancel(self) -> None:
        self.do(Step("cancel"))

    @precondition(is_idle)
    @rule(
        change=st.one_of(
            st.builds(lambda p: ("set_approval_policy", {"policy": p}), st.sampled_from(["ask", "never"])),
            st.builds(lambda m: ("set_sandbox_mode", {"mode": m}), st.sampled_from(["read-only", "workspace-write", "danger-full-access"])),
        )
    )
    def change_policy(self, change: tuple[str, dict[str, Any]]) -> None:
        """An approval-policy or sandbox-mode change by the user."""
        op, args = change
        if op == "set_approval_policy" and self._current().live_runtime().approval is None:
            return
        self.do(typed.policy_change(op, args))

    @precondition(has_unknown_outcome)
    @rule()
    def retry_unknown(self) -> None:
        self.do(Step("retry_unknown"))

    # -- invariants --------------------------------------------------------------------------

    def teardown(self) -> None:
        super().teardown()
        if self.sim is not None:
            if self.checker is None:
                raise RuntimeError("DurabilityMachine has a simulation but no checker")
            target(
                float(sum(n for (code, _), n in self.checker.verdict_counts.items() if code == "TOOL_OUTCOME_UNKNOWN")),
                label="unknown verdicts",
            )
