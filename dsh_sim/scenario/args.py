"""Steps as typed values: one frozen args class per step op, and the op registry.

A scenario file writes a step as ``{"op": name, "args": {...}}``; :mod:`dsh_sim.scenario.codec`
turns that into a :class:`Step` holding the op's args class, refusing unknown ops, unknown
arg keys and out-of-range values with the JSON path.  The ranges keep every step finite: a
scenario that validates can only fail at replay for a reason of the runtime, never because
an ``advance`` of 1e308 seconds or an ``append`` of 1e8 events never ends.

Field docs (``metadata["doc"]``) feed the generated reference page and the JSON Schema.
"""

from __future__ import annotations

from typing import Any

import attrs

from dsh_sim.adapters.world_tools import TOOL_KINDS
from dsh_sim.engine.bounds import at_most, each, integer, member, number, text
from dsh_sim.engine.faults import CrashSpec, FaultRule
from dsh_sim.engine.vocabulary import APPROVAL_ANSWERS, MACHINES
from dsh_sim.errors import FieldError
from runtime.agent.approval import APPROVAL_POLICIES
from runtime.agent.sandbox import SANDBOX_MODES

MAX_SECONDS = 86_400.0  # virtual seconds one step may advance
MAX_ITEMS = 64  # responses per prompt, tool calls per response, approvals per prompt
MAX_APPEND_BYTES = 4 * 1024 * 1024  # count × size of one append step


def doc(text: str) -> dict[str, str]:
    return {"doc": text}


def _tool_arguments(_inst: Any, attribute: Any, value: Any) -> None:
    if not isinstance(value, dict | str):
        raise FieldError(attribute.name, f"must be a JSON object (or a JSON string), got {value!r}")


@attrs.frozen
class ToolCall:
    id: str = attrs.field(validator=text(200), metadata=doc("call id, unique in the scenario (a fault rule's match can name it)"))
    name: str = attrs.field(validator=member(TOOL_KINDS, "tool"), metadata=doc("the tool to call (see Tools)"))
    arguments: Any = attrs.field(factory=dict, validator=_tool_arguments, metadata=doc("the tool's arguments, a JSON object"))


@attrs.frozen
class ModelResponse:
    text: str = attrs.field(default="", validator=text(100_000), metadata=doc("assistant text streamed before the calls"))
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), validator=at_most(MAX_ITEMS), metadata=doc("calls the model emits"))
    chunk_delay: float = attrs.field(default=0.0, validator=number(0.0, 60.0), metadata=doc("virtual seconds between stream parts"))


@attrs.frozen
class BootArgs:
    """Start a process: open the session (recovering and repairing what the disk holds)."""


@attrs.frozen
class PromptArgs:
    """Run one user turn; the model answers with ``responses`` in order (one per model request)."""

    text: str = attrs.field(default="go", validator=text(100_000), metadata=doc("the user's message"))
    responses: tuple[ModelResponse, ...] = attrs.field(
        default=(), validator=at_most(MAX_ITEMS), metadata=doc("the scripted model's answers, one per request of the turn")
    )
    approvals: tuple[str, ...] = attrs.field(
        default=(),
        validator=[at_most(MAX_ITEMS), each(member(APPROVAL_ANSWERS, "approval answer"))],
        metadata=doc("answers to approval questions, in order (hang: never answers; raise: the answerer fails; yolo: a bogus answer)"),
    )
    horizon: float = attrs.field(default=600.0, validator=number(0.001, MAX_SECONDS), metadata=doc("virtual seconds the turn may take"))


@attrs.frozen
class AdvanceArgs:
    """Let virtual time pass (write-behind windows expire, background writes run)."""

    seconds: float = attrs.field(default=0.2, validator=number(0.0, MAX_SECONDS), metadata=doc("virtual seconds"))


@attrs.frozen
class CancelArgs:
    """Cancel the running turn, then let it settle."""

    settle: float = attrs.field(default=1.0, validator=number(0.0, MAX_SECONDS), metadata=doc("virtual seconds to settle"))


@attrs.frozen
class FlushArgs:
    """An explicit durability barrier on the live session."""


@attrs.frozen
class AppendArgs:
    """Append events to the live session (write-behind queues them)."""

    count: int = attrs.field(default=1, validator=integer(1, 10_000), metadata=doc("events to append"))
    size: int = attrs.field(default=8, validator=integer(0, 1_000_000), metadata=doc("bytes of text in each event"))

    def __attrs_post_init__(self) -> None:
        if self.count * self.size > MAX_APPEND_BYTES:
            raise FieldError("count", f"count × size must be at most {MAX_APPEND_BYTES} bytes, got {self.count * self.size}")


@attrs.frozen
class SetApprovalPolicyArgs:
    """The user changes the approval policy of the live agent."""

    policy: str = attrs.field(validator=member(APPROVAL_POLICIES, "approval policy"), metadata=doc("the new policy"))


@attrs.frozen
class SetSandboxModeArgs:
    """The user changes the sandbox mode of the live agent."""

    mode: str = attrs.field(validator=member(SANDBOX_MODES, "sandbox mode"), metadata=doc("the new mode"))


@attrs.frozen
class ArmArgs:
    """Add a fault rule to the plan from this point of the run on."""

    rule: FaultRule = attrs.field(metadata=doc("the fault rule (see Fault rules)"))


@attrs.frozen
class SecondWriterArgs:
    """A second process opens the published session for write (it must be refused)."""


@attrs.frozen
class ReadOnlyArgs:
    """A reader beside the writer (as ``dsh-sim inspect`` or a session picker): list, open
    read-only, read twice, try to write through it, close, read again."""


@attrs.frozen
class RetryUnknownArgs:
    """The model retries every TOOL_OUTCOME_UNKNOWN pay with the same idempotency key."""


@attrs.frozen
class SeedV0Args:
    """Before the first boot: place a historical v0 log of the session on the disk."""

    turns: int = attrs.field(default=2, validator=integer(1, 200), metadata=doc("turns in the historical log"))
    notes: int = attrs.field(default=2, validator=integer(0, 100), metadata=doc("notes per turn"))
    torn: bool = attrs.field(default=False, metadata=doc("cut the last batch in half, as a crash of the old runtime would"))


@attrs.frozen
class OpSpec:
    name: str
    args: type
    doc: str
    machines: tuple[str, ...] = MACHINES  # the machines that can run it (an agent op needs the durability machine)


_AGENT = ("durability",)
OPS: dict[str, OpSpec] = {
    spec.name: spec
    for spec in (
        OpSpec("boot", BootArgs, "start a process: open the session (recovering and repairing what the disk holds)"),
        OpSpec("prompt", PromptArgs, "run one user turn against the scripted model", _AGENT),
        OpSpec("advance", AdvanceArgs, "let virtual time pass (write-behind windows expire)"),
        OpSpec("cancel", CancelArgs, "cancel the running turn", _AGENT),
        OpSpec("flush", FlushArgs, "an explicit durability barrier"),
        OpSpec("append", AppendArgs, "append events to the live session"),
        OpSpec("set_approval_policy", SetApprovalPolicyArgs, "change the approval policy", _AGENT),
        OpSpec("set_sandbox_mode", SetSandboxModeArgs, "change the sandbox mode", _AGENT),
        OpSpec("arm", ArmArgs, "add a fault rule to the plan"),
        OpSpec("crash_now", CrashSpec, "crash the live process now (kill or power loss)"),
        OpSpec("second_writer", SecondWriterArgs, "a second process tries to open the session for write"),
        OpSpec("read_only", ReadOnlyArgs, "a reader lists, opens read-only, reads, tries to write, closes; the checker judges what it saw"),
        OpSpec("retry_unknown", RetryUnknownArgs, "retry every unknown-outcome pay with the same key", _AGENT),
        OpSpec("seed_v0", SeedV0Args, "before the first boot: a historical v0 log on the disk"),
    )
}


def _default_args(step: Step) -> Any:
    return OPS[step.op].args()


@attrs.frozen
class Step:
    """One step of a scenario: an op and its typed args (``Step("boot")`` for an op without any)."""

    op: str = attrs.field(validator=member(OPS, "step op"))
    args: Any = attrs.field(default=attrs.Factory(_default_args, takes_self=True))

    def __attrs_post_init__(self) -> None:
        expected = OPS[self.op].args
        if type(self.args) is not expected:
            raise FieldError("args", f"step {self.op!r} takes {expected.__name__}, got {type(self.args).__name__}")
