"""Historical (v0) session logs written the way the reference runtime writes them.

The runtime never writes v0; the simulator needs such sources to test migration (a header
frame, one frame per batch, packed chunk rows of three or more same-block deltas, or raw
JSONL), so the writer lives here.  What the logs hold — turns, streams, calls, how they end
and how their last batch was damaged — is described and rendered by :mod:`dsh_sim.scenario.v0`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from runtime.persistence.v0_format import V0Header
from runtime.persistence.v0_records import ROW_TAGS, V0Event
from runtime.persistence.zstd_frames import compress_frame
from runtime.session.lossless import dumps, encode_utf8

MIN_RUN = 3  # the reference packs runs of three or more same-block deltas into one row


def _delta_kind(event: V0Event) -> str | None:
    data = event.data
    if event.type != "assistant/chunk" or event.ignorable or event.surface_op is not None or event.source_event_seqs is not None:
        return None
    if type(data) is not dict or set(data) != {"turn", "step", "chunk"} or type(data["chunk"]) is not dict:
        return None
    chunk = data["chunk"]
    kind: object = chunk.get("type")
    if kind in ("text-delta", "reasoning-delta") and set(chunk) == {"type", "index", "text"}:
        return kind
    if kind == "tool-call-delta" and set(chunk) - {"name"} == {"type", "index", "id", "argumentsDelta"}:
        return kind
    return None


def _same_run(prev: V0Event, nxt: V0Event) -> bool:
    a, b = prev.data, nxt.data
    ca, cb = a["chunk"], b["chunk"]
    return (
        nxt.seq == prev.seq + 1
        and (a["turn"], a["step"], ca["index"]) == (b["turn"], b["step"], cb["index"])
        and (ca.get("id"), "name" in ca, ca.get("name")) == (cb.get("id"), "name" in cb, cb.get("name"))
    )


def _row(kind: str, run: Sequence[V0Event]) -> dict[str, Any]:
    first = run[0].data
    tag = {v: k for k, v in ROW_TAGS.items()}[kind]
    data: dict[str, Any] = {"turn": first["turn"], "step": first["step"], "index": first["chunk"]["index"]}
    data["dt"] = [run[i + 1].time - run[i].time for i in range(len(run) - 1)]
    if kind == "tool-call-delta":
        data["id"] = first["chunk"]["id"]
        if "name" in first["chunk"]:
            data["name"] = first["chunk"]["name"]
        data["args"] = [e.data["chunk"]["argumentsDelta"] for e in run]
    else:
        data["texts"] = [e.data["chunk"]["text"] for e in run]
    return {"type": tag, "seq0": run[0].seq, "time0": run[0].time, "data": data}


def pack_records(events: Iterable[V0Event]) -> list[dict[str, Any]]:
    """Storage records of one batch: runs of ``MIN_RUN``+ same-block deltas become one row."""
    out: list[dict[str, Any]] = []
    run: list[V0Event] = []
    kind: str | None = None

    def flush() -> None:
        if kind is not None and len(run) >= MIN_RUN:
            out.append(_row(kind, run))
        else:
            out.extend(e.to_record() for e in run)

    for event in events:
        k = _delta_kind(event)
        if k is not None and k == kind and _same_run(run[-1], event):
            run.append(event)
            continue
        flush()
        run, kind = ([event], k) if k is not None else ([], None)
        if k is None:
            out.append(event.to_record())
    flush()
    return out


def encode_v0(header: V0Header, batches: Sequence[Sequence[V0Event]], compression: str) -> bytes:
    """A v0 file as the reference writes it: header frame (or line), one frame per batch."""
    parts = [encode_utf8(dumps(header.to_record()) + "\n")]
    for batch in batches:
        parts.append(encode_utf8("".join(dumps(r) + "\n" for r in pack_records(batch))))
    if compression == "zstd":
        return b"".join(compress_frame(p) for p in parts)
    return b"".join(parts)
