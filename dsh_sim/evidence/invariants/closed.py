"""``closed_handle_refuses``: a closed write handle refuses everything, with the spec's error.

The spec (§10.2) documents ``SessionHandleClosedError`` with the text ``"<op> on a closed
handle"``; a disposed session's later append must fail (``/closed handle/``).  A handle that
forgets it was closed would let a late writer append to a log it no longer holds the lock of.
After a storage process stops cleanly its handle is closed: each operation is started and must
refuse at once, before any I/O (the refusal is the operation's first statement, so no event loop
is needed to see it).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from dsh_sim.evidence.invariants.base import Invariant, Judge, fail
from dsh_sim.evidence.invariants.moments import Shutdown
from runtime.persistence.errors import SessionHandleClosedError
from runtime.session.events import Event

if TYPE_CHECKING:
    from dsh_sim.engine.lifetime import Lifetime

NAME = "closed_handle_refuses"


def _refusal(call: Coroutine[Any, Any, Any]) -> BaseException | None:
    """Start ``call`` and return what it raised at once (``None``: it went on instead)."""
    try:
        call.send(None)
    except BaseException as err:  # (what it raised is the verdict)
        return err
    finally:
        call.close()
    return None


def check_closed_handle(obs: Judge, life: Lifetime) -> None:
    handle = life.handle
    if handle is None or life.session is None:
        return
    obs.count(NAME)
    late = Event("todo/write", handle.next_seq, 0, {"n": handle.next_seq, "text": "late"})
    for op, call in (("append", handle.append([late])), ("flush", handle.flush()), ("read", handle.read())):
        err = _refusal(call)
        expected = f"{op} on a closed handle"
        if not isinstance(err, SessionHandleClosedError) or str(err) != expected:
            got = "went on" if err is None else f"raised {type(err).__name__}: {err}"
            fail(obs, NAME, f"{op} on the closed write handle of process {life.index} {got}; the spec says {expected!r}")


def _stopped(obs: Judge, end: Shutdown) -> None:
    if end.primary and end.life.crash is None:
        check_closed_handle(obs, end.life)


CLOSED_HANDLE_REFUSES = Invariant(
    NAME,
    (
        "after a clean stop the closed write handle refuses append, flush and read at once with the "
        'spec\'s SessionHandleClosedError ("<op> on a closed handle")'
    ),
    checks={"shutdown": _stopped},
)
