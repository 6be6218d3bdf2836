"""The header record: line 1 of every generation (spec §3.3, §10.1, §12)."""

from __future__ import annotations

from typing import Any

import attrs

from runtime.session.lossless import holds_split_pair, is_safe_integer
from runtime.session.vocabulary import SESSION_FORMAT_VERSION


class HeaderError(ValueError):
    """The header record is malformed."""


class HeaderVersionError(ValueError):
    """The header is well-formed enough to name a version this runtime does not read."""

    def __init__(self, version: int) -> None:
        super().__init__(f"header version {version}")
        self.version = version


_V3_KEYS = ("type", "version", "id", "createdAt", "cwd", "parentSession", "isSeeded", "origin", "delegationDepth", "agentPreset")


@attrs.frozen
class SessionHeader:
    id: str
    created_at: int
    cwd: str | None = None
    parent_session: str | None = None
    is_seeded: bool = False
    origin: str | None = None
    delegation_depth: int = 0
    agent_preset: str | None = None
    version: int = SESSION_FORMAT_VERSION

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"type": "session", "version": self.version, "id": self.id, "createdAt": self.created_at}
        if self.cwd is not None:
            record["cwd"] = self.cwd
        if self.parent_session is not None:
            record["parentSession"] = self.parent_session
        record["isSeeded"] = self.is_seeded
        if self.origin is not None:
            record["origin"] = self.origin
        record["delegationDepth"] = self.delegation_depth
        if self.agent_preset is not None:
            record["agentPreset"] = self.agent_preset
        return record

    def validate(self) -> None:
        """Refuse a header this runtime would refuse to read back, or would read back changed."""
        record = self.to_record()
        parse_header(record)
        for key, value in record.items():
            if type(value) is str and holds_split_pair(value):
                raise HeaderError(f"session header {key} holds a surrogate pair as two code points (it would read back as one)")


def _non_negative_int(value: Any) -> bool:
    return is_safe_integer(value) and value >= 0


def parse_header(record: Any) -> SessionHeader:
    """Validate a v3 header record; the version is checked before the shape."""
    if type(record) is not dict or record.get("type") != "session":
        raise HeaderError("first line is not a session header")
    version = record.get("version")
    if type(version) is not int:
        raise HeaderError("first line is not a session header")
    if version != SESSION_FORMAT_VERSION:
        raise HeaderVersionError(version)
    if "sandboxMode" in record or "approvalPolicy" in record:
        raise HeaderError("session header uses retired policy baseline fields")
    extra = sorted(set(record) - set(_V3_KEYS))
    if extra:
        raise HeaderError(f"session header has unexpected keys {extra}")
    if type(record.get("id")) is not str or not record["id"]:
        raise HeaderError("session header id must be a non-empty string")
    if not _non_negative_int(record.get("createdAt")):
        raise HeaderError("session header createdAt must be a non-negative safe integer")
    if type(record.get("isSeeded")) is not bool:
        raise HeaderError("session header isSeeded must be a boolean")
    if not _non_negative_int(record.get("delegationDepth")):
        raise HeaderError("session header delegationDepth must be a non-negative safe integer")
    cwd = record.get("cwd")
    if cwd is not None and (type(cwd) is not str or not cwd.startswith("/")):
        raise HeaderError("session header cwd must be an absolute path")
    if record.get("origin") not in (None, "subagent"):
        raise HeaderError('session header origin must be absent or "subagent"')
    for key in ("agentPreset", "parentSession"):
        if key in record and type(record[key]) is not str:
            raise HeaderError(f"session header {key} must be a string")
    return SessionHeader(
        id=record["id"],
        created_at=record["createdAt"],
        cwd=cwd,
        parent_session=record.get("parentSession"),
        is_seeded=record["isSeeded"],
        origin=record.get("origin"),
        delegation_depth=record["delegationDepth"],
        agent_preset=record.get("agentPreset"),
    )
