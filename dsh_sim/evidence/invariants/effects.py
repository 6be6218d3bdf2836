"""Checks against the world's ledger that hold at any moment (idempotent convergence)."""

from __future__ import annotations

import functools
import re
from typing import Any

from dsh_sim.evidence.invariants.base import Invariant, Judge, fail
from dsh_sim.evidence.oracles.identity_memo import IdentityMemo

NAME = "idempotent_retry_converges"


@functools.lru_cache(maxsize=4096)  # judged after every step: the same ids again and again
def logical_call(call_id: str) -> str:
    """A call and the harness's retries of it (``<id>-retry<n>``) are one logical request."""
    return re.sub(r"-retry[0-9]+$", "", call_id)


# (ids of the ledger's entries, which services are idempotent) -> (the entries, the findings)
_FINDINGS: IdentityMemo[list[tuple[Any, ...]]] = IdentityMemo(1024)


def check_idempotent_keys(obs: Judge) -> None:
    """One key, one effect — and one logical request (original plus retries), one effect.

    The findings are remembered per ledger: judged after every step and boot, and explore's
    recoveries of one crash point start from copies of one ledger (the same entry objects).
    The key is complete: the entries themselves (frozen, so their service, op, call id, key
    and ``applied`` never change) and each service's ``idempotent`` flag."""
    obs.count(NAME)
    world = obs.sim.world
    flags = tuple((name, service.idempotent) for name, service in world.services.items())
    for message, call, effects in _FINDINGS.remember(tuple(world.ledger), flags, _findings, world):
        fail(obs, NAME, message, call, *effects)


def _findings(world: Any) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for (service, key), count in sorted(world.applied_by_key().items()):
        if world.services[service].idempotent and count > 1:
            out.append((f"{count} applied effects for key {key!r} at idempotent service {service}", key, ()))
    per_request: dict[tuple[str, str], list[str]] = {}
    for entry in world.ledger:
        if entry.applied and world.services[entry.service].idempotent and entry.op == "charge":
            per_request.setdefault((entry.service, logical_call(entry.call_id)), []).append(f"{entry.call_id} (key {entry.key})")
    for (service, call), effects in sorted(per_request.items()):
        if len(effects) > 1:
            out.append((f"a request and its retries applied {len(effects)} effects at idempotent service {service}", call, tuple(effects)))
    return out


IDEMPOTENT_RETRY_CONVERGES = Invariant(
    NAME,
    ("a keyed request to an idempotent service has at most one applied effect, however often it is retried"),
    checks={
        "boot": lambda obs, _: check_idempotent_keys(obs),
        "step": lambda obs, _: check_idempotent_keys(obs),
    },  # (the ledger can go wrong without any crash)
)
