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

from dsh_sim.adapters.policy import GATE_ANSWERS, GUARD_ANSWERS, POST_ANSWERS
from dsh_sim.adapters.world_tools import TOOL_KINDS
from dsh_sim.engine.bounds import at_most, each, integer, member, number, optional, text
from dsh_sim.engine.faults import CrashSpec, FaultRule
from dsh_sim.engine.json_values import EDGE_NAMES
from dsh_sim.engine.vocabulary import APPROVAL_ANSWERS, MACHINES
from dsh_sim.errors import FieldError
from dsh_sim.scenario.v0.model import CALL_ENDS as V0_CALL_ENDS
from dsh_sim.scenario.v0.model import ENDS as V0_ENDS
from dsh_sim.scenario.v0.model import SHAPES as V0_SHAPES
from dsh_sim.scenario.v0.model import TEARS as V0_TEARS
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
    gate: str = attrs.field(
        default="pass",
        validator=member(GATE_ANSWERS, "gate answer"),
        metadata=doc(
            "config policy: what the deployment's tools/pre-execute gate answers for this call — pass: hands it on (a tool that "
            "needs approval asks, others are allowed); allow, deny, ask: answers so; raise: the gate fails; invalid: no decision"
        ),
    )
    gate_delay: float = attrs.field(
        default=0.0, validator=number(0.0, MAX_SECONDS), metadata=doc("config policy: virtual seconds the gate takes to answer")
    )
    guard: str = attrs.field(
        default="pass",
        validator=member(GUARD_ANSWERS, "guard answer"),
        metadata=doc(
            "config policy: what the deployment's monotonic guard says once the call is allowed — pass, deny, or raise (it fails)"
        ),
    )
    guard_delay: float = attrs.field(
        default=0.0, validator=number(0.0, MAX_SECONDS), metadata=doc("config policy: virtual seconds the guard takes to answer")
    )
    post: str = attrs.field(
        default="accept",
        validator=member(POST_ANSWERS, "post-execute answer"),
        metadata=doc("config policy: what the deployment's tools/post-execute review answers — accept, block (with feedback), or raise"),
    )

    @property
    def scripts_policy(self) -> bool:
        """The call scripts the deployment's policy plugin (anything but its defaults)."""
        return (self.gate, self.gate_delay, self.guard, self.guard_delay, self.post) != ("pass", 0.0, "pass", 0.0, "accept")


FINISH_REASONS = ("max-tokens",)  # a scripted stream's finish besides the natural one


@attrs.frozen
class ModelResponse:
    text: str = attrs.field(default="", validator=text(100_000), metadata=doc("assistant text streamed before the calls"))
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), validator=at_most(MAX_ITEMS), metadata=doc("calls the model emits"))
    chunk_delay: float = attrs.field(default=0.0, validator=number(0.0, 60.0), metadata=doc("virtual seconds between stream parts"))
    finish: str | None = attrs.field(
        default=None,
        validator=optional(member(FINISH_REASONS, "finish")),
        metadata=doc(
            "how the stream ends — null: naturally (tool-calls, or stop); max-tokens: cut off at the token limit (its calls are never owed)"
        ),
    )


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
    approval_delay: float = attrs.field(
        default=0.0,
        validator=number(0.0, MAX_SECONDS),
        metadata=doc("virtual seconds the simulated user takes before each answer (a cancellation may come meanwhile)"),
    )


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

    cancel_first_after: float | None = attrs.field(
        default=None,
        validator=optional(number(0.0, MAX_SECONDS)),
        metadata=doc(
            "null: one flush.  A number: an application task flushes, a second one flushes half this time later, "
            "and the first task's own scope is cancelled after this many virtual seconds (e.g. while a slow write "
            "holds its barrier); the step ends with the second flush's error, else with the first's own (not its "
            "cancellation), else ok — and an ok must cover every event appended before it"
        ),
    )


LINK_SITES = ("project", "session", "log", "lock")  # session paths a link can be planted at (plant_link)


@attrs.frozen
class PlantLinkArgs:
    """Another program plants a symbolic link where a session path goes, while no process runs."""

    at: str = attrs.field(
        default="session",
        validator=member(LINK_SITES, "at"),
        metadata=doc(
            "which path: project or session (a directory, only where none is yet), log or lock (a file: one "
            "already there is moved aside until remove_links); the link points at a directory or file of the same "
            "kind outside the sessions root, which no process may change through it"
        ),
    )


APPEND_SEAMS = ("session", "handle")


@attrs.frozen
class AppendArgs:
    """Append events to the live session (write-behind queues them)."""

    count: int = attrs.field(default=1, validator=integer(1, 10_000), metadata=doc("events to append"))
    size: int = attrs.field(default=8, validator=integer(0, 1_000_000), metadata=doc("bytes of text in each event"))
    value: str | None = attrs.field(
        default=None,
        validator=optional(member(EDGE_NAMES, "value")),
        metadata=doc(
            "null: text of `size` bytes.  A name: each event carries this edge value of JSON (see dsh_sim/engine/json_values.py) "
            "— the spec refuses some at append (TypeError, nothing stored) and the rest must read back exactly"
        ),
    )

    via: str = attrs.field(
        default="session",
        validator=member(APPEND_SEAMS, "seam"),
        metadata=doc(
            "session: through `Session.append` (the write-behind persists it).  handle: a `value` event built by the "
            "caller, appended straight to a write handle of a new session of the same process (`<session_id>.handle-<n>`) "
            "and read back through a read handle — the persistence seam, which the spec holds to the same lossless rules"
        ),
    )

    def __attrs_post_init__(self) -> None:
        if self.count * self.size > MAX_APPEND_BYTES:
            raise FieldError("count", f"count × size must be at most {MAX_APPEND_BYTES} bytes, got {self.count * self.size}")
        if self.via == "handle" and self.value is None:
            raise FieldError("via", "the handle seam takes an edge `value`")


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
class RemoveLinksArgs:
    """The operator removes every planted link (what they point at is left as it is)."""


@attrs.frozen
class ReadOnlyArgs:
    """A reader beside the writer (as ``dsh-sim inspect`` or a session picker): list, open
    read-only, read twice, try to write through it, close, read again."""


@attrs.frozen
class RetryUnknownArgs:
    """The model retries every TOOL_OUTCOME_UNKNOWN pay with the same idempotency key."""


@attrs.frozen
class SeedV0Args:
    """Before the first boot: place a historical v0 log of the session on the disk.

    The knobs pick the shape of the history (what its turns hold, how it ends, how its
    last batch was damaged); the content is filled in deterministically, so the same args
    always mean the same bytes.  The defaults are the first v0 writer's log: balanced
    one-step text turns, one durable batch per turn, two notes in a last batch.
    """

    turns: int = attrs.field(default=2, validator=integer(1, 200), metadata=doc("turns in the historical log"))
    notes: int = attrs.field(
        default=2, validator=integer(0, 100), metadata=doc("log-only todo/write events after the turns, as a last batch of their own")
    )
    torn: bool = attrs.field(default=False, metadata=doc("tear the last batch where `tear` says, as a crash of the old runtime would"))
    shape: str = attrs.field(
        default="text",
        validator=member(V0_SHAPES, "v0 shape"),
        metadata=doc(
            "what each turn holds — text: one step streaming a text answer; tools: a step streaming reasoning, "
            "text and `calls` tool calls (tool-call-delta runs, tool/call and tool/result citing it), then a step "
            "answering in text (events arrive at uneven intervals)"
        ),
    )
    end: str = attrs.field(
        default="balanced",
        validator=member(V0_ENDS, "v0 end"),
        metadata=doc(
            "how the final turn stops — balanced: closed; open-stream: inside its last step's stream (chunks no "
            "message claims); open-call: right after the first tool/call of its last step with calls (no result; "
            "the later calls never started); open-step: right after its last step's request; ended-step-call: its last step "
            "with calls recorded them but none got a result, and the step ended (a scheduler failure) before the turn; "
            "orphan-call: as open-call, then a tool/call no assistant block announced"
        ),
    )
    calls: int = attrs.field(default=2, validator=integer(0, 8), metadata=doc("tool calls per turn (shape tools)"))
    deltas: int = attrs.field(
        default=4,
        validator=integer(1, 64),
        metadata=doc("deltas per streamed block: 3 or more pack into a row, 1–2 stay one event per line"),
    )
    pad: int = attrs.field(
        default=0,
        validator=integer(0, 20_000),
        metadata=doc("extra characters in every text and reasoning delta (large rows make zstd frames of several blocks)"),
    )
    retry: bool = attrs.field(
        default=False, metadata=doc("every turn's first step streams an attempt the provider breaks off (then llm/retry) before its answer")
    )
    system_change: bool = attrs.field(
        default=False,
        metadata=doc("every even turn's steps carry a system prompt of their own (the prompt changes between and within turns)"),
    )
    inherited: int = attrs.field(
        default=0,
        validator=integer(0, 199),
        metadata=doc("leading turns inherited from a parent session (header seedLength, session/end-seed)"),
    )
    title: bool = attrs.field(default=False, metadata=doc("a session/title naming the first turn's user message follows that turn"))
    subagent: bool = attrs.field(
        default=False, metadata=doc('a subagent\'s session: its header says origin "subagent" at delegation depth 1')
    )
    compact: bool = attrs.field(
        default=False,
        metadata=doc("a compaction follows the first turn: a summary user/message replaces that turn's surface (v0 surfaceOp replace)"),
    )
    legacy: bool = attrs.field(
        default=False,
        metadata=doc(
            "the first turn holds the retired vocabulary migration renames or renumbers: a turn/start trigger, "
            "agent preset `code`, a tools-code-mode plugin message spliced from the inbox, a command/run and the "
            "command/done citing it, tool/code-dispatch events around each call; with `title` a "
            "session/title-llm-request, with `compact` a compaction/prune naming the shadowed seqs"
        ),
    )
    batch: int = attrs.field(
        default=0, validator=integer(0, 1000), metadata=doc("0: one durable batch per turn; n: a batch every n events (cutting chunk runs)")
    )
    tear: str = attrs.field(
        default="half",
        validator=member(V0_TEARS, "tear"),
        metadata=doc(
            "where `torn` cuts the last batch — half: the middle of its bytes; row: inside its last packed row "
            "(zstd: at a block boundary inside the row, when a large row spans blocks); tail: its last bytes "
            "(raw: the final newline; zstd: inside the frame checksum, every record recoverable)"
        ),
    )
    damaged: bool = attrs.field(
        default=False,
        metadata=doc(
            "flip a byte of the last batch (zstd: inside its complete frame — the source must be refused, never "
            "migrated; raw: the record before its last turn/end becomes unparsable)"
        ),
    )

    def __attrs_post_init__(self) -> None:
        if self.torn and self.damaged:
            raise FieldError("damaged", "a torn last batch cannot also be damaged: pick one")
        if self.end in V0_CALL_ENDS and (self.shape != "tools" or not self.calls):
            raise FieldError("end", f"{self.end} needs a turn with tool calls (shape tools, calls ≥ 1)")
        if self.inherited >= self.turns:
            raise FieldError("inherited", f"must be below turns ({self.turns}): the session's own turns follow the inherited ones")
        if self.compact and self.turns < 2:
            raise FieldError("compact", "the compaction follows the first turn: it needs turns ≥ 2")
        if self.inherited and self.batch:
            raise FieldError("inherited", "an inherited prefix is written as one batch: it needs batch 0")
        if self.turns * self.deltas * self.pad > MAX_APPEND_BYTES:
            raise FieldError("pad", f"turns × deltas × pad must be at most {MAX_APPEND_BYTES}, got {self.turns * self.deltas * self.pad}")


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
        OpSpec("plant_link", PlantLinkArgs, "while no process runs: another program plants a symbolic link at a session path"),
        OpSpec(
            "remove_links",
            RemoveLinksArgs,
            "while no process runs: the planted links are removed and what they displaced is put back (their targets stay)",
        ),
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
