"""Tool results and the canonical error results (spec §4, §5)."""

from __future__ import annotations

from typing import Any

import attrs

ABORTED_BEFORE_DISPATCH = "ABORTED_BEFORE_DISPATCH"
ABORTED = "ABORTED"


class HarnessError(Exception):
    """An error with a stable ``name`` and ``code`` that results record (``error.info``)."""

    name = "HarnessError"
    code = "UNKNOWN"

    def __init__(self, message: str, *, name: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        if name is not None:
            self.name = name
        if code is not None:
            self.code = code


@attrs.frozen
class ErrorInfo:
    message: str
    name: str | None = None
    code: str | None = None

    def info(self) -> dict[str, str] | None:
        if self.name is None or self.code is None:
            return None
        return {"name": self.name, "code": self.code}


@attrs.frozen
class ToolResult:
    content: tuple[dict[str, Any], ...]
    is_error: bool = False
    error: ErrorInfo | None = None
    meta: Any = None
    final: bool = False  # pipeline failures skip post-execute

    @classmethod
    def text(cls, text: str, *, meta: Any = None) -> ToolResult:
        return cls(({"type": "text", "text": text},), meta=meta)

    @classmethod
    def failure(cls, message: str, *, name: str | None = None, code: str | None = None, final: bool = False) -> ToolResult:
        return cls(({"type": "text", "text": f"Error: {message}"},), True, ErrorInfo(message, name, code), final=final)


def aborted_before_dispatch() -> ToolResult:
    return ToolResult.failure("tool call aborted before dispatch", name="AbortError", code=ABORTED_BEFORE_DISPATCH, final=True)


def aborted() -> ToolResult:
    return ToolResult.failure("tool call aborted", name="AbortError", code=ABORTED, final=True)


def from_exception(err: BaseException, *, final: bool = True) -> ToolResult:
    if isinstance(err, HarnessError):
        return ToolResult.failure(str(err), name=err.name, code=err.code, final=final)
    return ToolResult.failure(str(err) or type(err).__name__, final=final)
