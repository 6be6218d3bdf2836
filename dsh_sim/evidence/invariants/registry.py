"""The invariant registry: every named invariant once, in the scenario language's order.

This is the one list.  The checker runs each invariant's checks at the hooks it names, in this
order; the report, the scenario reference and the docs read names and descriptions from here;
a scenario's ``expect`` may name exactly these (:data:`dsh_sim.engine.vocabulary.INVARIANT_NAMES`,
which the kernel knows without knowing the checks — checked equal below).
"""

from __future__ import annotations

import functools

from dsh_sim.engine.points import spec
from dsh_sim.engine.vocabulary import INVARIANT_NAMES
from dsh_sim.evidence.invariants import (
    calls,
    closed,
    differential,
    effects,
    errors,
    file_effects,
    hang,
    lease,
    links,
    live,
    lossless,
    medium,
    model_exchange,
    models,
    pace,
    pipeline,
    points,
    recovery,
    residue,
    route,
    storage,
    window,
)
from dsh_sim.evidence.invariants.base import Check, Hook, Invariant

REGISTRY: tuple[Invariant, ...] = (
    recovery.SEQ_DENSE,
    recovery.COMMITTED_BYTES_STABLE,
    recovery.ACKED_EVENTS_SURVIVE,
    calls.ONE_RESULT_PER_CALL,
    calls.VERDICT_SOUNDNESS,
    live.CHECKPOINT_BEFORE_EFFECT,
    effects.IDEMPOTENT_RETRY_CONVERGES,
    recovery.REPAIR_IDEMPOTENT,
    calls.APPROVAL_AUDIT,
    pipeline.APPROVAL_POLICY_FOLLOWED,
    live.APPROVAL_GATE,
    calls.FAIL_CLOSED,
    recovery.CORRUPT_FRAME_REFUSED,
    recovery.RECOVERY_SUCCEEDS,
    storage.LOCK_EXCLUSION,
    storage.FIDELITY,
    recovery.RECOVERY_MAXIMAL,
    file_effects.FILE_EFFECTS_DURABLE,
    lossless.LOSSLESS_REFUSED,
    links.LINKS_NOT_FOLLOWED,
    storage.EVENTUALLY_DURABLE,
    storage.FAILED_APPEND_ROLLED_BACK,
    models.REFERENCE_MODEL,
    models.LOG_GRAMMAR,
    models.WORLD_AGREEMENT,
    medium.DURABLE_WHEN_ACKNOWLEDGED,
    medium.READER_AGREES,
    pipeline.CANCELLATION_HONOURED,
    pipeline.TOOL_SCHEDULE,
    points.POINTS_TRUTHFUL,
    pipeline.RESULT_SHAPE,
    pipeline.POST_EXECUTE_ONCE,
    pace.TURN_PROGRESS,
    pace.WRITE_BEHIND_TIMELY,
    closed.CLOSED_HANDLE_REFUSES,
    residue.NO_RESIDUE,
    medium.FORMAT_CONFORMANCE,
    errors.ERRORS_DOCUMENTED,
    differential.DSH_AGREES,
    differential.ROUTE_AGREES,
    hang.NO_HANG_INVARIANT,
    storage.MIGRATION_ATOMIC,
    window.WRITE_BEHIND_WINDOW,
    route.ROUTE_DECISIONS,
    lease.LEASE_HELD,
    lease.FOREIGN_FILES_KEPT,
    model_exchange.MODEL_EXCHANGE,
)

INVARIANTS: dict[str, str] = {invariant.name: invariant.description for invariant in REGISTRY}
BY_NAME: dict[str, Invariant] = {invariant.name: invariant for invariant in REGISTRY}

if tuple(INVARIANTS) != INVARIANT_NAMES:
    raise ImportError(f"the registry differs from engine.vocabulary.INVARIANT_NAMES: {set(INVARIANTS) ^ set(INVARIANT_NAMES)}")


@functools.cache
def checks_at(hook: Hook) -> tuple[Check, ...]:
    """Every check registered at ``hook``, in the registry's order."""
    if hook == "point":
        raise ValueError("the point hook's checks depend on the point: checks_at_point")
    return tuple(invariant.checks[hook] for invariant in REGISTRY if hook in invariant.checks)


@functools.cache
def checks_at_point(name: str) -> tuple[Check, ...]:
    """Every check registered at the named point ``name`` (an undeclared name is refused)."""
    layer = spec(name).layer
    return tuple(
        invariant.checks["point"]
        for invariant in REGISTRY
        if "point" in invariant.checks and (name in invariant.points if invariant.points is not None else layer == "runtime")
    )


def with_memory() -> tuple[Invariant, ...]:
    """The invariants that remember something across a simulation."""
    return tuple(invariant for invariant in REGISTRY if invariant.memory is not None)
