"""Checks against the world's ledger that hold at any moment (idempotent convergence)."""

from __future__ import annotations

import functools
import re

from dsh_sim.evidence.invariants.base import Judge, fail


@functools.lru_cache(maxsize=4096)  # judged after every step: the same ids again and again
def logical_call(call_id: str) -> str:
    """A call and the harness's retries of it (``<id>-retry<n>``) are one logical request."""
    return re.sub(r"-retry[0-9]+$", "", call_id)


def check_idempotent_keys(obs: Judge) -> None:
    """One key, one effect — and one logical request (original plus retries), one effect."""
    obs.count("idempotent_retry_converges")
    world = obs.sim.world
    for (service, key), count in sorted(world.applied_by_key().items()):
        if world.services[service].idempotent and count > 1:
            fail(obs, "idempotent_retry_converges", f"{count} applied effects for key {key!r} at idempotent service {service}", key)
    per_request: dict[tuple[str, str], list[str]] = {}
    for entry in world.ledger:
        if entry.applied and world.services[entry.service].idempotent and entry.op == "charge":
            per_request.setdefault((entry.service, logical_call(entry.call_id)), []).append(f"{entry.call_id} (key {entry.key})")
    for (service, call), effects in sorted(per_request.items()):
        if len(effects) > 1:
            fail(
                obs,
                "idempotent_retry_converges",
                f"a request and its retries applied {len(effects)} effects at idempotent service {service}",
                call,
                *effects,
            )
