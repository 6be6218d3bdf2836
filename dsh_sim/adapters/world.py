"""The simulated external world: services tools act on, and the ledger of what happened.

The ledger is the ground truth the harness scores recovery against.  It lives outside every
simulated process, so it survives crashes; each entry says which call (and idempotency key)
caused it and whether the side effect was applied.  Services may support idempotency keys
(a repeated key is answered from the first result and applies nothing) or not, may be
read-only, and sit behind a network that can lose requests, lose responses after the effect,
deliver twice, or time out — all decided by the fault plan at ``world.deliver`` and
``world.respond``.  Requests and responses take (virtual) time, as real services do; that
time is what lets a later call's ``tool/call`` miss a write-behind window.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import trio

from runtime.tools.results import HarnessError

if TYPE_CHECKING:
    from dsh_sim.adapters.gate import DomainGate


class NetworkError(HarnessError):
    name = "NetworkError"
    code = "NETWORK_ERROR"


@attrs.frozen
class LedgerEntry:
    index: int
    service: str
    op: str
    call_id: str
    key: str | None
    applied: bool  # the side effect happened (state changed)
    note: str  # "applied" | "deduplicated" | "read" | "duplicate-delivery"
    time: float
    lifetime: int
    args: dict[str, Any] = attrs.field(factory=dict)  # what the request carried
    response: dict[str, Any] = attrs.field(factory=dict)  # what the service answered
    root: str | None = None  # the root call the request named (spec §5.4: rootCallId)


class Service:
    name = "service"
    idempotent = False
    read_only = False
    # virtual seconds: request travel + processing before the effect, and the response's way back
    request_latency = 0.02
    response_latency = 0.05

    def handle(self, op: str, args: dict[str, Any], key: str | None) -> tuple[bool, dict[str, Any]]:
        raise NotImplementedError


class PaymentService(Service):
    response_latency = 0.25  # a payment provider answers slowly

    def __init__(self, name: str, *, idempotent: bool) -> None:
        self.name = name
        self.idempotent = idempotent
        self.balances: dict[str, int] = {}
        self.by_key: dict[str, dict[str, Any]] = {}
        self.count = 0

    def handle(self, op: str, args: dict[str, Any], key: str | None) -> tuple[bool, dict[str, Any]]:
        if op == "lookup":
            found = self.by_key.get(str(args.get("key")))
            return False, {"found": found is not None, "payment": found}
        if self.idempotent and key is not None and key in self.by_key:
            return False, dict(self.by_key[key], replayed=True)
        to, amount = str(args.get("to", "")), int(args.get("amount", 0))
        self.count += 1
        self.balances[to] = self.balances.get(to, 0) + amount
        receipt = {"payment": f"{self.name}-{self.count}", "to": to, "amount": amount}
        if key is not None:
            self.by_key[key] = receipt
        return True, receipt


class MessageService(Service):
    name = "messages"
    response_latency = 0.1

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def handle(self, op: str, args: dict[str, Any], key: str | None) -> tuple[bool, dict[str, Any]]:
        self.sent.append({"to": args.get("to"), "text": args.get("text")})
        return True, {"message": len(self.sent)}


class BalanceService(Service):
    name = "balances"
    read_only = True
    request_latency = 0.01
    response_latency = 0.01

    def __init__(self, payments: PaymentService) -> None:
        self._payments = payments

    def handle(self, op: str, args: dict[str, Any], key: str | None) -> tuple[bool, dict[str, Any]]:
        account = str(args.get("account", ""))
        return False, {"account": account, "balance": self._payments.balances.get(account, 0)}


class WorkspaceService(Service):
    """Files in the simulated workspace (the shell and note tools write here)."""

    name = "workspace"
    # Writing the same content again is harmless (naturally idempotent), but the service knows
    # no keys: it does not deduplicate, so it is not judged as a keyed idempotent service.
    idempotent = False

    def __init__(self) -> None:
        self.files: dict[str, str] = {}

    def handle(self, op: str, args: dict[str, Any], key: str | None) -> tuple[bool, dict[str, Any]]:
        path, text = str(args.get("path")), str(args.get("text", ""))
        if op == "read":
            return False, {"path": path, "text": self.files.get(path)}
        self.files[path] = text  # a write is an effect even when the content is unchanged
        return True, {"path": path, "bytes": len(text.encode("utf-8", "surrogatepass"))}  # a lone surrogate counts 3


_T = TypeVar("_T")
_CONTAINERS = (dict, list, set)  # copied one level deep by a snapshot (``x.copy()`` is ``copy.copy(x)`` for these)


def _shallow(obj: _T) -> _T:
    """``copy.copy`` of a plain instance (a ``__dict__``, no ``__slots__``, no ``__copy__`` or
    reduce of its own, as the world and its services are): a new instance of the same class
    with the same attribute dict, without ``copy``'s reduce protocol (one per service per
    snapshot, and explore takes one per crash point and per recovery)."""
    clone = object.__new__(type(obj))
    clone.__dict__.update(obj.__dict__)
    return clone


class World:
    def __init__(self) -> None:
        payments = PaymentService("payments", idempotent=True)
        self.services: dict[str, Service] = {
            "payments": payments,
            "legacy_payments": PaymentService("legacy_payments", idempotent=False),
            "messages": MessageService(),
            "balances": BalanceService(payments),
            "workspace": WorkspaceService(),
        }
        self.ledger: list[LedgerEntry] = []

    def snapshot(self) -> World:
        """A copy sharing nothing this world will change: every container of the world and of
        its services is copied, one level deep, and a service that reads another (balances
        reads payments) reads the copy.  One level is enough because nothing stored in
        them is ever changed in place — handlers store new values, ledger entries are frozen.
        (``copy.deepcopy`` cost more than a millisecond per crash point explore records.)"""
        clones = {id(service): _shallow(service) for service in self.services.values()}
        for clone in clones.values():
            state = clone.__dict__
            for name, value in state.items():
                if isinstance(value, Service):
                    state[name] = clones[id(value)]
                elif type(value) in _CONTAINERS:
                    state[name] = value.copy()
        world = _shallow(self)
        state = world.__dict__
        for name, value in state.items():
            if type(value) in _CONTAINERS:
                state[name] = value.copy()
        world.services = {name: clones[id(service)] for name, service in self.services.items()}
        return world

    def applied_for(self, call_id: str) -> list[LedgerEntry]:
        """Effects caused by a call or by calls nested under it."""
        prefix = f"{call_id}:"
        return [e for e in self.ledger if e.applied and (e.call_id == call_id or e.call_id.startswith(prefix))]

    def applied_by_key(self) -> dict[tuple[str, str], int]:
        counts: dict[tuple[str, str], int] = {}
        for e in self.ledger:
            if e.applied and e.key is not None:
                counts[(e.service, e.key)] = counts.get((e.service, e.key), 0) + 1
        return counts

    async def call(
        self,
        gate: DomainGate,
        service_name: str,
        op: str,
        args: dict[str, Any],
        *,
        call_id: str,
        key: str | None,
        now: float,
        lifetime: int,
        root_call_id: str | None = None,
    ) -> dict[str, Any]:
        """One request over the simulated network; moment 3 is the ledger entry."""
        service = self.services[service_name]
        details = {"service": service_name, "op": op, "call_id": call_id, "root_call_id": root_call_id or call_id}
        fault = await gate("world.deliver", details)
        if fault is not None and fault.action == "request_lost":
            raise NetworkError(f"request to {service_name} was lost")
        if fault is not None and fault.action == "timeout":
            await trio.sleep(fault.delay)
            raise NetworkError(f"request to {service_name} timed out")
        await trio.sleep(service.request_latency)
        deliveries = 2 if fault is not None and fault.action == "duplicate" else 1
        response: dict[str, Any] = {}
        for delivery in range(deliveries):
            applied, response = service.handle(op, args, key if service.idempotent else None)
            note = "applied" if applied else ("read" if service.read_only or op in ("lookup", "read") else "deduplicated")
            if delivery:
                note = "duplicate-delivery"
            self.ledger.append(
                LedgerEntry(
                    len(self.ledger),
                    service_name,
                    op,
                    call_id,
                    key,
                    applied,
                    note,
                    now,
                    lifetime,
                    copy.deepcopy(args),
                    copy.deepcopy(response),
                    root_call_id,
                )
            )
        fault = await gate("world.respond", details)
        await trio.sleep(service.response_latency)
        if fault is not None and fault.action == "response_lost":
            raise NetworkError(f"the response from {service_name} was lost")
        if fault is not None and fault.action == "timeout":
            await trio.sleep(fault.delay)
            raise NetworkError(f"the response from {service_name} timed out")
        return response
