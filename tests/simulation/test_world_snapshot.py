"""World.snapshot: a copy that shares nothing either side will change.

Explore restores the world from a snapshot at every recovery; a snapshot that shared a
service's container with the world it came from would let one recovery's effects leak into
the next.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dsh_sim.adapters import world as world_module
from dsh_sim.adapters.world import BalanceService, LedgerEntry, PaymentService, World


def _paid(world: World) -> World:
    world.services["payments"].handle("pay", {"to": "bob", "amount": 5}, "k1")
    world.services["messages"].handle("send", {"to": "ann", "text": "hi"}, None)
    world.services["workspace"].handle("write", {"path": "a", "text": "x"}, None)
    world.ledger.append(LedgerEntry(0, "payments", "pay", "c1", "k1", True, "applied", 0.0, 1, {}, {}, None))
    return world


def _state(world: World) -> dict[str, Any]:
    """Every service's attributes (a service another reads, by its class) and the ledger."""
    services = {
        name: {key: type(value) if isinstance(value, world_module.Service) else copy.deepcopy(value) for key, value in vars(s).items()}
        for name, s in world.services.items()
    }
    return services | {"ledger": list(world.ledger)}


def test_a_snapshot_and_its_world_change_independently() -> None:
    world = _paid(World())
    before = _state(world)
    snap = world.snapshot()
    assert _state(snap) == before
    assert {name: type(s) for name, s in snap.services.items()} == {name: type(s) for name, s in world.services.items()}
    # the snapshot changes: the world does not
    _paid(snap)
    snap.services["payments"].handle("pay", {"to": "carl", "amount": 7}, "k2")
    assert _state(world) == before
    # the world changes: an earlier snapshot does not
    again = world.snapshot()
    kept = _state(again)
    _paid(world)
    assert _state(again) == kept


def test_a_snapshots_balance_service_reads_the_snapshots_payments() -> None:
    world = _paid(World())
    snap = world.snapshot()
    balances = snap.services["balances"]
    assert isinstance(balances, BalanceService)
    snap.services["payments"].handle("pay", {"to": "bob", "amount": 10}, "k9")
    assert balances.handle("get", {"account": "bob"}, None)[1]["balance"] == 15
    assert world.services["balances"].handle("get", {"account": "bob"}, None)[1]["balance"] == 5


def test_the_test_sees_a_snapshot_that_shares_a_container(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks above fail on a snapshot that copies services without their containers."""
    monkeypatch.setattr(world_module, "_CONTAINERS", ())
    world = _paid(World())
    snap = world.snapshot()
    assert isinstance(snap.services["payments"], PaymentService)
    with pytest.raises(AssertionError):
        test_a_snapshot_and_its_world_change_independently()
