"""Strict verification of a staged generation (spec §10.4): it must be exactly what was meant.

Migration stages a whole generation and verifies it before publishing: the ordinary reader
must decode it with no torn tail, to exactly the expected header and events, and the events
must replay.  Kept apart from the reader itself (:mod:`runtime.persistence.log_format`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from runtime.persistence.header import SessionHeader
from runtime.persistence.log_format import (
    GenerationMismatch,
    LogCorruption,
    LogUnknownEventType,
    LogVersionUnsupported,
    decode_log,
)
from runtime.session.events import Event


def verify_exact(data: bytes, compression: str, header: SessionHeader, events: Sequence[Event]) -> None:
    """Strict check that ``data`` is exactly the generation ``header`` + ``events``.

    Decoded by the ordinary reader with no torn tail allowed; the header, the event count
    and every record must be equal, and the events must replay: dense seqs from 0 and a
    surface whose replacements name live nodes in order and cite every node they shadow.
    CPU-bound (a whole log), so migration runs it through an injectable verifier.
    """
    try:
        decoded = decode_log(data, compression)
    except (LogCorruption, LogVersionUnsupported, LogUnknownEventType) as err:
        raise GenerationMismatch(f"staged session generation failed strict decoding: {err}") from None
    if decoded.torn is not None:
        raise GenerationMismatch("current session generation has a torn physical tail")
    if decoded.header.to_record() != header.to_record():
        raise GenerationMismatch(f'session generation header id "{decoded.header.id}" or its fields differ from the expected header')
    if len(decoded.events) != len(events):
        raise GenerationMismatch(f"session generation contains {len(decoded.events)} events, expected {len(events)}")
    for got, want in zip(decoded.events, events):
        if got.to_record() != want.to_record():
            raise GenerationMismatch(f"session generation differs from the expected log at seq {want.seq}")
    replay_surface(decoded.events)


def replay_surface(events: Sequence[Event]) -> None:
    """Replay seqs and surface operations; raise :class:`GenerationMismatch` where they break."""
    surface: list[int] = []
    for index, event in enumerate(events):
        if event.seq != index:
            raise GenerationMismatch(f"session generation does not replay: event {index} has seq {event.seq}")
        op = event.surface_op
        if op is None:
            continue
        if op != "append":
            # every event here passed validate_surface: a surfaceOp other than "append" is a replace dict
            span = cast(dict[str, Any], op)
            start, end = span["startSeq"], span["endSeq"]
            if start not in surface or end not in surface or surface.index(start) > surface.index(end):
                raise GenerationMismatch(f"session generation does not replay: seq {event.seq} replaces a span that is not live")
            i, j = surface.index(start), surface.index(end)
            if not set(surface[i : j + 1]) <= set(event.source_event_seqs or ()):
                raise GenerationMismatch(f"session generation does not replay: seq {event.seq} does not cite every node it shadows")
            surface[i : j + 1] = [event.seq]
            continue
        surface.append(event.seq)
