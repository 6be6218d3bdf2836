"""``step_inputs``: what each step appends before its model request, and what the model is sent.

The spec's loop (§1.6 steps 4-5, §1.3) fixes both, and the simulator sees both sides: the log,
and every request the scripted model received (:class:`~dsh_sim.adapters.model.RequestMark`).
For each request of a live process:

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
  from the surface.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dsh_sim.adapters.model import RequestMark, SimModel
from dsh_sim.evidence.invariants.base import Judge, fail

if TYPE_CHECKING:
    from dsh_sim.engine.lifetime import Lifetime

NAME = "step_inputs"
SURFACE = frozenset({"user/message", "assistant/message", "tool/result", "system/message"})  # §1.3, §10.1 (v3)
_INPUTS = frozenset({"system/message", "user/message", "request/header", "request/context"})


def _last(events: Sequence[Any], kind: str, before: int) -> Any:
    return next((events[i] for i in range(before - 1, -1, -1) if events[i].type == kind), None)


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
    surface = tuple(e.data.get("message", e.data) for e in events[:end] if e.type in SURFACE)
    if tuple(mark.messages) != surface:
        sent, due = len(mark.messages), len(surface)
        first = next((i for i in range(min(sent, due)) if mark.messages[i] != surface[i]), min(sent, due))
        out.append(f"the model was sent {sent} messages, the log's surface holds {due}; they part at message {first}")
    return out


def _recovered(life: Lifetime) -> int:
    report = life.report
    return len(report.events) + len(getattr(report, "closers", ())) if report is not None else 0


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
