"""``model_exchange``: both sides of the model port against the log and the spec's loop.

The spec's loop (§1.3, §1.6 steps 4-7, §10.1) fixes what a step appends before its request,
what the model is sent and how its answer is recorded; the simulator sees both sides: the log,
and every request the scripted model received and every part it delivered
(:class:`~dsh_sim.adapters.model.RequestMark`).  For each request:

* its turn and step are those of the ``step/start`` that opened the step;
* the step's inputs, appended together right after ``step/start``, are: the system prompt
  (config ``system``) when the log has none yet; then one ``user/message`` per entering message —
  in the first step of a prompt's turn, the prompt's own text (source ``user``) after any plugin
  notices; in later steps, plugin notices only;
* the model is offered every tool the process mounted, once, by its name and description;
* a ``request/header`` with the model's provider and model and the tools the request carries,
  appended with reason ``initial`` when the log has no header, ``resume`` when this process has
  not sent one yet, ``change`` when it differs from the last one — never otherwise; a
  ``request/context`` only when provider or model differ from the last one;
* the request's messages are exactly the log's surface (§1.3: user, system, assistant and tool
  result messages, in log order) at the instant it was built: derived history is computed only
  from the surface;
* once the step has ended, its ``assistant/message`` embeds exactly the chunks the model
  delivered (a cancellation may lose the last one), its content and usage are what those chunks
  make (§10.1: the embedded stream must reproduce the message), and it is marked interrupted
  exactly when a cancellation cut it short; a step without one had a failed stream or was
  cancelled before any content.

A process that died is judged by what it held in memory; a request whose step never ended in a
live process is judged when it does.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from dsh_sim.adapters.model import RequestMark, SimModel
from dsh_sim.evidence.invariants.base import Invariant, Judge, fail
from dsh_sim.evidence.oracles.shared_prefix import Findings

if TYPE_CHECKING:
    from dsh_sim.engine.lifetime import Lifetime

NAME = "model_exchange"
SURFACE = frozenset({"user/message", "assistant/message", "tool/result", "system/message"})  # §1.3, §10.1 (v3)
_INPUTS = frozenset({"system/message", "user/message", "request/header", "request/context"})


def _last(events: Sequence[Any], kind: str, before: int) -> Any:
    """The last ``kind`` event before index ``before`` (one of :data:`_LOOKED_UP`)."""
    for index, event in reversed(_LOOKUPS.of(events)):
        if index < before and event.type == kind:
            return event
    return None


_LOOKED_UP = frozenset({"system/message", "request/header", "request/context"})
# the events _last looks for, and the surface, of the log judged last: a long log's request
# context or system prompt lies at its start, and walking back to it at every request (and
# building the whole surface again) made exploring a long session quadratic
_LOOKUPS: Findings[Any] = Findings(lambda event: event if event.type in _LOOKED_UP else None)
_SURFACE: Findings[tuple[Any]] = Findings(lambda event: (event.data.get("message", event.data),) if event.type in SURFACE else None)


def _text(message: Any) -> str | None:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict) and content[0].get("type") == "text":
        return content[0].get("text")
    return None


def problems(
    events: Sequence[Any],
    mark: RequestMark,
    *,
    first_of_process: bool,
    system: str | None,
    prompt: str | None,
    mounted: Sequence[tuple[str, str]] = (),
) -> list[str]:
    """How the log and one request depart from the spec's loop (``events``: the log as the
    process held it; ``first_of_process``: no header was sent by this process before)."""
    start = next((i for i in range(mark.events - 1, -1, -1) if events[i].type == "step/start"), None)
    if start is None:
        return [f"a model request for turn {mark.turn} step {mark.step} outside any step"]
    out = []
    opened = events[start].data
    if (opened.get("turn"), opened.get("step")) != (mark.turn, mark.step):
        out.append(
            f"a request names turn {mark.turn} step {mark.step}, but it was made in turn {opened.get('turn')} step {opened.get('step')}"
        )
    end = start + 1
    while end < mark.events and events[end].type in _INPUTS:
        end += 1
    inputs = events[start + 1 : end]
    kinds = [e.type for e in inputs]
    # the system prompt, once, first
    systems = [e for e in inputs if e.type == "system/message"]
    wanted_system = system is not None and _last(events, "system/message", start) is None
    if len(systems) != int(wanted_system) or (systems and kinds[0] != "system/message"):
        out.append(f"step inputs {kinds}: the system prompt belongs first exactly when the log has none (config system {system!r})")
    elif systems and _text(systems[0].data["message"]) != system:
        out.append(f"the system message says {_text(systems[0].data['message'])!r}, the config's system prompt is {system!r}")
    # entering messages: plugin notices, then the prompt's text in its turn's first step
    users = [e.data for e in inputs if e.type == "user/message"]
    own = [m for m in users if isinstance(m.get("source"), dict) and m["source"].get("kind") == "user"]
    if mark.step == 1 and prompt is None:
        pass  # a turn no prompt of this process started (none does today): its entering messages are not known
    elif mark.step == 1:
        if len(own) != 1 or users[-1] is not own[0] or _text(own[0]) != prompt:
            texts = [_text(m) for m in own]
            out.append(f"the first step of the turn enters {texts} from the user after its notices, the prompt said {prompt!r}")
    elif own:
        out.append(f"step {mark.step} enters user messages {[_text(m) for m in own]}: only a turn's first step carries the prompt")
    order = [k for k in kinds if k != "system/message"]
    expected_order = sorted(order, key=["user/message", "request/header", "request/context"].index)
    if order != expected_order:
        out.append(f"step inputs in the order {kinds}: user messages, then the request header, then the context")
    # the tools offered: every tool the process mounted, once, by its name and description
    offered = [
        (t.get("name"), t.get("description")) if isinstance(t, dict) and set(t) == {"name", "description"} else t for t in mark.tools
    ]
    if mounted and sorted(offered, key=repr) != sorted(mounted, key=repr):
        out.append(f"the model is offered {offered}, the process mounted {sorted(mounted)} (each as {{name, description}})")
    # the request header and context
    header = {"config": {"provider": SimModel.provider, "model": SimModel.model}, "tools": list(mark.tools)}
    previous = _last(events, "request/header", start)
    if previous is None:
        reason: str | None = "initial"
    elif first_of_process:
        reason = "resume"
    elif previous.data.get("header") != header:
        reason = "change"
    else:
        reason = None
    headers = [e.data for e in inputs if e.type == "request/header"]
    wanted = [{"header": header, "reason": reason}] if reason is not None else []
    if headers != wanted:
        out.append(
            f"request headers {[(h.get('reason'), h.get('header')) for h in headers]} where the spec appends {[(w['reason'], w['header']) for w in wanted]}"
        )
    context = {"provider": SimModel.provider, "model": SimModel.model}
    last_context = _last(events, "request/context", start)
    contexts = [e.data for e in inputs if e.type == "request/context"]
    wanted_contexts = [context] if last_context is None or last_context.data != context else []
    if contexts != wanted_contexts:
        out.append(
            f"request contexts {contexts} where the spec appends {wanted_contexts} (the last one: {last_context.data if last_context else None})"
        )
    # what the model is sent: the surface, exactly
    surface = tuple(map(operator.itemgetter(0), _SURFACE.values_before(events, end)))
    if tuple(mark.messages) != surface:
        sent, due = len(mark.messages), len(surface)
        first = next((i for i in range(min(sent, due)) if mark.messages[i] != surface[i]), min(sent, due))
        out.append(f"the model was sent {sent} messages, the log's surface holds {due}; they part at message {first}")
    return out


def _as_utf16(text: str) -> str:
    """``text`` as a sequence of UTF-16 code units reads back: a high and a low surrogate next to
    each other are one character (lone ones stay as they are)."""
    if text.isascii():
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def assemble(chunks: Sequence[Any], *, interrupted: bool) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The content and usage a stream's chunks make (spec §1.5 chunk types; §10.1: the embedded
    stream must reproduce the message): text deltas joined per block, tool-call deltas joined into
    ``{type, id, name, arguments}``, blocks in index order; an interrupted or token-capped message
    owes no tool calls."""
    blocks: dict[int, dict[str, Any]] = {}
    usage, finish = None, None
    for chunk in chunks:
        kind = chunk.get("type")
        if kind == "text-delta":
            blocks.setdefault(chunk["index"], {"type": "text", "text": ""})["text"] += chunk["text"]
        elif kind == "tool-call-delta":
            block = blocks.setdefault(chunk["index"], {"type": "tool-call", "id": chunk["id"], "name": "", "arguments": ""})
            if "name" in chunk:
                block["name"] = chunk["name"]
            block["arguments"] += chunk["argumentsDelta"]
        elif kind == "usage":
            usage = {"inputTokens": chunk["inputTokens"], "outputTokens": chunk["outputTokens"]}
        elif kind == "finish":
            finish = chunk["reason"]["kind"]
    for block in blocks.values():  # deltas cut inside a surrogate pair join as JavaScript strings do
        key = "text" if block["type"] == "text" else "arguments"
        block[key] = _as_utf16(block[key])
    content = [blocks[i] for i in sorted(blocks)]
    if interrupted or finish == "max-tokens":
        content = [b for b in content if b["type"] != "tool-call"]
    return content, usage


def answer_problems(events: Sequence[Any], mark: RequestMark, *, cancelled: bool, ended: bool, died: bool = False) -> list[str] | None:
    """How the step's ``assistant/message`` departs from what the model delivered (None: not
    judgeable yet — the step is still streaming)."""
    message = next(
        (
            e
            for e in events[mark.events :]
            if e.type == "assistant/message" and (e.data.get("turn"), e.data.get("step")) == (mark.turn, mark.step)
        ),
        None,
    )
    delivered = [part.to_chunk() for part in mark.delivered]
    if message is None:
        if not ended:
            return None
        if mark.cut or died:  # (a process that died mid-answer appended nothing more)
            return []  # the stream failed: the turn ends with its error, no message
        empty = [k for k in (len(delivered), len(delivered) - 1) if k >= 0 and not assemble(delivered[:k], interrupted=True)[0]]
        if cancelled and empty:
            return []  # cancelled before any content: nothing to record (§1.6 step 7)
        return [f"the model delivered {len(delivered)} parts of its answer, but the step ended without an assistant message"]
    data = message.data
    records = data.get("stream")
    if not isinstance(records, list) or any(not isinstance(r, dict) or r.get("type") != "chunk" for r in records):
        return [f"assistant/message {message.seq} embeds no stream of chunk records (§10.1)"]
    stream = [r.get("chunk") for r in records]
    out = []
    kept = len(stream)
    if stream != delivered[:kept] or not (kept == len(delivered) or (cancelled and kept == len(delivered) - 1)):
        out.append(f"assistant/message {message.seq} embeds {kept} chunks, the model delivered {len(delivered)}: they differ")
    interrupted = data.get("interrupted") is True
    if interrupted and not cancelled:
        out.append(f"assistant/message {message.seq} is marked interrupted, but nothing cancelled its turn")
    if not interrupted and kept != mark.parts:
        out.append(f"assistant/message {message.seq} holds {kept} of the answer's {mark.parts} parts but is not marked interrupted")
    content, usage = assemble(stream, interrupted=interrupted)
    if data.get("message", {}).get("content") != content:
        out.append(f"assistant/message {message.seq}: its content is not what its stream makes (§10.1): {content!r}")
    if data.get("usage") != usage:
        out.append(f"assistant/message {message.seq}: usage {data.get('usage')!r}, its stream says {usage!r}")
    return out


def _recovered(life: Lifetime) -> int:
    report = life.report
    return len(report.events) + len(getattr(report, "closers", ())) if report is not None else 0


def check_answers(obs: Judge, pending: list[RequestMark]) -> list[RequestMark]:
    """Judge the answers of ``pending`` requests whose step has ended (or whose process died);
    returns those still streaming."""
    by_index = {life.index: life for life in obs.sim.lifetimes}
    waiting = []
    for mark in pending:
        life = by_index.get(mark.lifetime)
        if life is None or life.session is None:
            continue
        events = life.session.events
        ended = life.dead or any(
            e.type == "step/end" and (e.data.get("turn"), e.data.get("step")) == (mark.turn, mark.step) for e in events[mark.events :]
        )
        marks = obs.history.tool_marks
        cancelled = any(m.kind == "cancel" and m.lifetime == life.index and m.turn == mark.turn for m in marks)
        found = answer_problems(events, mark, cancelled=cancelled or life.dead, ended=ended, died=life.dead)
        if found is None:
            waiting.append(mark)
            continue
        if life.dead and not found:
            continue
        obs.count(NAME)
        for problem in found:
            fail(obs, NAME, problem, None, f"turn {mark.turn} step {mark.step}, process {life.index}")
    return waiting


def check_requests(obs: Judge, seen: int) -> int:
    """Judge the model requests made since mark ``seen`` against the log of the process that
    made each (as it held it: a process that died since is judged by its memory); returns the
    marks judged so far."""
    marks = obs.history.model_requests
    by_index = {life.index: life for life in obs.sim.lifetimes}
    for mark in marks[seen:]:
        life = by_index.get(mark.lifetime)
        if life is None or life.session is None or mark.events > len(life.session.events):
            continue
        events = life.session.events
        obs.count(NAME)
        start = next((i for i in range(mark.events - 1, -1, -1) if events[i].type == "step/start"), 0)
        first = not any(e.type == "request/header" for e in events[_recovered(life) : start])
        turn_start = next((i for i in range(start, -1, -1) if events[i].type == "turn/start"), None)
        prompt = next((text for lifetime, index, text in obs.history.prompts if lifetime == life.index and index == turn_start), None)
        config = obs.sim.config
        for problem in problems(events, mark, first_of_process=first, system=config.system, prompt=prompt, mounted=life.tools_mounted):
            fail(obs, NAME, problem, None, f"turn {mark.turn} step {mark.step}, process {life.index}")
    return len(marks)


@attrs.define
class _Exchange:
    seen: int = 0  # model requests judged
    pending: list[RequestMark] = attrs.field(factory=list)  # requests whose answer is still streaming


def judge_exchange(obs: Judge, _: object) -> None:
    """Each model request as it was sent, and its answer once its step has ended."""
    if obs.sim.kind != "agent":
        return
    exchange: _Exchange = obs.memory(NAME)
    seen = exchange.seen
    exchange.seen = check_requests(obs, seen)
    exchange.pending = check_answers(obs, exchange.pending + obs.history.model_requests[seen : exchange.seen])


MODEL_EXCHANGE = Invariant(
    NAME,
    (
        "both sides of the model port agree with the log and the spec's loop (§1.3, §1.6, §10.1): each "
        "step appends exactly its inputs before its request (the system prompt once, first; the prompt's "
        "text in its turn's first step after any plugin notices, no user message in later steps; a "
        "request/header with the model's provider, model and tools only as initial, resume or change, a "
        "request/context only on a change); the request names its step, offers every mounted tool by name"
        " and description and carries exactly the log's surface; and the step's assistant/message embeds "
        "exactly the chunks the model delivered (the last one may be lost to a cancellation), its content"
        " and usage are what they make, and it is marked interrupted exactly when a cancellation cut it "
        "short — none is appended only for a failed stream or a cancellation before any content"
    ),
    checks={"step": judge_exchange, "shutdown": judge_exchange},
    memory=lambda obs: _Exchange(),
)
