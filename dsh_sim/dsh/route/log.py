"""A route run's session log as the judges read it: DSH writes v0, read here by dsh-sim's own
v0 decoder (which the reader differential holds equal to DSH's reader)."""

from __future__ import annotations

from collections.abc import Sequence

from runtime.persistence.log_format import LogCorruption, LogVersionUnsupported
from runtime.persistence.v0_format import V0Log, V0Unsupported, decode_v0
from runtime.persistence.v0_records import V0Event

CODES = ("TOOL_NOT_STARTED", "TOOL_OUTCOME_UNKNOWN")


def read(data: bytes, compression: str) -> V0Log | str:
    """The decoded log (header, events), or why it cannot be read."""
    try:
        return decode_v0(data, compression)
    except (LogCorruption, LogVersionUnsupported, V0Unsupported) as err:
        return f"{type(err).__name__}: {err}"


def decode(data: bytes | None, compression: str) -> list[V0Event] | str:
    """The log's events, or why they cannot be read."""
    if not data:
        return []
    log = read(data, compression)
    return log if isinstance(log, str) else list(log.events)


def verdicts(events: Sequence[V0Event]) -> dict[str, str]:
    """call id -> the repair verdict a ``tool/result`` carries."""
    out: dict[str, str] = {}
    for e in events:
        if e.type != "tool/result":
            continue
        error = e.data.get("error") if isinstance(e.data, dict) else None
        if isinstance(error, dict) and error.get("code") in CODES:
            out[str(e.data["message"]["source"]["callId"])] = str(error["code"])
    return out
