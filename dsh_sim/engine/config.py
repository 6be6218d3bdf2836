"""Configuration of one simulated deployment (what a scenario file's ``config`` holds).

Every field is validated when the configuration is made: an unknown compression or sandbox
mode is refused input (one line naming the JSON path), never a runtime failure that the
invariants would report as a violation.
"""

from __future__ import annotations

import functools
import posixpath
from typing import Any

import attrs

from dsh_sim.adapters.world_tools import TOOL_KINDS
from dsh_sim.engine.bounds import each, integer, member, number, optional, text
from dsh_sim.errors import FieldError
from runtime.agent.approval import APPROVAL_POLICIES
from runtime.agent.runtime import DEFAULT_MAX_STEPS
from runtime.agent.sandbox import SANDBOX_MODES
from runtime.persistence.layout import SessionPaths, encode_segment, generation_filename
from runtime.persistence.log_format import COMPRESSIONS


def _session_id(inst: Any, attribute: Any, value: Any) -> None:
    text(200)(inst, attribute, value)
    try:
        encode_segment(value)
    except ValueError as err:
        raise FieldError(attribute.name, str(err)) from None


def _absolute(inst: Any, attribute: Any, value: Any) -> None:
    text(1000)(inst, attribute, value)
    if not value.startswith("/") or value == "/" or "\x00" in value or posixpath.normpath(value) != value:
        raise FieldError(attribute.name, f"must be a normalised absolute path below /, got {value!r}")


PERTURB_MAX = 0.020  # virtual seconds: the longest sleep a perturbed point takes


@functools.lru_cache(maxsize=64)
def session_paths(root: str, workspace: str, session_id: str, compression: str) -> SessionPaths:
    """The session's paths, computed once per configuration: harness code asks for the log
    path thousands of times per exploration (``SessionPaths`` is frozen, so sharing is safe)."""
    return SessionPaths.of(root, workspace, session_id, compression)


@attrs.frozen
class SimConfig:
    compression: str = attrs.field(
        metadata={"doc": "zstd (one checksummed frame per batch) or none (JSONL)"},
        default="zstd",
        validator=member(COMPRESSIONS, "compression"),
    )
    checkpoint_policy: bool = attrs.field(default=True, metadata={"doc": "mount the semantic checkpoint policy (durable before effect)"})
    approval_policy: str | None = attrs.field(
        metadata={"doc": "ask or never; null: no approval service mounted"},  # None: no approval service mounted
        default="ask",
        validator=optional(member(APPROVAL_POLICIES, "approval policy")),
    )
    sandbox_mode: str = attrs.field(
        metadata={"doc": "the shell tool's sandbox mode"}, default="workspace-write", validator=member(SANDBOX_MODES, "sandbox mode")
    )
    session_id: str = attrs.field(metadata={"doc": "the session's id"}, default="sim-session", validator=_session_id)
    root: str = attrs.field(metadata={"doc": "persistence root on the simulated disk"}, default="/sim/sessions", validator=_absolute)
    root_exists: bool = attrs.field(
        default=True,
        metadata={"doc": "false: a first run on a fresh machine — the root and its missing ancestors are the runtime's to create"},
    )
    workspace: str = attrs.field(
        metadata={"doc": "the tools' workspace on the simulated disk"}, default="/sim/workspace", validator=_absolute
    )
    max_parallel_tool_calls: int = attrs.field(
        metadata={"doc": "concurrency-safe calls run in parallel up to this"}, default=10, validator=integer(1, 64)
    )
    max_steps: int = attrs.field(
        metadata={"doc": "the runtime's step limit: a turn whose step number max_steps still has tool calls ends with an error"},
        default=DEFAULT_MAX_STEPS,
        validator=integer(1, 64),
    )
    chunk_delay: float = attrs.field(
        metadata={"doc": "virtual seconds between model stream parts"}, default=0.01, validator=number(0.0, 60.0)
    )
    system: str | None = attrs.field(
        metadata={"doc": "system prompt (null: none)"}, default="You are a simulated agent.", validator=optional(text(10_000))
    )
    io_latency: float = attrs.field(
        metadata={"doc": "virtual seconds every filesystem operation at a named point takes (0: instant)"},
        default=0.0,
        validator=number(0.0, 10.0),
    )
    fsync_latency: float = attrs.field(
        metadata={"doc": "further virtual seconds each fsync and directory fsync takes (a slow disk)"},
        default=0.0,
        validator=number(0.0, 10.0),
    )
    perturb: float = attrs.field(
        metadata={
            "doc": "probability, at each named point, that the task first yields to the others or sleeps up to "
            "PERTURB_MAX seconds (drawn from the seed): other task orders than the scheduler's own"
        },
        default=0.0,
        validator=number(0.0, 1.0),
    )
    execute_plugin: bool = attrs.field(
        default=False,
        metadata={
            "doc": "mount a tools/execute plugin that awaits at plugin.tools_execute for every call, top-level and nested "
            "(as tracing or rate limiting would), after the checkpoint policy and before the tool body"
        },
    )
    post_execute_note: bool = attrs.field(
        default=False,
        metadata={
            "doc": "mount a tools/post-execute plugin that replaces each result's content with its blocks plus a note "
            "(as redaction or summarising would); post_execute_once then holds every result to it"
        },
    )
    file_tools: bool = attrs.field(
        default=False,
        metadata={
            "doc": "mount the runtime's own write_file tool (runtime/tools/files.py) over the process's view of the simulated "
            "disk, confined to the workspace: its writes are filesystem operations (named points, crash model) and "
            "file_effects_durable holds every success the recovered log reports to the medium"
        },
    )
    model_uncancellable: bool = attrs.field(
        default=False,
        metadata={
            "doc": "the model adapter cannot be cancelled (its waits are shielded, as an HTTP client without cancellation "
            "support): the loop must notice a cancellation between stream parts on its own and mark the message interrupted"
        },
    )
    policy: bool = attrs.field(
        default=False,
        metadata={
            "doc": "mount the deployment's policy plugin: a tools/pre-execute gate and a monotonic guard that answer each call as its "
            "script says (ToolCall gate, guard and their delays), announced at policy.gate, policy.guard and policy.post"
        },
    )
    approval_tools: tuple[str, ...] = attrs.field(
        metadata={"doc": "tools that need an approval"}, default=("send_message",), validator=each(member(TOOL_KINDS, "tool"))
    )

    def __attrs_post_init__(self) -> None:
        root, workspace = self.root + "/", self.workspace + "/"
        if root.startswith(workspace) or workspace.startswith(root):
            raise FieldError("workspace", f"the workspace {self.workspace!r} and the root {self.root!r} must not contain one another")

    @property
    def points_take_time(self) -> bool:
        """Whether a named point may take virtual time (perturbation or I/O latency): when it
        cannot, :meth:`Simulation.point` skips the timing step entirely."""
        return bool(self.perturb or self.io_latency or self.fsync_latency)

    @property
    def paths(self) -> SessionPaths:
        return session_paths(self.root, self.workspace, self.session_id, self.compression)

    @property
    def log_path(self) -> str:
        return self.paths.log

    @property
    def v0_path(self) -> str:
        """Where a historical (v0) generation of this session lives (the ``seed_v0`` step puts one there)."""
        return f"{self.paths.session_dir}/{generation_filename(0, self.compression)}"
