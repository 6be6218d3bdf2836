"""The tool pipeline's oracles (cancellation_honoured, tool_schedule) fail on the bugs they guard
against: a runtime function patched the way a real bug would change it, a committed scenario
replayed over it."""

from __future__ import annotations

import os

import attrs
import pytest

from dsh_sim.adapters.observed import ToolMark
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.evidence.oracles import cancellation
from dsh_sim.evidence.oracles.schedule import Schedule, runs_alone
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load
from runtime.tools import registry, scheduler
from runtime.tools import results as R
from tests.support.paths import ROOT

ROOT = os.path.join(ROOT, "scenarios")


def caught(path: str) -> dict[str, list[str]]:
    result, _ = run_scenario(load(os.path.join(ROOT, path)))
    out: dict[str, list[str]] = {}
    for v in result.violations:
        out.setdefault(v.invariant, []).append(v.message)
    return out


@pytest.mark.parametrize("path", ["starter/cancel-during-tool-body.json", "regressions/tool-body-in-flight-at-shutdown.json"])
def test_the_scenarios_hold_on_the_runtime_as_shipped(path):
    assert caught(path) == {}


def test_cancellation_catches_a_success_after_cancellation(monkeypatch):
    """A registry that forgets to replace a success that returned after the caller's
    cancellation (spec §5.2) reports it as a success."""
    original = registry.ToolRegistry._body

    async def body_without_abort_check(self, ex):
        result = await original(self, ex)
        return result if result.error is None or result.error.code != R.ABORTED else R.ToolResult.text("ok")

    monkeypatch.setattr(registry.ToolRegistry, "_body", body_without_abort_check)
    found = caught("starter/cancel-during-tool-body.json")
    assert any("yet the result is a success" in m for m in found["cancellation_honoured"])


def test_cancellation_catches_aborted_before_dispatch_for_a_body_that_ran(monkeypatch):
    """Teardown that calls every open call ABORTED_BEFORE_DISPATCH, started or not."""
    monkeypatch.setattr(scheduler.R, "aborted", R.aborted_before_dispatch)
    found = caught("regressions/tool-body-in-flight-at-shutdown.json")
    assert any("but the tool body ran" in m for m in found["cancellation_honoured"])


def test_cancellation_catches_aborted_for_a_body_that_never_ran(monkeypatch):
    monkeypatch.setattr(scheduler.R, "aborted_before_dispatch", R.aborted)
    found = caught("regressions/tool-body-in-flight-at-shutdown.json")
    assert any("but the tool body never ran" in m for m in found["cancellation_honoured"])


def test_schedule_catches_an_exclusive_call_joining_a_parallel_group(monkeypatch):
    monkeypatch.setattr(registry.ToolRegistry, "execution_mode", lambda self, name, arguments: "parallel")
    found = caught("regressions/tool-body-in-flight-at-shutdown.json")
    assert any("an exclusive call runs alone" in m for m in found["tool_schedule"])


def marks(*spec: tuple) -> list[ToolMark]:
    return [ToolMark(kind, 1, call, turn, tool) for kind, call, turn, tool in spec]


def SAFE_BALANCE(tool, arguments):
    return tool == "get_balance"


def test_a_call_runs_alone_unless_its_tool_says_exactly_true_for_its_arguments():
    """The spec's rule over the world tools' own answers: arguments parsed as a call's are
    (empty is {}, text that is not JSON stays text), a classifier that raises says no."""
    assert not runs_alone("get_balance", '{"account": "bob"}')
    assert runs_alone("get_balance", "{}")  # the classifier raises (no account)
    assert runs_alone("get_balance", "")  # empty is {}: it raises too
    assert runs_alone("get_balance", "bob")  # not JSON: the text itself, which it cannot index by name
    assert runs_alone("get_balance", '{"account": 5}')  # says False
    assert not runs_alone("lookup_payment", "")
    assert runs_alone("pay", '{"to": "bob", "amount": 1}')
    assert runs_alone("x", "{}", says=lambda tool, arguments: 1)  # truthy is not True


def test_schedule_runs_a_call_alone_when_its_tools_classifier_raises(monkeypatch):
    """Written apart from the harness: a registry that fails open when a tool's classifier
    raises runs the call in the parallel group."""
    assert caught("regressions/tools-classifier-raises-runs-alone.json") == {}

    def fail_open(self, name, arguments):
        tool = self._tools.get(name)
        try:
            return "parallel" if tool.is_concurrency_safe(arguments) is True else "exclusive"
        except Exception:
            return "parallel"

    monkeypatch.setattr(registry.ToolRegistry, "execution_mode", fail_open)
    found = caught("regressions/tools-classifier-raises-runs-alone.json")
    assert any("the exclusive get_balance call c2" in m or "the exclusive call c2 (get_balance)" in m for m in found["tool_schedule"])


def test_schedule_counts_bodies_against_the_limit():
    schedule = Schedule(max_parallel=2, says=SAFE_BALANCE)
    run = marks(*[("call", f"c{i}", None, "get_balance") for i in range(3)], *[("body", f"c{i}", None, None) for i in range(3)])
    problems = schedule.feed(run)
    assert [p.call_id for p in problems] == ["c2"] and "over maxParallelToolCalls 2" in problems[0].message
    assert Schedule(max_parallel=3, says=SAFE_BALANCE).feed(run) == []


def test_nested_bodies_do_not_count():
    schedule = Schedule(max_parallel=1, says=lambda tool, arguments: False)
    run = marks(("call", "c1", None, "batch_pay"), ("body", "c1", None, None), ("body", "c1:nested:0", None, None))
    assert schedule.feed(run) == []


def _result(call_id: str, *, turn: int = 1, code: str | None = None, error: bool = False):
    from runtime.session.events import Event

    data = {
        "turn": turn,
        "step": 1,
        "message": {
            "source": {"kind": "tool", "callId": call_id},
            "content": [{"type": "tool-result", "isError": error or code is not None}],
        },
    }
    if code is not None:
        data["error"] = {"name": "AbortError", "code": code}
    return Event("tool/result", 0, 0, data)


def test_cancellation_rules_on_hand_made_marks():
    run = marks(
        ("call", "c1", None, "pay"),
        ("body", "c1", None, None),
        ("cancel", None, 1, None),
        ("returned", "c1", None, None),
        ("call", "c2", None, "pay"),
    )
    judge = lambda *events: [p.message for p in cancellation.judge(events, run, 1)]  # noqa: E731
    assert judge(_result("c1", code="ABORTED"), _result("c2", code="ABORTED_BEFORE_DISPATCH")) == []
    assert "yet the result is a success" in judge(_result("c1"))[0]
    assert "started after its turn was cancelled" in judge(_result("c2", code="ABORTED"))[0]
    assert "never cancelled" in judge(_result("c1", turn=2, code="ABORTED"))[0]
    assert "the tool body never returned one" in cancellation.judge([_result("c3", turn=3)], run, 1)[0].message


def test_points_truthful_catches_an_announcement_without_its_call_id(monkeypatch):
    """A probe call that drops a declared detail disarms every fault rule matching on it."""

    async def start(self, index):
        event = self._append_call(index)
        await self._probe.at("tools.call.appended", tool=self._calls[index].name, seq=event.seq)

    monkeypatch.setattr(scheduler.StepTools, "_start", start)
    found = caught("starter/boundary-2-3-pay.json")
    assert any("announced without ['call_id']" in m for m in found["points_truthful"])


def test_points_truthful_catches_an_announcement_naming_another_call():
    """The result announcement names the step's first call whatever slot was committed."""
    first_call = Edit(
        "runtime.tools.scheduler",
        "StepTools._settle",
        'await self._probe.at("tools.result.appended", call_id=self._calls[slot].id',
        'await self._probe.at("tools.result.appended", call_id=self._calls[0].id',
    )
    with applied([first_call]):
        found = caught("regressions/tools-cancel-skips-later-calls.json")
    assert any("names the result of c1, but the newest event is ('tool/result', 'c2')" in m for m in found["points_truthful"])


def test_result_shape_catches_a_harness_error_logged_without_its_code(monkeypatch):
    """§5.2: a thrown HarnessError is logged with error {name, code}."""
    original = R.from_exception

    def from_exception(err, *, final=True):
        result = original(err, final=final)
        return attrs.evolve(result, error=attrs.evolve(result.error, code=None)) if result.error else result

    monkeypatch.setattr(registry.R, "from_exception", from_exception)
    found = caught("starter/network-response-lost.json")
    assert any("the body threw 'the response from payments was lost'" in m for m in found["result_shape"])


def test_result_shape_catches_a_message_that_is_not_a_tool_result_message(monkeypatch):
    original = scheduler.tool_result_message
    monkeypatch.setattr(scheduler, "tool_result_message", lambda call_id, result: {**original(call_id, result), "role": "tool"})
    found = caught("starter/approval-never.json")
    assert any("the message role is 'tool', not 'user'" in m for m in found["result_shape"])


def test_result_shape_on_hand_made_results():
    from dsh_sim.evidence.oracles.result_shape import shape_problems

    good = _result("c1").data
    good["message"] = {**good["message"], "id": "x", "role": "user"}
    good["message"]["content"][0].update(toolCallId="c1", content=[{"type": "text", "text": "ok"}])
    assert shape_problems(good) == []
    assert "not {name, code}" in shape_problems({**good, "error": {"name": "E"}})[0]
    assert "keys ['extra']" in shape_problems({**good, "extra": 1})[0]


def test_agreement_catches_a_nested_call_that_forgets_its_root(monkeypatch):
    """§5.4: a nested dispatch keeps the root of its tree (what a service keys a nested effect on)."""
    original = registry.ToolExecution.dispatch

    async def dispatch(self, name, arguments, *, index):
        return await original(attrs.evolve(self, root_call_id=f"{self.call_id}:nested:{index}"), name, arguments, index=index)

    monkeypatch.setattr(registry.ToolExecution, "dispatch", dispatch)
    found = caught("starter/boundary-after-4-batch_pay.json")
    assert any("naming root call 'c1:nested:0', not 'c1'" in m for m in found["world_agreement"])


def test_post_execute_catches_a_final_result_that_is_not_final(monkeypatch):
    """ABORTED is a pipeline failure: post-execute must not see it (spec §5.2)."""
    aborted = R.aborted
    monkeypatch.setattr(R, "aborted", lambda: attrs.evolve(aborted(), final=False))
    found = caught("starter/cancel-during-tool-body.json")
    assert any("post-execute ran for a final result (ABORTED)" in m for m in found["post_execute_once"])


def test_post_execute_catches_a_scheduler_that_skips_it(monkeypatch):
    async def finalize(self, ex, result):
        return result

    monkeypatch.setattr(registry.ToolRegistry, "finalize", finalize)
    found = caught("regressions/tools-parallel-group-mixed-outcomes.json")
    assert any("without post-execute" in m for m in found["post_execute_once"])


def test_post_execute_order_on_hand_made_marks():
    from dsh_sim.evidence.oracles import post_execute

    run = marks(
        ("call", "c1", None, "get_balance"),
        ("call", "c2", None, "get_balance"),
        ("body", "c1", None, None),
        ("body", "c2", None, None),
        ("returned", "c2", None, None),
        ("returned", "c1", None, None),
        ("post", "c2", None, None),
        ("post", "c1", None, None),
    )
    problems = post_execute.judge([_result("c1"), _result("c2")], run, 1)
    assert [(p.call_id, "model's order" in p.message) for p in problems] == [("c1", True)]


def test_schedule_catches_parallel_siblings_run_one_by_one(monkeypatch):
    """A registry that classifies every call exclusive runs concurrency-safe siblings serially."""
    monkeypatch.setattr(registry.ToolRegistry, "execution_mode", lambda self, name, arguments: "exclusive")
    found = caught("regressions/tools-parallel-group-mixed-outcomes.json")
    assert any("started only after a sibling's body ended" in m for m in found["tool_schedule"])


def test_reader_agrees_catches_a_listing_refused_on_an_intact_log(monkeypatch):
    """A reader refused with a documented error on a log the spec reads was not judged at all."""
    from runtime.persistence import backend, log_records

    monkeypatch.setattr(backend, "header_of", lambda data, compression: log_records.header_from_record(None))
    found = caught("regressions/read-only-reader-beside-writer-zstd.json")
    assert any("a reader was refused on a log the spec reads" in m for m in found["reader_agrees"])
