"""Historical v0 logs of every shape, and the independent expectation of their migration.

(a) For every shape and both compressions, the runtime's decode + migration equals what the
generator expects from the same logical description (spec §3.7 and §10.1 applied to what the
log was meant to hold): two derivations that agree on the correct runtime.  (b) Every shape
goes through the storage machine's path — seed, boot, append, flush, crash, reboot — with no
violation, and an interrupted history is closed by resume's repair exactly as the spec's
repair closes the expected records.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, run_state_machine_as_test

from dsh_sim.drivers.explore import explore
from dsh_sim.drivers.machines.storage import StorageMachine, boot_crashes
from dsh_sim.engine.config import SimConfig
from dsh_sim.engine.machine import Simulation
from dsh_sim.evidence.checker import Checker
from dsh_sim.evidence.oracles import spec_repair
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.args import SeedV0Args, Step
from dsh_sim.scenario.codec import config_of, step_of
from dsh_sim.scenario.model import Scenario
from dsh_sim.scenario.steps import apply
from dsh_sim.scenario.v0.describe import describe
from dsh_sim.scenario.v0.expect import Expected, expected_migration
from dsh_sim.scenario.v0.plan import build
from dsh_sim.scenario.v0.render import render
from dsh_sim.scenario.v0.strategy import seed_v0_args
from runtime.persistence.log_format import LogCorruption
from runtime.persistence.migration import migrate_v0
from runtime.persistence.publication import encode_migrated
from runtime.persistence.v0_format import decode_v0

SYSTEM = "You are a simulated agent."

# name -> seed_v0 args: every shape the issue names, each on its own
SHAPES: dict[str, dict[str, Any]] = {
    "legacy-text": {},
    "text-unpacked-runs": {"deltas": 2, "notes": 0},
    "tools": {"shape": "tools", "calls": 3},
    "tools-single-delta": {"shape": "tools", "calls": 2, "deltas": 1},
    "tools-no-calls": {"shape": "tools", "calls": 0},
    "retried-attempt": {"shape": "tools", "retry": True},
    "system-change": {"shape": "tools", "turns": 3, "system_change": True},
    "inherited-and-titled": {"shape": "tools", "turns": 3, "inherited": 1, "title": True},
    "compaction": {"shape": "tools", "turns": 2, "compact": True, "system_change": True},
    "window-batches": {"shape": "tools", "batch": 4, "deltas": 5},
    "open-stream": {"shape": "tools", "end": "open-stream", "notes": 0, "deltas": 8},
    "open-stream-text": {"end": "open-stream", "retry": True},
    "open-call": {"shape": "tools", "end": "open-call", "calls": 3, "notes": 0},
    "open-step": {"shape": "tools", "end": "open-step", "system_change": True},
    "torn-half": {"shape": "tools", "torn": True, "notes": 0},
    "torn-row": {"shape": "tools", "torn": True, "tear": "row", "notes": 0, "deltas": 6},
    "torn-row-large": {"shape": "tools", "torn": True, "tear": "row", "notes": 0, "deltas": 16, "pad": 9000},
    "torn-tail": {"shape": "tools", "torn": True, "tear": "tail", "notes": 0},
    "torn-open-stream": {"shape": "tools", "end": "open-stream", "torn": True, "tear": "tail", "notes": 0, "batch": 9},
    "damaged": {"shape": "tools", "damaged": True, "notes": 0},
    "damaged-notes": {"damaged": True},
}


@pytest.fixture(params=["zstd", "none"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


def assert_runtime_agrees(args: SeedV0Args, mode: str, system: str | None = SYSTEM) -> Expected:
    """The runtime's reading and migration of the rendered bytes equal the expectation."""
    session = describe(args, "sim-session", "/sim/workspace", system)
    data = render(build(session), mode).data
    expected = expected_migration(session, mode)
    if expected.refused:
        with pytest.raises(LogCorruption):
            decode_v0(data, mode)
        return expected
    log = decode_v0(data, mode)
    migrated = migrate_v0(log)
    assert len(log.events) == expected.source_events
    assert migrated.header.to_record() == expected.header
    got = [e.to_record() for e in migrated.events]
    at = next((i for i, (a, b) in enumerate(zip(got, expected.records)) if a != b), None)
    assert at is None and len(got) == len(expected.records), (at, got[at] if at is not None else len(got), len(expected.records))
    return expected


@pytest.mark.parametrize("name", SHAPES)
def test_the_runtime_migrates_every_shape_as_expected(name: str, mode: str) -> None:
    expected = assert_runtime_agrees(SeedV0Args(**SHAPES[name]), mode)
    kinds = [r["type"] for r in expected.records]
    if name.startswith("open-stream") or name in ("retried-attempt", "torn-open-stream"):
        assert "assistant/attempt" in kinds
    if name == "system-change":
        assert sum(k == "system/message" for k in kinds) > 3
    if name == "damaged":
        assert expected.refused
    if name == "inherited-and-titled":
        assert expected.header is not None and expected.header["isSeeded"] is True
    if name == "compaction":
        (summary,) = [r for r in expected.records if r["type"] == "user/message" and r["surfaceOp"] != "append"]
        assert set(summary["surfaceOp"]) == {"op", "startSeq", "endSeq"}


def test_a_prompt_named_only_later_gets_an_empty_head() -> None:
    """No prompt at first, one from turn 2: an empty system head is replaced there."""
    for mode in ("zstd", "none"):
        expected = assert_runtime_agrees(SeedV0Args(turns=2, system_change=True), mode, system=None)
        heads = [r for r in expected.records if r["type"] == "system/message"]
        assert heads[0]["data"]["message"]["content"] == [] and heads[1]["surfaceOp"]["op"] == "replace"


def test_the_shapes_the_issue_names_are_really_made() -> None:
    """Packed and unpacked runs, rows of every kind, a tear inside a row, a refusal."""
    raw = render(build(describe(SeedV0Args(**SHAPES["tools"]), "s", "/w", SYSTEM)), "none")
    tags = {r["type"] for batch in raw.records for r in batch}
    assert {"text-chunks", "reasoning-chunks", "tool-call-chunks", "assistant/chunk"} <= tags
    unpacked = render(build(describe(SeedV0Args(**SHAPES["text-unpacked-runs"]), "s", "/w", SYSTEM)), "none")
    assert not any(r["type"].endswith("-chunks") for batch in unpacked.records for r in batch)
    for mode, kept_some in (("none", True), ("zstd", True)):
        torn = render(build(describe(SeedV0Args(**SHAPES["torn-row-large"]), "s", "/w", SYSTEM)), mode)
        log = decode_v0(torn.data, mode)
        assert log.torn is not None
        assert (log.torn.recovered > 0 if mode == "zstd" else True) == kept_some


@pytest.mark.slow
@settings(max_examples=150, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(args=seed_v0_args(), mode=st.sampled_from(["zstd", "none"]))
def test_any_drawn_history_migrates_as_expected(args: SeedV0Args, mode: str) -> None:
    assert_runtime_agrees(args, mode)


# -- (b) through the storage machine's path ---------------------------------------------------


def run_storage(args: dict[str, Any], mode: str) -> tuple[Simulation, Checker]:
    sim = Simulation(3, SimConfig(compression=mode, approval_tools=()), kind="storage")
    checker = Checker.attach(sim)
    assert apply(sim, step_of("seed_v0", args)).startswith("seeded:v0:")
    return sim, checker


@pytest.mark.slow
@pytest.mark.parametrize("name", SHAPES)
def test_every_shape_round_trips_through_the_storage_machine(name: str, mode: str) -> None:
    sim, checker = run_storage(SHAPES[name], mode)
    if sim.history.seeded is not None and checker.corruptions:  # damage that must be refused
        assert apply(sim, Step("boot")).startswith("refused:")
        assert checker.checked["corrupt_frame_refused"] == 1
    else:
        assert apply(sim, Step("boot")) == "booted"
        for step in (step_of("append", {"count": 2}), Step("flush"), step_of("crash_now", {"kind": "kill"}), Step("boot")):
            apply(sim, step)
        assert apply(sim, step_of("append", {"count": 1})) == "ok" and apply(sim, Step("flush")) == "ok"
    sim.shutdown()
    assert checker.checked["migration_atomic"] >= 1
    assert not checker.violations, [v.describe() for v in checker.violations]


@pytest.mark.parametrize("name", ["open-stream", "open-call", "open-step", "torn-open-stream", "torn-half"])
def test_resume_closes_an_interrupted_history_as_the_spec_does(name: str, mode: str) -> None:
    """The agent's resume repairs the migrated log: its closers are the spec's closers of the
    expected records (open-call: one TOOL_OUTCOME_UNKNOWN, then TOOL_NOT_STARTED)."""
    sim = Simulation(4, SimConfig(compression=mode, approval_tools=()))
    checker = Checker.attach(sim)
    apply(sim, step_of("seed_v0", SHAPES[name]))
    assert apply(sim, Step("boot")) == "booted"
    seeded = sim.history.seeded
    assert seeded is not None and seeded.description is not None
    expected = expected_migration(seeded.description, mode)  # type: ignore[arg-type]
    report = sim.current.report
    assert [e.to_record() for e in report.events] == list(expected.records)
    assert [e.to_record() for e in report.closers] == spec_repair.closers(expected.records)
    if name == "open-call":
        assert sorted(report.verdicts.values()) == ["TOOL_NOT_STARTED", "TOOL_NOT_STARTED", "TOOL_OUTCOME_UNKNOWN"]
    sim.shutdown()
    assert not checker.violations, [v.describe() for v in checker.violations]


# -- (c) bugs only the independent expectation sees ---------------------------------------------

MIGRATION = "runtime.persistence.migration"
V0 = "runtime.persistence.v0_format"
V0_RECORDS = "runtime.persistence.v0_records"
# (bug, shape, modes, edits): each leaves a well-formed, replayable v3 generation, so the runtime's
# own verifier and the old oracle (which derived the expectation with the same decode and migration)
# accept it
ORACLE_BUGS = [
    (
        "an assistant message's stream records in reverse order",
        "legacy-text",
        ("zstd", "none"),
        [
            Edit(
                MIGRATION,
                "_Migration.transform",
                "self.stream([self.by_seq[s] for s in event.source_event_seqs or ()])",
                "self.stream([self.by_seq[s] for s in reversed(event.source_event_seqs or ())])",
            )
        ],
    ),
    (
        "an unclaimed attempt placed at its first chunk instead of its last",
        "open-stream",
        ("zstd", "none"),
        [
            Edit(
                MIGRATION,
                "_Migration.run",
                "                attempt = self.attempt_end.get(event.seq)",
                "                attempt = next((a for a in self.attempt_end.values() if a[0].seq == event.seq), None)",
            )
        ],
    ),
    (
        "the system head placed after the first user message",
        "legacy-text",
        ("zstd", "none"),
        [
            Edit(
                MIGRATION,
                "_Migration.run",
                '            if first_step is not None and head is None and event.type in _SURFACE:\n                raise self.refuse(event, "precedes the first step/start, so the system prompt cannot become surface node 0")\n',
                "",
            ),
            Edit(
                MIGRATION,
                "_Migration.run",
                "            if event is first_step:\n                current = head_prompt\n                head = self.system(event, event, current, None)",
                '            if first_step is not None and head is None and event.type == "user/message":\n                current = head_prompt\n                head = self.system(first_step, first_step, current, None)',
            ),
        ],
    ),
    (
        "a packed row's member times without the cumulative gaps",
        "legacy-text",
        ("zstd", "none"),
        [Edit(V0_RECORDS, "expand_row", "        times.append(times[-1] + gap)", "        times.append(time0 + gap)")],
    ),
    (
        "the complete packed rows of a torn final frame dropped",
        "torn-tail",
        ("zstd",),
        [
            Edit(
                V0,
                "_decode_zstd",
                "            for line in torn_lines(partial):\n",
                "            for line in torn_lines(partial):\n                if b'-chunks\"' in line[:30]:\n                    break\n",
            )
        ],
    ),
    (
        "the system prompt left in the migrated request headers",
        "system-change",
        ("zstd", "none"),
        [
            Edit(
                MIGRATION,
                "_Migration.payload",
                '            data["header"] = {k: v for k, v in data["header"].items() if k != "system"}',
                '            data["header"] = dict(data["header"])',
            )
        ],
    ),
    (
        "a compaction's shadowedRange not renumbered",
        "compaction",
        ("zstd", "none"),
        [
            Edit(
                MIGRATION,
                "_Migration.payload",
                '                data["shadowedRange"] = dict(\n                    shadowed, start=self.map(event, shadowed.get("start")), end=self.map(event, shadowed.get("end"))\n                )',
                '                data["shadowedRange"] = dict(shadowed)',
            )
        ],
    ),
    (
        "a title's messageSeqs not renumbered",
        "inherited-and-titled",
        ("zstd", "none"),
        [
            Edit(
                MIGRATION,
                "_Migration.payload",
                '            data["messageSeqs"] = [self.map(event, s) for s in data["messageSeqs"]]',
                '            data["messageSeqs"] = list(data["messageSeqs"])',
            )
        ],
    ),
]


def old_oracle_sees(sim: Simulation) -> bool:
    """The old ``migration_atomic`` expectation: the runtime's own decode, migration and encoder
    (under the bug too), compared with the published bytes."""
    placed = sim.history.seeded
    assert placed is not None
    mode = sim.config.compression
    old = encode_migrated(migrate_v0(decode_v0(placed.data, mode)), mode)
    current = sim.disk.read_path(placed.target)
    return current is not None and not current.startswith(old)


@pytest.mark.slow
@pytest.mark.parametrize("bug,shape,modes,edits", ORACLE_BUGS, ids=[b for b, *_ in ORACLE_BUGS])
def test_only_the_independent_expectation_catches_a_migration_bug(bug: str, shape: str, modes: tuple[str, ...], edits: list[Edit]) -> None:
    for mode in modes:
        clean, checker = run_storage(SHAPES[shape], mode)
        apply(clean, Step("boot"))
        clean.shutdown()
        assert not checker.violations
        with applied(edits):
            sim, checker = run_storage(SHAPES[shape], mode)
            assert apply(sim, Step("boot")) == "booted", bug  # the runtime's own verifier accepts the bug
            assert not old_oracle_sees(sim), bug
            sim.shutdown()
        caught = {v.invariant for v in checker.violations}
        assert "migration_atomic" in caught, (bug, mode, sorted(caught))


# -- the strategy drives the storage machine -----------------------------------------------------


class V0StorageMachine(StorageMachine):
    """The storage machine starting from any drawn historical log (how the strategy is wired in)."""

    @initialize(seed=st.integers(0, 2**31 - 1), compression=st.sampled_from(["zstd", "none"]), args=seed_v0_args(), boot_crash=boot_crashes)
    def start(self, seed: int, compression: str, args: SeedV0Args, boot_crash: Any = None) -> None:  # type: ignore[override]
        self.seed = seed
        self.sim = Simulation(seed, SimConfig(compression=compression, approval_tools=()), kind="storage")
        self.checker = Checker.attach(self.sim)
        self.do(Step("seed_v0", args))
        if boot_crash is not None:
            point, hit, crash = boot_crash
            self.do(step_of("arm", {"rule": {"point": point, "action": "crash", "hit": hit, "lifetime": 1, "crash": crash}}))
        self.do(Step("boot"))


@pytest.mark.slow
def test_the_storage_machine_runs_from_drawn_histories() -> None:
    run_state_machine_as_test(
        V0StorageMachine,
        settings=settings(
            max_examples=40, stateful_step_count=6, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
        ),
    )


@pytest.mark.slow
def test_explore_every_crash_state_of_migrating_an_interrupted_history(mode: str) -> None:
    args = {**SHAPES["torn-open-stream"], "retry": True, "system_change": True}
    scenario = Scenario(
        name="v0-interrupted-history",
        seed=3,
        machine="storage",
        config=config_of({"compression": mode, "approval_tools": []}),
        steps=(step_of("seed_v0", args), Step("boot"), step_of("append", {"count": 2}), Step("flush")),
    )
    result = explore(scenario, bound=30)
    assert not result.record_violations and not result.violations, [v.describe() for _, v in result.violations[:3]]
    assert result.explored.get("persist.migration.verified", 0) > 0
