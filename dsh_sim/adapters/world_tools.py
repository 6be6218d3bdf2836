"""Simulation tools over the World: every kind the durability route must handle.

| tool | kind |
|---|---|
| ``pay`` | side effect, idempotency key (the call id) forwarded |
| ``pay_legacy`` | side effect, service has no idempotency |
| ``send_message`` | side effect, no idempotency, needs approval |
| ``get_balance`` / ``lookup_payment`` | read-only, concurrency-safe for the arguments they read (see :func:`declared_concurrency_safe`) |
| ``write_note`` | file write into the simulated workspace |
| ``batch_pay`` | nested dispatch of ``pay`` calls |
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dsh_sim.adapters.world import World
from runtime.tools.registry import ToolExecution
from runtime.tools.results import HarnessError, ToolResult

TOOL_KINDS: dict[str, str] = {
    "pay": "side-effect/keyed",
    "pay_legacy": "side-effect/no-key",
    "send_message": "side-effect/approval",
    "get_balance": "read-only/parallel",
    "lookup_payment": "read-only/parallel",
    "write_note": "workspace-write",
    "batch_pay": "nested",
    "shell": "sandboxed",
    "write_file": "runtime-file",  # the runtime's own tool (runtime/tools/files.py) on the simulated disk: config file_tools
    "no_such_tool": "unknown",  # a name the model invented: the deployment has no such tool (its call must fail closed, alone)
}

# Each world tool's service and operation: the contract the tools implement and the world
# agreement oracle (dsh_sim.evidence.oracles.agreement) holds the log to.
SERVICES: dict[str, tuple[str, str]] = {
    "pay": ("payments", "charge"),
    "pay_legacy": ("legacy_payments", "charge"),
    "send_message": ("messages", "send"),
    "get_balance": ("balances", "read"),
    "lookup_payment": ("payments", "lookup"),
    "write_note": ("workspace", "write"),
}
CONCURRENCY_SAFE = frozenset({"get_balance", "lookup_payment"})


def declared_concurrency_safe(name: str, arguments: Any) -> Any:
    """A world tool's own answer to "may this call run beside others?" (``is_concurrency_safe``).

    The read-only tools say yes; ``get_balance`` first looks at the account it would read, as a
    tool whose answer depends on its arguments does, and — like a careless third-party
    classifier — raises on arguments that have none (the runtime must then run the call alone).
    ``lookup_payment`` says ``True`` for arguments it can read as a lookup (an object, even an
    empty one: the spec parses empty arguments as ``{}``), and otherwise answers with what it was
    given — raw text that is not JSON (truthy, yet not ``True``: the call runs alone) or
    ``None`` — as a classifier written in a looser language might.
    """
    if name == "get_balance":
        return isinstance(arguments["account"], str)
    if name == "lookup_payment":
        return True if isinstance(arguments, dict) else arguments
    return name in CONCURRENCY_SAFE


# What each tool's arguments look like (the scenario reference and ``dsh-sim new`` show these).
TOOL_EXAMPLES: dict[str, dict[str, Any]] = {
    "pay": {"to": "bob", "amount": 7},
    "pay_legacy": {"to": "bob", "amount": 7},
    "send_message": {"to": "alice", "text": "hi"},
    "get_balance": {"account": "bob"},
    "lookup_payment": {"key": "c1"},
    "write_note": {"path": "/sim/workspace/notes.txt", "text": "a"},
    "batch_pay": {"payments": [{"to": "bob", "amount": 1}, {"to": "alice", "amount": 2}]},
    "shell": {"argv": ["write", "out.txt", "x"]},
    "write_file": {"path": "report.txt", "content": "hello"},
    "no_such_tool": {},
}

if TYPE_CHECKING:
    from dsh_sim.adapters.gate import DomainGate


class WorldTool:
    def __init__(
        self,
        name: str,
        service: str,
        op: str,
        world: World,
        gate: DomainGate,
        now: Callable[[], float],
        lifetime: int,
        *,
        concurrency_safe: bool = False,
        requires_approval: bool = False,
    ) -> None:
        self.name = name
        self.description = f"{TOOL_KINDS.get(name, 'tool')} tool over the simulated {service} service"
        self._service = service
        self._op = op
        self._world = world
        self._gate = gate
        self._now = now
        self._lifetime = lifetime
        self._safe = concurrency_safe
        self.requires_approval = requires_approval

    def is_concurrency_safe(self, arguments: Any) -> Any:  # (a third-party answer: not always a bool)
        return declared_concurrency_safe(self.name, arguments) if self._safe else False

    async def execute(self, ex: ToolExecution) -> ToolResult:
        args = ex.arguments if isinstance(ex.arguments, dict) else {}
        key = args.get("idempotency_key") or ex.idempotency_key
        response = await self._world.call(
            self._gate,
            self._service,
            self._op,
            args,
            call_id=ex.call_id,
            key=key,
            now=self._now(),
            lifetime=self._lifetime,
            root_call_id=ex.root_call_id,
        )
        return ToolResult.text(repr(sorted(response.items())), meta={"service": self._service, "key": key})


class BatchPayTool:
    name = "batch_pay"
    description = "nested tool: dispatches one pay call per item"
    requires_approval = False

    def is_concurrency_safe(self, arguments: Any) -> bool:
        return False

    async def execute(self, ex: ToolExecution) -> ToolResult:
        items = ex.arguments.get("payments", []) if isinstance(ex.arguments, dict) else []
        lines = []
        for index, item in enumerate(items):
            result = await ex.dispatch("pay", item, index=index)
            if result.is_error:
                raise HarnessError(f"nested payment {index} failed: {result.content[0]['text']}", name="NestedFailure", code="NESTED")
            lines.append(result.content[0]["text"])
        return ToolResult.text("\n".join(lines))


def world_tools(
    world: World, gate: DomainGate, now: Callable[[], float], lifetime: int, *, approval_tools: tuple[str, ...] = ("send_message",)
) -> list[Any]:
    def tool(name: str, service: str, op: str, **kw: Any) -> WorldTool:
        return WorldTool(name, service, op, world, gate, now, lifetime, requires_approval=name in approval_tools, **kw)

    tools: list[Any] = [tool(name, service, op, concurrency_safe=name in CONCURRENCY_SAFE) for name, (service, op) in SERVICES.items()]
    return [*tools, BatchPayTool()]
