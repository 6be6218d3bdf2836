"""Configuration of one simulated deployment (what a scenario file's ``config`` holds)."""

from __future__ import annotations

import functools
from typing import Any

import attrs

from runtime.persistence.layout import SessionPaths, generation_filename


@functools.lru_cache(maxsize=64)
def session_paths(root: str, workspace: str, session_id: str, compression: str) -> SessionPaths:
    """The session's paths, computed once per configuration: harness code asks for the log
    path thousands of times per exploration (``SessionPaths`` is frozen, so sharing is safe)."""
    return SessionPaths.of(root, workspace, session_id, compression)


@attrs.frozen
class SimConfig:
    compression: str = "zstd"
    checkpoint_policy: bool = True
    approval_policy: str | None = "ask"  # None: no approval service mounted
    sandbox_mode: str = "workspace-write"
    session_id: str = "sim-session"
    root: str = "/sim/sessions"
    workspace: str = "/sim/workspace"
    max_parallel_tool_calls: int = 10
    chunk_delay: float = 0.01
    system: str | None = "You are a simulated agent."
    approval_tools: tuple[str, ...] = ("send_message",)

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

    def to_json(self) -> dict[str, Any]:
        out = attrs.asdict(self)
        out["approval_tools"] = list(self.approval_tools)
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> SimConfig:
        known = {f.name for f in attrs.fields(cls)}
        extra = sorted(set(obj) - known)
        if extra:
            raise ValueError(f"unknown config keys {extra}")
        values = dict(obj)
        if "approval_tools" in values:
            values["approval_tools"] = tuple(values["approval_tools"])
        return cls(**values)
