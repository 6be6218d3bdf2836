"""The logical description of a historical (v0) session: what the old runtime meant to log.

A :class:`V0Session` says, turn by turn and step by step, what happened — the user's text,
the system prompt of each request, the streamed reasoning, text and tool calls with their
delta pieces, a streamed attempt the provider broke off, the tool results — and how the log
ends: balanced, or cut by a crash of the old runtime (an open stream, an open call, an open
step), its last batch torn at a chosen place or damaged.  :mod:`.plan` turns it into the
events the old runtime logged; :mod:`.render` and :mod:`.expect` derive the v0 bytes and the
migrated v3 events from that one plan, independently of the runtime under test.
"""

from __future__ import annotations

import attrs

SHAPES = ("text", "tools")  # what each turn holds
ENDS = ("balanced", "open-stream", "open-call", "open-step", "ended-step-call", "orphan-call")  # how the final turn stops
CALL_ENDS = ("open-call", "ended-step-call", "orphan-call")  # ends that need a step with tool calls
TEARS = ("half", "row", "tail")  # where a torn final batch is cut


@attrs.frozen
class V0Call:
    """One tool call of a streamed answer: its tool-call-delta pieces, its ``tool/call`` and result."""

    id: str
    name: str
    arguments: str  # the raw JSON text the pieces add up to
    pieces: tuple[str, ...]  # argumentsDelta of each tool-call-delta chunk
    named_deltas: bool  # every delta names the tool (packs whole); else only the first does
    result: str  # the text of its tool/result


@attrs.frozen
class V0Stream:
    """One streamed model answer: blocks in order reasoning, text, tool calls; then finish."""

    reasoning: tuple[str, ...] = ()  # reasoning-delta pieces (none: no reasoning block)
    text: tuple[str, ...] = ()  # text-delta pieces (none: no text block)
    calls: tuple[V0Call, ...] = ()

    @property
    def finish(self) -> str:
        return "tool-calls" if self.calls else "stop"


@attrs.frozen
class V0Step:
    user: str | None  # the user message entering the step (None: it continues after tool results)
    system: str | None  # the system prompt of the step's request (None: its header names none)
    answer: V0Stream
    abandoned: tuple[str, ...] = ()  # text pieces of an attempt the provider broke off (then llm/retry)


@attrs.frozen
class V0Turn:
    steps: tuple[V0Step, ...]


@attrs.frozen
class V0Session:
    session_id: str
    cwd: str
    turns: tuple[V0Turn, ...]
    notes: int = 0  # log-only todo/write events in a last batch
    end: str = "balanced"  # how the final turn stops (ENDS)
    inherited: int = 0  # leading turns inherited from a parent session (header seedLength)
    title: bool = False  # a session/title naming the first turn's user message, after that turn
    subagent: bool = False  # a subagent's session (header origin "subagent", delegationDepth 1)
    compact: bool = False  # a compaction after the first turn: a summary replacing that turn's surface
    legacy: bool = False  # the first turn holds the retired vocabulary migration renames or renumbers
    batch: int = 0  # 0: one durable batch per turn; n: a batch every n events (a window cuts anywhere)
    jitter: bool = False  # uneven arrival times (packed rows with uneven and negative gaps)
    tear: str | None = None  # the final batch is torn (TEARS: where the cut lands)
    damaged: bool = False  # a byte of the final batch is flipped (zstd: inside its complete frame)
