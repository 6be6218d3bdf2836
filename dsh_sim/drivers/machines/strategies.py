"""Hypothesis strategies for concrete step arguments (tool-call scripts, faults, crashes)."""

from __future__ import annotations

import functools
from typing import Any

from hypothesis import strategies as st

WORKSPACE_FILE = "/sim/workspace/notes.txt"
# side-effecting tools first: shrinking moves toward the front of a sampled_from list
TOOL_ORDER = ("pay", "pay_legacy", "write_note", "shell", "batch_pay", "send_message", "get_balance", "lookup_payment", "no_such_tool")

# Points where a crash separates the four moments of a call (and a few barriers around them).
MOMENT_POINTS = (
    "llm.request",  # before moment 1
    "agent.assistant.appended",  # after 1, before 2
    "tools.call.appended",  # 1→2: tool/call in memory only
    "session.flush",  # a barrier is starting
    "tools.execute.body",  # 2→3: tool/call durable, nothing delivered
    "world.deliver",  # 2→3: the request is about to reach the service
    "world.respond",  # 3→4: the effect happened
    "tools.result.appended",  # 3→4: result in memory only
    "agent.pre_step",  # before the next step's barrier (after 4 once it lands)
    "agent.turn.end",
    "persist.batch.durable",  # right after an acknowledgement
)
FS_POINTS = ("fs.write", "fs.fsync", "fs.link", "fs.fsync_dir", "fs.ftruncate", "fs.mkdir", "fs.open", "fs.unlink")


# Strategies are built once, here: Hypothesis validates every new strategy object on its first
# draw, and building these per draw (a fresh dict or list argument is never cached) cost about a
# fifth of a fuzz run.  Drawing from a prebuilt strategy gives exactly the same values.
_PEOPLE = st.sampled_from(["alice", "bob"])
_ARGUMENTS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "pay": st.fixed_dictionaries({"to": _PEOPLE, "amount": st.integers(1, 50)}),
    "send_message": st.fixed_dictionaries({"to": _PEOPLE, "text": st.sampled_from(["hi", "done"])}),
    # one read in three has no account: get_balance's classifier raises on it (KeyError for an
    # empty object, TypeError for raw text), and the call must run alone
    "get_balance": st.sampled_from(
        [{"account": "alice"}, {"account": "bob"}, {"account": "alice"}, {"account": "bob"}, {}, "balance of bob"]
    ),
    "write_note": st.fixed_dictionaries({"path": st.just(WORKSPACE_FILE), "text": st.sampled_from(["a", "b"])}),
    "batch_pay": st.fixed_dictionaries(
        {"payments": st.lists(st.fixed_dictionaries({"to": _PEOPLE, "amount": st.integers(1, 9)}), min_size=1, max_size=2)}
    ),
    "shell": st.fixed_dictionaries({"argv": st.sampled_from([["echo", "hi"], ["write", "out.txt", "x"], ["write", "/etc/passwd", "pwn"]])}),
}
_ARGUMENTS["pay_legacy"] = _ARGUMENTS["pay"]
_ARGUMENTS["no_such_tool"] = st.just({})  # a name the model invented


# one lookup in five is raw text: empty (the spec parses it as {}: the call may run in parallel)
# or not JSON (its classifier answers with the text, truthy but not True: the call runs alone)
_RAW_LOOKUPS = st.sampled_from(["", "lookup c0"])


@functools.lru_cache(maxsize=64)
def _lookup_arguments(earlier_calls: tuple[str, ...]) -> st.SearchStrategy[Any]:
    by_key = st.fixed_dictionaries({"key": st.sampled_from(list(earlier_calls) or ["c0"])})
    return st.integers(0, 4).flatmap(lambda n: _RAW_LOOKUPS if n == 4 else by_key)  # (shrinks toward a lookup by key)


def tool_arguments(name: str, earlier_calls: list[str]) -> st.SearchStrategy[Any]:
    if name == "lookup_payment":
        return _lookup_arguments(tuple(earlier_calls))
    if name not in _ARGUMENTS:
        raise KeyError(name)
    return _ARGUMENTS[name]


_RESPONSE_COUNT = st.integers(1, 3)
_CALL_COUNT = st.sampled_from([2, 1, 0, 3])
_TOOL = st.sampled_from(TOOL_ORDER)
_RESPONSE_TEXT = st.sampled_from(["working", "ok"])
_APPROVALS = st.lists(st.sampled_from(["allowed-once", "rejected", "unavailable", "cancelled", "hang", "raise", "yolo"]), max_size=2)
_PROMPT_TEXT = st.sampled_from(["go", "pay please"])


_CUT_OFF = st.integers(0, 9).map(lambda n: n == 9)  # one answer with calls in ten (shrinks toward 0: not cut off)

# config policy: how the deployment's gate and guard answer a call, and how long they take
# (defaults first: examples shrink toward a call the policy hands on at once)
_GATE = st.sampled_from(["pass", "pass", "pass", "allow", "deny", "ask", "raise", "invalid"])
_GUARD = st.sampled_from(["pass", "pass", "pass", "pass", "deny", "raise"])
_POST = st.sampled_from(["accept", "accept", "accept", "accept", "block", "raise"])
_POLICY_DELAY = st.sampled_from([0.0, 0.0, 0.0, 0.3, 30.0])
# the simulated user's time to answer, and the turn's horizon: a turn that has not finished
# when its prompt returns can be cancelled while a gate, a guard or the user still decides
_APPROVAL_DELAY = st.sampled_from([0.0, 0.0, 0.0, 0.5, 30.0])
_HORIZON = st.sampled_from([600.0, 600.0, 600.0, 10.0])


def aimable_calls(script: dict[str, Any]) -> list[tuple[int, str]]:
    """(1-based response, call id) of each call a crash can be aimed at: the answers the turn
    reaches and carries out.  An answer cut off at the token limit ends the turn owing no
    calls (spec: ``max-tokens``), so neither its calls nor any later answer's ever run."""
    calls: list[tuple[int, str]] = []
    for step, response in enumerate(script["responses"], start=1):
        if response.get("finish") == "max-tokens":
            break
        calls.extend((step, call["id"]) for call in response.get("tool_calls", ()))
    return calls


def _policy_script(draw: st.DrawFn) -> dict[str, Any]:
    """A call's gate and guard answers and delays, defaults left out (a readable scenario)."""
    script = {
        "gate": draw(_GATE),
        "gate_delay": draw(_POLICY_DELAY),
        "guard": draw(_GUARD),
        "guard_delay": draw(_POLICY_DELAY),
        "post": draw(_POST),
    }
    return {key: value for key, value in script.items() if value not in ("pass", 0.0, "accept")}


@st.composite
def turn_script(draw: st.DrawFn, next_id: list[int], policy: list[bool] | None = None) -> dict[str, Any]:
    """A prompt with 1–3 model responses; tool calls get fresh, concrete call ids; with the
    deployment's policy plugin (``policy[0]``) each call scripts its gate and guard."""
    responses = []
    earlier = [f"c{i}" for i in range(max(1, next_id[0] - 3), next_id[0])]
    for _ in range(draw(_RESPONSE_COUNT)):
        calls = []
        for _ in range(draw(_CALL_COUNT)):
            name = draw(_TOOL)
            call_id = f"c{next_id[0]}"
            next_id[0] += 1
            call = {"id": call_id, "name": name, "arguments": draw(tool_arguments(name, earlier))}
            if policy is not None and policy[0]:
                call.update(_policy_script(draw))
            calls.append(call)
        response: dict[str, Any] = {"text": draw(_RESPONSE_TEXT), "tool_calls": calls} if calls else {"text": "done"}
        if calls:
            cut_off: bool = draw(_CUT_OFF)
            if cut_off:  # the token limit cuts the answer off mid-call: the turn ends there
                response["finish"] = "max-tokens"
        responses.append(response)
    approvals = draw(_APPROVALS)
    script: dict[str, Any] = {"text": draw(_PROMPT_TEXT), "responses": responses, "approvals": approvals}
    delay, horizon = draw(_APPROVAL_DELAY), draw(_HORIZON)
    if delay:
        script["approval_delay"] = delay
    if horizon != 600.0:
        script["horizon"] = horizon
    return script


crash_specs = st.one_of(
    st.just({"kind": "kill"}),
    st.builds(lambda s: {"kind": "power", "state": s}, st.sampled_from(["drop", "keep", "random"])),
    # any byte position of the last unsynced write: a float, not a few fixed fractions
    st.builds(lambda f: {"kind": "power", "state": "torn", "torn_fraction": f}, st.floats(0.0, 1.0, allow_nan=False)),
)

# The deployment's timing, drawn once per run: filesystem latency and slow fsyncs make a
# background window write still be in flight when a barrier, an append, a failure or a crash
# arrives; the perturbation lets other tasks go first at named points.  Zero first: examples
# shrink toward an instant, unperturbed disk.
timings = st.fixed_dictionaries(
    {
        "io_latency": st.sampled_from([0.0, 0.001, 0.02]),
        "fsync_latency": st.sampled_from([0.0, 0.005, 0.3]),
        "perturb": st.sampled_from([0.0, 0.25, 0.6]),
    }
)
# The deployment's shape, drawn once per run (defaults first): a smaller tool pool, and a model
# adapter that cannot be cancelled (the loop must notice a cancellation between parts itself)
deployments = st.fixed_dictionaries(
    {"max_parallel_tool_calls": st.sampled_from([10, 10, 2]), "model_uncancellable": st.sampled_from([False, False, True])}
)

# Media corruption: one byte of the session log flips on the medium (negative: from the end),
# at a point where the log exists; readers must refuse a damaged complete frame, never guess.
corruptions = st.builds(
    lambda point, offset: {"point": point, "action": "corrupt", "corrupt_offset": offset},
    st.sampled_from(["persist.batch.durable", "session.flush"]),
    st.integers(-64, 4096),
)
# the failures of a background window write (what it meets: the write or the fsync)
window_write_faults = st.one_of(
    st.builds(lambda e: {"point": "fs.write", "action": "error", "errno": e}, st.sampled_from(["EIO", "ENOSPC"])),
    st.builds(lambda d: {"point": "fs.fsync", "action": "fsync_fail", "errno": "EIO", "drop_dirty": d}, st.booleans()),
)

io_faults = st.one_of(
    st.builds(lambda e: {"point": "fs.write", "action": "error", "errno": e}, st.sampled_from(["EIO", "ENOSPC"])),
    st.builds(lambda d: {"point": "fs.fsync", "action": "fsync_fail", "errno": "EIO", "drop_dirty": d}, st.booleans()),
    st.just({"point": "fs.link", "action": "error", "errno": "EIO"}),
    st.just({"point": "fs.fsync_dir", "action": "error", "errno": "EIO"}),
    st.just({"point": "fs.ftruncate", "action": "error", "errno": "EIO"}),
)
domain_faults = st.one_of(
    st.builds(lambda a: {"point": "world.deliver", "action": a}, st.sampled_from(["request_lost", "duplicate"])),
    st.just({"point": "world.respond", "action": "response_lost"}),
    st.just({"point": "approval.answer", "action": "answerer_failure"}),
    st.just({"point": "sandbox.confine", "action": "sandbox_unavailable"}),
    st.just({"point": "tools.execute.body", "action": "tool_failure"}),
    st.just({"point": "model.stream", "action": "stream_cut"}),
    st.builds(
        lambda p: {"point": p, "action": "cancel"},
        st.sampled_from(
            [
                "tools.call.appended",
                "session.flush",
                "llm.chunk",
                "tools.execute.body",
                "approval.answer",
                "policy.gate",
                "policy.guard",
                "policy.post",
                "world.deliver",
            ]
        ),
    ),
)


def aimed_crash_rule(
    script: dict[str, Any], step: int, call_id: str, boundary: str, crash: dict[str, Any], lifetime: int
) -> dict[str, Any]:
    """The fault rule that crashes at ``boundary`` of one call of ``script``.

    ``step`` is the 1-based position, within the prompt, of the model response that emits the
    call; hits of per-turn points count from the moment the rule is armed (just before the
    prompt), so ``llm.request`` hit ``step`` is exactly that response's request.
    """
    base: dict[str, Any] = {"action": "crash", "lifetime": lifetime, "crash": crash}
    if boundary == "before 1":
        return {**base, "point": "llm.request", "hit": step}
    if boundary == "1→2":
        return {**base, "point": "tools.call.appended", "hit": 1, "match": {"call_id": call_id}}
    if boundary == "2→3":  # the first request of the call (or of its nested calls) reaches the world
        return {**base, "point": "world.deliver", "hit": 1, "match": {"root_call_id": call_id}}
    if boundary == "3→4":  # the first effect of the call happened; its result is not yet durable
        return {**base, "point": "world.respond", "hit": 1, "match": {"root_call_id": call_id}}
    return {**base, "point": "llm.request", "hit": step + 1}  # after 4: the next request


BOUNDARY_CHOICES = ("none", "before 1", "1→2", "2→3", "3→4", "after 4")
