"""Live checks, run at the named point they concern while the process is still running."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dsh_sim.evidence.invariants.base import Invariant, Judge, call_seq, fail

if TYPE_CHECKING:
    from dsh_sim.engine.lifetime import Lifetime
    from dsh_sim.evidence.invariants.moments import Point


def check_body_after_durable_call(obs: Judge, life: Lifetime, details: dict[str, Any]) -> None:
    if not obs.sim.config.checkpoint_policy or life.agent is None:
        return
    obs.count("checkpoint_before_effect")
    call_id = str(details.get("call_id"))
    seq = call_seq(life.agent.session.events, call_id)
    if seq is None or seq not in obs.acked:
        fail(
            obs,
            "checkpoint_before_effect",
            "the tool body started before its tool/call was durable",
            call_id,
            f"tool/call seq {seq}, acknowledged seqs up to {max(obs.acked, default=-1)}",
        )


def check_request_after_durable_header(obs: Judge, life: Lifetime) -> None:
    if not obs.sim.config.checkpoint_policy or life.agent is None:
        return
    obs.count("checkpoint_before_effect")
    header = life.agent.session.last_of("request/header")
    if header is not None and header.seq not in obs.acked:
        fail(
            obs,
            "checkpoint_before_effect",
            "the model request was sent before its request/header was durable",
            None,
            f"request/header seq {header.seq}, acknowledged seqs up to {max(obs.acked, default=-1)}",
        )


def check_approval_gate(obs: Judge, life: Lifetime, details: dict[str, Any]) -> None:
    tool = details.get("tool")
    if tool not in obs.sim.config.approval_tools or life.agent is None:
        return
    script = obs.sim.call_policies.get(str(details.get("call_id")))
    if script is not None and script.gate == "allow":
        return  # the deployment's own gate allowed the call without a question (config policy)
    obs.count("approval_gate")
    call_id = details.get("call_id")
    asked = [e.data["id"] for e in life.agent.session.events if e.type == "approval/asked" and e.data.get("callId") == call_id]
    decided = {e.data["id"]: e.data["outcome"] for e in life.agent.session.events if e.type == "approval/decided"}
    if str(call_id) in obs.history.answerer_failures and decided.get(asked[-1] if asked else "") == "allowed-once":
        fail(obs, "approval_gate", f"the answerer failed, yet {tool} was allowed (fail-open)", str(call_id))
    if not asked or decided.get(asked[-1]) != "allowed-once":
        fail(
            obs,
            "approval_gate",
            f"the body of {tool} ran without an allowed-once decision",
            str(call_id),
            f"approval ids {asked}, outcomes {[decided.get(a) for a in asked]}",
        )


def _checkpoint(obs: Judge, at: Point) -> None:
    if at.name == "llm.request":
        check_request_after_durable_header(obs, at.life)
    elif not at.details.get("nested"):
        check_body_after_durable_call(obs, at.life, at.details)


def _gate(obs: Judge, at: Point) -> None:
    if not at.details.get("nested"):
        check_approval_gate(obs, at.life, at.details)


CHECKPOINT_BEFORE_EFFECT = Invariant(
    "checkpoint_before_effect",
    ("with the checkpoint policy: no tool body before its tool/call is durable, no model request before its request/header is durable"),
    checks={"point": _checkpoint},
    points=frozenset({"tools.execute.body", "llm.request"}),
)
APPROVAL_GATE = Invariant(
    "approval_gate",
    ("no body of a tool that needs approval runs without an allowed-once decision for that call"),
    checks={"point": _gate},
    points=frozenset({"tools.execute.body"}),
)
