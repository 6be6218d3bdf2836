"""The route model (``route_decisions``) fails on slips in what the route decides and when.

Each slip is a careless edit of the runtime's pipeline (not a catalogued mutant), replayed
over a committed route scenario: the model names it, and the scenario holds on the runtime as
shipped.  The pure model is also checked case by case against the spec's words.
"""

from __future__ import annotations

import glob
import os

import pytest

from dsh_sim.adapters.observed import ToolMark
from dsh_sim.adapters.policy import CallPolicy
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.evidence.oracles import route
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load
from tests.support.paths import REGRESSIONS

ROUTE_SCENARIOS = sorted(glob.glob(os.path.join(REGRESSIONS, "route-*.json")))


def violations(name: str) -> dict[str, list[str]]:
    result, _ = run_scenario(load(os.path.join(REGRESSIONS, f"{name}.json")))
    out: dict[str, list[str]] = {}
    for v in result.violations:
        out.setdefault(v.invariant, []).append(v.message)
    return out


@pytest.mark.parametrize("path", ROUTE_SCENARIOS, ids=os.path.basename)
def test_the_route_scenarios_hold_on_the_runtime_as_shipped(path: str) -> None:
    result, _ = run_scenario(load(path))
    assert [v.describe() for v in result.violations] == []
    assert result.stats["checked"]["route_decisions"] > 0


REG = "runtime.tools.registry"
APPROVAL = "runtime.agent.approval"

SLIPS = {
    # a guard that raises is read as "no objection": the call runs (fails open)
    "raising-guard-is-no-objection": (
        [
            Edit(
                REG,
                "ToolRegistry._prepare",
                "                reason = await guard(ex)\n",
                "                try:\n                    reason = await guard(ex)\n                except Exception:\n                    reason = None\n",
            )
        ],
        "route-guard-answers-after-every-allow",
        "the tool body ran, but the route does not reach it",
    ),
    # guards are skipped when the allow came from the user's approval
    "approved-call-skips-guards": (
        [
            Edit(
                REG,
                "ToolRegistry._prepare",
                "        if isinstance(decision, Allow):\n            for guard",
                "        if isinstance(decision, Allow) and not isinstance(await self._default_decision(ex), Ask):\n            for guard",
            )
        ],
        "route-guard-answers-after-every-allow",
        "the route reaches the monotonic guard, but it never ran",
    ),
    # a pre-execute hook that raises falls back to the default decision
    "raising-gate-falls-back-to-default": (
        [
            Edit(
                REG,
                "ToolRegistry.execute",
                "        except Exception as err:  # a throwing pre-execute hook, guard or approval seam\n            return R.from_exception(err, final=True)\n",
                "        except Exception:  # a throwing pre-execute hook, guard or approval seam\n            result = None\n",
            )
        ],
        "route-gate-answers-every-way",
        "the result is a success",
    ),
    # a denial is made final: post-execute never sees it
    "denial-skips-post-execute": (
        [
            Edit(
                REG,
                "ToolRegistry._prepare",
                "            return ToolResult.failure(decision.reason)\n",
                "            return ToolResult.failure(decision.reason, final=True)\n",
            )
        ],
        "route-gate-answers-every-way",
        "the route reaches tools/post-execute, but it never ran",
    ),
    # the answer counts even when the call was cancelled while the user thought
    "late-answer-counts-after-cancel": (
        [Edit(APPROVAL, "ApprovalService._decide", '        if scope_signal.aborted:\n            return "cancelled"\n', "")],
        "route-cancel-at-each-stage",
        "the approval was decided 'allowed-once', but the route decides 'cancelled'",
    ),
    # the question no longer ends with its call: the user's wait is not cancelled
    "question-ignores-its-calls-cancellation": (
        [Edit(APPROVAL, "ApprovalService._decide", "        with scope_signal.linked_scope():\n", "        if True:\n")],
        "route-approval-answered-late-after-cancel",
        "went on thinking after the call was cancelled",
    ),
    # a deny from the gate is taken for an ask of the user
    "gate-deny-read-as-ask": (
        [
            Edit(
                REG,
                "ToolRegistry._prepare",
                "        if isinstance(decision, Ask):\n",
                "        if isinstance(decision, Ask | Deny):\n            decision = Ask(getattr(decision, 'reason', None))\n",
            )
        ],
        "route-gate-answers-every-way",
        "an approval question was asked",
    ),
}


@pytest.mark.parametrize("slip", sorted(SLIPS))
def test_the_route_model_names_a_slip(slip: str) -> None:
    edits, scenario, words = SLIPS[slip]
    assert "route_decisions" not in violations(scenario)
    with applied(edits):
        found = violations(scenario)
    assert any(words in message for message in found.get("route_decisions", [])), found


# -- the pure model -------------------------------------------------------------------------

DEPLOYMENT = route.Deployment(approval_service=True, approval_tools=("send_message",), post_note=False, checkpoint=True, policies={})


def _facts(*kinds: str, answer: str | None = None, how: str | None = None) -> route.Facts:
    marks = [ToolMark("call", 1, "c1")]
    for kind in kinds:
        if kind == "cancel":
            marks.append(ToolMark("cancel", 1, None, 1, how=how or "signal"))
        else:
            marks.append(ToolMark(kind, 1, "c1", answer=answer if kind in ("answered", "gate", "guard") else None))
    found = route.facts(marks, [], 1, "c1", 1)
    assert found is not None
    return found


def test_a_question_under_policy_never_is_rejected_without_asking() -> None:
    expected = route.predict("send_message", "never", DEPLOYMENT, _facts("pre"), "c1")
    assert expected.asked == ('tool "send_message" requires approval', "rejected")
    assert expected.results == (route.Result.error('the user rejected tool "send_message"'),)
    assert expected.post and not expected.body and not expected.problems


def test_a_user_asked_under_policy_never_is_a_problem() -> None:
    expected = route.predict("send_message", "never", DEPLOYMENT, _facts("pre", "asked", "answered", answer="allowed-once"), "c1")
    assert any("policy never" in p for p in expected.problems)


def test_an_answer_outside_the_vocabulary_is_unavailable() -> None:
    expected = route.predict("send_message", "ask", DEPLOYMENT, _facts("pre", "asked", "answered", answer="yolo"), "c1")
    assert expected.asked == ('tool "send_message" requires approval', "unavailable")
    assert expected.results[0].content == (
        {"type": "text", "text": 'Error: tool "send_message" requires approval, but no approval channel is available'},
    )


def test_a_cancellation_before_prepare_runs_no_hook() -> None:
    expected = route.predict("pay", "ask", DEPLOYMENT, _facts("cancel"), "c1")
    assert expected.results == (route.BEFORE_DISPATCH,) and expected.pre is False


def test_a_gate_that_raises_fails_closed_without_post_execute() -> None:
    deployment = route.Deployment(True, (), False, True, {"c1": CallPolicy(gate="raise")})
    expected = route.predict("pay", "ask", deployment, _facts("pre", "gate", answer="raise"), "c1")
    assert expected.results == (route.Result.error("the deployment's policy gate failed"),)
    assert (expected.body, expected.guard, expected.post) == (False, False, False)


def test_a_stop_before_the_body_accepts_only_aborted_before_dispatch() -> None:
    expected = route.predict("pay", "ask", DEPLOYMENT, _facts("pre", "cancel", how="stop"), "c1")
    assert route.BEFORE_DISPATCH in expected.results and route.ABORTED not in expected.results
