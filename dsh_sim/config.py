"""Configuration of one simulated deployment (what a scenario file's ``config`` holds)."""

from __future__ import annotations

from typing import Any

import attrs

from runtime.persistence.layout import SessionPaths


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
    def log_path(self) -> str:
        return SessionPaths.of(self.root, self.workspace, self.session_id, self.compression).log

    def to_json(self) -> dict[str, Any]:
        out = attrs.asdict(self)
        out["approval_tools"] = list(self.approval_tools)
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "SimConfig":
        known = {f.name for f in attrs.fields(cls)}
        extra = sorted(set(obj) - known)
        if extra:
            raise ValueError(f"unknown config keys {extra}")
        values = dict(obj)
        if "approval_tools" in values:
            values["approval_tools"] = tuple(values["approval_tools"])
        return cls(**values)
