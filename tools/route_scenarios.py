"""Write the route regression scenarios (scenarios/regressions/route-*.json): the deployment's
gate and guard answering every way, late, and cancelled at each stage of the pipeline; the
approval seam answered late, never, or after its call's cancellation; a graceful stop in each.

Run: ``python tools/route_scenarios.py`` then ``dsh-sim replay --update-digest scenarios/regressions/route-*.json``.
"""

from __future__ import annotations

from typing import Any

from _scenario_files import arm, write_scenarios

POLICY = {"policy": True}


def call(call_id: str, tool: str, **script: Any) -> dict[str, Any]:
    arguments = {
        "pay": {"to": "bob", "amount": 3},
        "send_message": {"to": "alice", "text": "hi"},
        "get_balance": {"account": "bob"},
        "no_such_tool": {},
        "write_note": {"path": "/sim/workspace/notes.txt", "text": "a"},
        "batch_pay": {"payments": [{"to": "bob", "amount": 1}, {"to": "carol", "amount": 2}]},
    }[tool]
    return {"id": call_id, "name": tool, "arguments": arguments, **script}


def prompt(*steps: list[dict[str, Any]], **args: Any) -> dict[str, Any]:
    responses = [{"text": f"step {i}", "tool_calls": calls} for i, calls in enumerate(steps, 1)] + [{"text": "done"}]
    return {"op": "prompt", "args": {"text": "go", "responses": responses, **args}}


BOOT = {"op": "boot"}
AFTER = prompt()  # a quiet turn after: the session goes on

SCENARIOS: dict[str, tuple[str, dict[str, Any], list[dict[str, Any]]]] = {
    "route-gate-answers-every-way": (
        "the deployment's pre-execute gate answers each call its own way: allow (a message that needs approval goes out "
        "unasked), deny, ask (a payment goes to the user, who allows it), raise (the call fails closed: a final error, no "
        "post-execute, no effect); a pass hands on to the default (a message asks). The route model predicts every result "
        "and question exactly",
        POLICY,
        [
            BOOT,
            prompt(
                [call("c1", "send_message", gate="allow")],
                [call("c2", "pay", gate="deny")],
                [call("c3", "pay", gate="ask")],
                [call("c4", "pay", gate="raise")],
                [call("c5", "send_message")],
                approvals=["allowed-once", "rejected"],
            ),
            AFTER,
        ],
    ),
    "route-guard-answers-after-every-allow": (
        "the monotonic guard runs after every allow — the gate's, the default's, and the user's allowed-once — and may only "
        "deny: it denies an approved message, fails (a final error, the call fails closed) after an allowed payment, and "
        "never runs for a call the gate denied",
        POLICY,
        [
            BOOT,
            prompt(
                [call("c1", "send_message", guard="deny")],
                [call("c2", "pay", guard="raise")],
                [call("c3", "pay", gate="allow", guard="deny")],
                [call("c4", "pay", gate="deny", guard="raise")],
                [call("c5", "get_balance", guard="pass")],
                approvals=["allowed-once"],
            ),
            AFTER,
        ],
    ),
    "route-late-gate-cancelled-while-deciding": (
        "the gate takes 5 s to answer; the user cancels the turn after 1 s, while it decides: the gate's allow comes after "
        "the cancellation, so the call is ABORTED_BEFORE_DISPATCH — no guard, no body, no payment",
        POLICY,
        [BOOT, prompt([call("c1", "pay", gate="allow", gate_delay=5.0)], horizon=1.0), {"op": "cancel", "args": {"settle": 10.0}}, AFTER],
    ),
    "route-late-guard-cancelled-while-deciding": (
        "the guard takes 5 s to say yes; the user cancels after 1 s: the allow stands but the call is cancelled before "
        "dispatch — ABORTED_BEFORE_DISPATCH, nothing paid",
        POLICY,
        [BOOT, prompt([call("c1", "pay", guard_delay=5.0)], horizon=1.0), {"op": "cancel", "args": {"settle": 10.0}}, AFTER],
    ),
    "route-approval-answered-late-after-cancel": (
        "the user takes 5 s to allow a message; the turn is cancelled after 1 s, while the question waits: the question is "
        "decided cancelled at once (the late answer is discarded, the user never answers after it) and the call is "
        "ABORTED_BEFORE_DISPATCH",
        {},
        [
            BOOT,
            prompt([call("c1", "send_message")], approvals=["allowed-once"], approval_delay=5.0, horizon=1.0),
            {"op": "cancel", "args": {"settle": 10.0}},
            AFTER,
        ],
    ),
    "route-approval-answered-late-in-time": (
        "the user takes 2 s to answer each of two questions (allow, then reject) and nothing cancels: both answers count",
        {},
        [
            BOOT,
            prompt([call("c1", "send_message")], [call("c2", "send_message")], approvals=["allowed-once", "rejected"], approval_delay=2.0),
            AFTER,
        ],
    ),
    "route-cancel-at-each-stage": (
        "one call per pipeline stage, each cancelled there by the fault plan in its own turn: as its gate answers, as its "
        "guard answers, as the user is asked, as post-execute sees its result. Before dispatch a cancellation is "
        "ABORTED_BEFORE_DISPATCH (a denial still stands), after the body returned the result stands",
        POLICY,
        [
            BOOT,
            arm("policy.gate", "cancel", match={"call_id": "g1"}),
            prompt([call("g1", "pay")]),
            arm("policy.gate", "cancel", match={"call_id": "g2"}),
            prompt([call("g2", "pay", gate="deny")]),
            arm("policy.guard", "cancel", match={"call_id": "u1"}),
            prompt([call("u1", "pay")]),
            arm("approval.answer", "cancel", match={"call_id": "a1"}),
            prompt([call("a1", "send_message")], approvals=["allowed-once"]),
            arm("policy.post", "cancel", match={"call_id": "p1"}),
            prompt([call("p1", "pay")]),
            AFTER,
        ],
    ),
    "route-stop-while-gate-decides": (
        "a graceful stop (the end of the run) while the gate takes its time and the next call waits behind it: the step is "
        "torn down, the deciding call and the unstarted one are ABORTED_BEFORE_DISPATCH, nothing is paid, all of it durable",
        POLICY,
        [BOOT, prompt([call("c1", "pay", gate_delay=30.0), call("c2", "pay")], horizon=1.0)],
    ),
    "route-stop-while-a-parallel-body-runs": (
        "a graceful stop while a parallel group's first read is in its body (its service is slow: a 30 s delay) and the "
        "second has been denied by the gate but not settled: the running call is ABORTED (its body started), the denied "
        "one ABORTED_BEFORE_DISPATCH, in the model's order, nothing else runs",
        POLICY,
        [
            BOOT,
            arm("world.deliver", "delay", delay=30.0, match={"call_id": "c1"}),
            prompt([call("c1", "get_balance"), call("c2", "get_balance", gate="deny")], horizon=1.0),
        ],
    ),
    "route-never-by-default": (
        "the deployment's approval policy is never (config approval_policy, no approval/policy event): a message that "
        "needs approval is rejected without asking the user, a payment runs",
        {"approval_policy": "never"},
        [BOOT, prompt([call("c1", "send_message")], [call("c2", "pay")], approvals=["allowed-once"]), AFTER],
    ),
    "route-stop-while-user-thinks": (
        "a graceful stop (the end of the run) while the user takes 30 s to answer: the question is decided cancelled, the "
        "call is ABORTED_BEFORE_DISPATCH, and everything is durable",
        {},
        [BOOT, prompt([call("c1", "send_message")], approvals=["allowed-once"], approval_delay=30.0, horizon=1.0)],
    ),
    "route-parallel-group-with-gate-and-guard": (
        "a parallel group of balance reads whose gate and guard answer differently and late: each call's decision is its "
        "own, the group still commits in the model's order",
        POLICY,
        [
            BOOT,
            prompt(
                [
                    call("r1", "get_balance", gate_delay=0.3),
                    call("r2", "get_balance", gate="deny"),
                    call("r3", "get_balance", guard="deny", guard_delay=0.1),
                    call("r4", "get_balance", gate="raise"),
                ]
            ),
            AFTER,
        ],
    ),
    "route-policy-never-with-gate-ask": (
        "the session's approval policy is never: a gate that asks gets rejected by the service without the user being asked; "
        "a gate that allows a message needs no question at all",
        POLICY,
        [
            BOOT,
            {"op": "set_approval_policy", "args": {"policy": "never"}},
            prompt([call("c1", "pay", gate="ask")], [call("c2", "send_message", gate="allow")], approvals=["allowed-once"]),
            AFTER,
        ],
    ),
    "route-gate-without-a-decision-and-post-execute-reviews": (
        "a gate that answers with no decision at all denies (never allows); the deployment's post-execute review blocks one "
        "result (an error carrying its feedback) and fails on another (a final error); the user's answer 'cancelled' — not a "
        "cancellation of the call — is a denial, not ABORTED_BEFORE_DISPATCH",
        POLICY,
        [
            BOOT,
            prompt(
                [call("c1", "pay", gate="invalid")],
                [call("c2", "pay", post="block")],
                [call("c3", "get_balance", post="raise")],
                [call("c4", "send_message")],
                approvals=["cancelled"],
            ),
            AFTER,
        ],
    ),
    "route-ask-without-an-approval-service": (
        "no approval service is mounted: a call that needs approval, and one the gate asks about, are denied with the ask's "
        "reason — never allowed, never asked",
        {"policy": True, "approval_policy": None},
        [BOOT, prompt([call("c1", "send_message")], [call("c2", "pay", gate="ask")]), AFTER],
    ),
    "route-unknown-tool-in-a-parallel-group": (
        "the model calls a tool the deployment does not have, between two balance reads: it is exclusive (it splits the "
        "group) and fails closed with 'unknown tool'; the reads around it run",
        {},
        [
            BOOT,
            prompt([call("r1", "get_balance"), call("u1", "no_such_tool"), call("r2", "get_balance"), call("r3", "get_balance")]),
            AFTER,
        ],
    ),
    "route-parallel-pool-of-two": (
        "five concurrency-safe reads with at most two in flight (max_parallel_tool_calls 2): never a third body beside two",
        {"max_parallel_tool_calls": 2},
        [BOOT, prompt([call(f"r{i}", "get_balance") for i in range(1, 6)]), AFTER],
    ),
    "route-cancel-mid-stream-of-an-uncancellable-model": (
        "the model adapter cannot be cancelled; the user cancels while it streams an answer with tool calls: the loop stops "
        "at the next part, the delivered prefix is an interrupted assistant message with no tool calls, none runs",
        {"model_uncancellable": True},
        [
            BOOT,
            {
                "op": "prompt",
                "args": {
                    "text": "go",
                    "responses": [{"text": "paying now", "chunk_delay": 0.5, "tool_calls": [call("c1", "pay")]}],
                    "horizon": 0.8,
                },
            },
            {"op": "cancel", "args": {"settle": 10.0}},
            AFTER,
        ],
    ),
    "route-barrier-before-the-body-fails": (
        "the flush before a payment's body (checkpoint C) fails (EIO on its write): the call fails closed with that error "
        "— no body, no payment, no post-execute — and the next turn runs",
        {},
        [
            BOOT,
            {"op": "arm", "args": {"rule": {"point": "fs.write", "action": "error", "errno": "EIO", "hit": 3, "lifetime": 1}}},
            prompt([call("c1", "pay")]),
            AFTER,
        ],
    ),
    "route-turn-cancelled-after-its-last-answer": (
        "the user cancels while the model streams its final answer (no tool calls): the turn ends aborted, never completed",
        {},
        [
            BOOT,
            {"op": "prompt", "args": {"text": "go", "responses": [{"text": "a long answer", "chunk_delay": 5.0}], "horizon": 1.0}},
            {"op": "cancel", "args": {"settle": 30.0}},
            AFTER,
        ],
    ),
    "route-cancel-as-the-turn-starts": (
        "the user cancels as the turn starts, before its first step: the turn ends aborted by the user with no step, "
        "no request and no call; the next turn runs",
        {},
        [BOOT, arm("agent.turn.start", "cancel"), prompt([call("c1", "pay")]), AFTER],
    ),
    "route-cancel-before-the-second-step": (
        "the user cancels as the second step is about to open (at the pre-step barrier): the first step's call stands, "
        "no second step opens, the turn ends aborted by the user",
        {},
        [BOOT, arm("agent.pre_step", "cancel", match={"step": 2}), prompt([call("c1", "pay")], [call("c2", "pay")]), AFTER],
    ),
    "route-cancel-as-the-model-is-asked": (
        "the user cancels as the model request goes out (at llm.request, before any part arrives): nothing was "
        "delivered, so no assistant message is appended and the turn ends aborted by the user; the next turn runs",
        {},
        [BOOT, arm("llm.request", "cancel"), prompt([call("c1", "pay")]), AFTER],
    ),
    "route-step-limit-reached": (
        "the model keeps calling tools past the runtime's step limit (config max_steps 2): the second step's calls run, "
        "then the turn ends with an error (code UNKNOWN) instead of a third request; the next turn runs",
        {"max_steps": 2},
        [BOOT, prompt([call("c1", "get_balance")], [call("c2", "pay")], [call("c3", "pay")]), AFTER],
    ),
}


def main() -> None:
    write_scenarios(SCENARIOS, machine="durability", seed=5, generator="tools/route_scenarios.py")


if __name__ == "__main__":
    main()
