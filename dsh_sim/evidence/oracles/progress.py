"""Progress: what a quiet turn must achieve, predicted from the scenario's own script.

Safety checks hold vacuously for a runtime that does nothing — a tool pipeline that denies
every call never applies an unsafe effect.  So for a turn that ran with no fault, no crash
and no cancellation, the outcome of every scripted call is predicted from the script alone,
as the spec describes the route (§5, §6, §7):

* the model emits its responses in order; each response with tool calls is one step, and the
  first response without calls ends the turn, which completes — unless step ``max_steps`` (the
  runtime's step limit) still has calls: its calls run, and the turn then ends with an error;
  a response cut off at the token limit (``finish: max-tokens``) ends the turn ``max-tokens``,
  and none of its calls appears (a cut-off message never owes tool calls);
* with the deployment's policy plugin (config ``policy``), the call's gate decides first: a
  gate that denies, raises or gives no decision fails the call, one that allows needs no
  question, one that asks sends any tool to the approval seam; after an allow the guard may
  deny or raise (it fails); a post-execute review that blocks or raises fails it too;
* a call to a tool the deployment does not have fails;
* a call to a tool that needs approval (or that the gate asks about) succeeds only when the
  session's policy is ``ask`` and the next scripted answer is ``allowed-once`` (``never``
  denies without asking; no approval service denies; an answer that fails or is not in the
  vocabulary denies);
* a turn whose scripted delays (gates, guards, the user's answers) add up to its horizon or
  more may not finish within it: it is not judged (nor is one given less than the default
  horizon that has not finished when its prompt returns);
* a shell call succeeds when its command exists, its argv is UTF-8 text (no lone surrogate)
  and the session's sandbox mode allows what it does (``read-only`` refuses every write, ``workspace-write`` refuses writes outside the
  workspace);
* a ``write_file`` call (the runtime's own tool) succeeds when its content is text and its path
  names a file directly in the workspace (the simulated workspace holds no directories), both
  UTF-8 text (a lone surrogate, which the log may hold, has no UTF-8);
* every other call — payments, messages, reads, notes, nested batches — succeeds.

The runtime's log must show exactly that: each scripted call once, in order, each with one
result whose success is the predicted one, and the turn completed.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Any

import attrs

# answers an approval question may get; anything else (or none left) is "unavailable"
_HANG = "hang"


@attrs.frozen
class Predicted:
    calls: tuple[tuple[str, str, bool], ...]  # (call id, tool, succeeds) in the model's order
    blocked: bool = False  # a scripted answer hangs: the turn cannot complete on its own
    ends: str = "completed"  # how the turn ends: "error" when it reaches the step limit, "max-tokens" when cut off


def predict(
    responses: Sequence[Any],
    approvals: Sequence[str],
    *,
    approval_policy: str | None,
    approval_tools: Sequence[str],
    sandbox_mode: str,
    workspace: str,
    max_steps: int,
    policy: bool = False,
    approval_delay: float = 0.0,
    horizon: float = float("inf"),
) -> Predicted:
    answers = list(approvals)
    calls: list[tuple[str, str, bool]] = []
    delays = 0.0
    for step, response in enumerate(responses, 1):
        if getattr(response, "finish", None) == "max-tokens":
            return Predicted(tuple(calls), ends="max-tokens")  # cut off: its calls are never owed, the turn ends
        if not response.tool_calls:
            break
        for call in response.tool_calls:
            gate, guard, post = (call.gate, call.guard, call.post) if policy else ("pass", "pass", "accept")
            delays += (call.gate_delay + call.guard_delay) if policy else 0.0
            if gate in ("deny", "raise", "invalid"):
                calls.append((call.id, call.name, False))
                continue
            if gate == "ask" or (gate == "pass" and call.name in approval_tools):
                if approval_policy != "ask":
                    calls.append((call.id, call.name, False))
                    continue
                answer = answers.pop(0) if answers else "unavailable"
                if answer == _HANG:
                    return Predicted(tuple(calls), blocked=True)
                delays += approval_delay
                if answer != "allowed-once":
                    calls.append((call.id, call.name, False))
                    continue
            if guard != "pass" or post != "accept" or call.name == "no_such_tool":  # (no such tool: fails at dispatch)
                calls.append((call.id, call.name, False))
            elif call.name == "shell":
                calls.append((call.id, call.name, _shell_succeeds(call.arguments, sandbox_mode, workspace)))
            elif call.name == "write_file":
                calls.append((call.id, call.name, _write_file_succeeds(call.arguments, workspace)))
            else:
                calls.append((call.id, call.name, True))
        if step >= max_steps:
            return Predicted(tuple(calls), ends="error", blocked=delays >= horizon)
    return Predicted(tuple(calls), blocked=delays >= horizon)


def _shell_succeeds(arguments: Any, mode: str, workspace: str) -> bool:
    argv = arguments.get("argv") if isinstance(arguments, dict) else None
    if not isinstance(argv, list) or not argv:
        return False
    if not all(isinstance(arg, str) and is_utf8_text(arg) for arg in argv):  # refused before it runs
        return False
    if argv[0] == "echo":
        return True
    if argv[0] != "write" or len(argv) != 3:
        return False
    if mode == "read-only":
        return False
    if mode == "workspace-write":
        path = posixpath.normpath(posixpath.join(workspace, argv[1]))
        return (path + "/").startswith(workspace.rstrip("/") + "/")
    return True


def is_utf8_text(text: str) -> bool:
    """Whether ``text`` has a UTF-8 form: a lone surrogate (which the log may hold) has none, and
    the runtime's tools refuse such a path, content or argv before touching anything."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _write_file_succeeds(arguments: Any, workspace: str) -> bool:
    """The runtime's ``write_file``: a text file at a path inside the workspace (not a link's
    way out, not through a missing directory: the simulated workspace holds no directories)."""
    if not isinstance(arguments, dict) or not isinstance(arguments.get("content"), str) or not isinstance(arguments.get("path"), str):
        return False
    if not (is_utf8_text(arguments["content"]) and is_utf8_text(arguments["path"])):
        return False
    path = posixpath.normpath(posixpath.join(workspace, arguments["path"]))
    return posixpath.dirname(path) == posixpath.normpath(workspace)


def differences(predicted: Predicted, turn: Sequence[Any]) -> list[str]:
    """How the log of one turn (its events, ``turn/start`` first) departs from the prediction."""
    if predicted.blocked:
        return []
    blocks: list[str] = []
    results: dict[str, list[bool]] = {}
    reason = None
    for event in turn:
        if event.type == "assistant/message":
            blocks += [b["id"] for b in event.data["message"]["content"] if b.get("type") == "tool-call"]
        elif event.type == "tool/result":
            ok = not event.data["message"]["content"][0].get("isError")
            results.setdefault(event.data["message"]["source"]["callId"], []).append(ok)
        elif event.type == "turn/end":
            reason = event.data["reason"]["kind"]
    out = []
    if reason != predicted.ends:
        out.append(f"a quiet turn ended {reason!r}, not {predicted.ends}")
    expected_ids = [call_id for call_id, _, _ in predicted.calls]
    if blocks != expected_ids:
        out.append(f"the model's calls {expected_ids} appear in the log as {blocks}")
    for call_id, tool, succeeds in predicted.calls:
        got = results.get(call_id, [])
        if len(got) != 1:
            out.append(f"{tool} call {call_id} has {len(got)} results")
        elif got[0] != succeeds:
            out.append(
                f"{tool} call {call_id} {'failed' if succeeds else 'succeeded'}, but in a quiet turn it {'succeeds' if succeeds else 'is refused'}"
            )
    return out
