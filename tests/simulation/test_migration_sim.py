"""Migration under the simulator: a crash at any publication step leaves the old or the new
generation readable, never neither, and never a half-written current generation.

The storage process's write open migrates a seeded v0 log.  Crashes are armed at every named
point of the publication (``persist.migration.*``) and at its filesystem steps (temp write,
fsync, link, directory fsync, temp removal); explore then tries every post-crash state the
crash model allows.  ``migration_atomic`` must hold throughout, and must fail when
publication writes the target in place instead of linking a verified temp file.
"""

from __future__ import annotations

import attrs
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from dsh_sim.drivers.explore import explore
from dsh_sim.drivers.machines.storage import StorageMachine
from dsh_sim.engine.config import SimConfig
from dsh_sim.engine.machine import Simulation
from dsh_sim.evidence.checker import Checker
from dsh_sim.evidence.invariants.storage import SeededSource
from dsh_sim.evidence.oracles.spec_log import read_recoverable
from dsh_sim.scenario.args import Step
from dsh_sim.scenario.codec import config_of, step_of
from dsh_sim.scenario.model import Scenario
from dsh_sim.scenario.steps import StepNotApplicable, apply
from runtime.persistence import publication
from runtime.persistence.durable import read_all
from runtime.persistence.layout import generation_filename
from runtime.persistence.log_format import decode_log
from runtime.persistence.v0_format import decode_v0
from runtime.persistence.zstd_frames import scan_frames
from runtime.ports.fs import FileSystem, OpenFlags
from tests.support.paths import ROOT

MIGRATION_STEPS = [
    ("persist.migration.prepared", 1),
    ("fs.write", 1),  # the staged file
    ("fs.fsync", 1),
    ("persist.migration.staged", 1),
    ("persist.migration.verified", 1),
    ("fs.link", 1),
    ("fs.fsync_dir", 1),  # the link is not durable yet
    ("persist.migration.published", 1),
    ("fs.unlink", 1),  # the temp file's removal
]
CRASHES = [
    {"kind": "kill"},
    {"kind": "power", "state": "drop"},
    {"kind": "power", "state": "keep"},
    {"kind": "power", "state": "random"},
    {"kind": "power", "state": "torn", "torn_fraction": 0.5},
]


def storage_sim(compression: str, seed: int = 5) -> tuple[Simulation, Checker]:
    sim = Simulation(seed, SimConfig(compression=compression, approval_tools=()), kind="storage")
    return sim, Checker.attach(sim)


def seeded_source(sim: Simulation) -> SeededSource:
    """What migrating the historical log the seed_v0 step placed must publish."""
    placed = sim.history.seeded
    assert placed is not None
    return SeededSource.of(placed, sim.config.compression)


def whole_generation(data: bytes | None, mode: str, seeded: SeededSource) -> bool:
    """``data`` is exactly the migrated generation (read by the spec reader: no torn tail, no more)."""
    if data is None:
        return False
    log = read_recoverable(data, mode)
    return log.torn_start is None and log.header == seeded.header and list(log.records) == list(seeded.events or ())


def v0_scenario(compression: str, torn: bool = False) -> Scenario:
    return Scenario(
        name=f"v0-migration-{compression}",
        seed=3,
        machine="storage",
        config=config_of({"compression": compression, "approval_tools": []}),
        steps=(
            step_of("seed_v0", {"turns": 2, "torn": torn}),
            Step("boot"),
            step_of("append", {"count": 2}),
            Step("flush"),
        ),
    )


@pytest.fixture(params=["zstd", "none"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


def test_seed_v0_writes_the_reference_layout(mode: str) -> None:
    sim, checker = storage_sim(mode)
    assert apply(sim, step_of("seed_v0", {"turns": 2, "notes": 2})) == "seeded:v0:31->18"
    seeded = seeded_source(sim)
    assert seeded is not None and seeded.path.endswith("/" + generation_filename(0, mode))
    assert sim.disk.read_path(seeded.path) == seeded.data
    assert sim.disk.resolve(seeded.path, durable=True) is not None  # durable entry and bytes
    log = decode_v0(seeded.data, mode)
    assert log.torn is None and log.header.id == sim.config.session_id
    if mode == "zstd":
        assert len(scan_frames(seeded.data).frames) == 4  # header frame + one frame per batch
    else:
        assert b'{"type":"text-chunks","seq0":' in seeded.data  # packed delta rows
    assert [e["type"] for e in seeded.events][:3] == ["turn/start", "step/start", "system/message"]
    assert apply(sim, Step("boot")) == "booted"
    with pytest.raises(StepNotApplicable, match="before the first boot"):
        apply(sim, Step("seed_v0"))
    sim.shutdown()


def test_torn_seed_and_boot_publish_the_valid_prefix(mode: str) -> None:
    sim, checker = storage_sim(mode)
    apply(sim, step_of("seed_v0", {"turns": 2, "torn": True}))
    seeded = seeded_source(sim)
    assert seeded is not None and decode_v0(seeded.data, mode).torn is not None
    assert apply(sim, Step("boot")) == "booted"
    published = sim.disk.read_path(seeded.target)
    assert whole_generation(published, mode, seeded) and decode_log(published, mode).torn is None
    assert sim.disk.read_path(seeded.path) == seeded.data
    assert checker.checked["migration_atomic"] == 1 and not checker.violations
    sim.shutdown()


@pytest.mark.slow
@pytest.mark.parametrize("point,hit", MIGRATION_STEPS)
def test_a_crash_at_any_publication_step_leaves_a_readable_generation(mode: str, point: str, hit: int) -> None:
    for crash in CRASHES:
        sim, checker = storage_sim(mode)
        apply(sim, step_of("seed_v0", {"turns": 2}))
        apply(sim, step_of("arm", {"rule": {"point": point, "action": "crash", "hit": hit, "lifetime": 1, "crash": crash}}))
        assert apply(sim, Step("boot")).startswith("crashed:"), (point, crash)
        seeded = seeded_source(sim)
        assert seeded is not None
        current = sim.disk.read_path(seeded.target)
        assert current is None or whole_generation(current, mode, seeded), (point, crash)  # nothing, or the whole generation
        assert apply(sim, Step("boot")) == "booted", (point, crash)
        assert apply(sim, step_of("append", {"count": 1})) == "ok" and apply(sim, Step("flush")) == "ok"
        assert seeded.events is not None
        published = read_recoverable(sim.disk.read_path(seeded.target), mode).records
        assert list(published[: len(seeded.events)]) == list(seeded.events)
        assert [e.to_record() for e in sim.current.session.events[: len(seeded.events)]] == list(seeded.events)
        assert checker.checked["migration_atomic"] == 2
        assert not checker.violations, [v.describe() for v in checker.violations]
        sim.shutdown()


def test_a_crash_during_the_second_attempt_is_recovered_too(mode: str) -> None:
    sim, checker = storage_sim(mode)
    apply(sim, step_of("seed_v0", {"turns": 1}))
    for lifetime, point in ((1, "fs.fsync"), (2, "persist.migration.verified")):
        rule = {"point": point, "action": "crash", "hit": 1, "lifetime": lifetime, "crash": {"kind": "power", "state": "random"}}
        apply(sim, step_of("arm", {"rule": rule}))
        assert apply(sim, Step("boot")).startswith("crashed:")
    assert apply(sim, Step("boot")) == "booted"
    assert not checker.violations and checker.checked["migration_atomic"] == 3
    sim.shutdown()


@pytest.mark.slow
def test_explore_every_crash_state_of_a_migration(mode: str) -> None:
    result = explore(v0_scenario(mode, torn=True), bound=40)
    assert not result.record_violations and not result.violations, [v.describe() for _, v in result.violations[:3]]
    for point in ("persist.migration.staged", "persist.migration.verified", "persist.migration.published", "fs.link", "fs.fsync_dir"):
        assert result.explored.get(point, 0) > 0, point


# -- the invariant can fail --------------------------------------------------------------------


async def write_in_place(fs: FileSystem, stage: str, target: str) -> None:
    """A broken publication: the target is written in place (two writes) instead of linked."""
    data = await read_all(fs, stage)
    fd = await fs.open(target, OpenFlags.WRITE | OpenFlags.CREATE | OpenFlags.EXCLUSIVE, 0o600)
    half = len(data) // 2
    await fs.write(fd, data[:half])
    await fs.write(fd, data[half:])
    await fs.fsync(fd)
    await fs.close(fd)


def test_in_place_publication_violates_migration_atomic(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(publication, "link_stage", write_in_place)
    sim, checker = storage_sim(mode)
    apply(sim, step_of("seed_v0", {"turns": 2}))
    seeded = seeded_source(sim)
    assert seeded is not None
    rule = {"point": "fs.write", "action": "crash", "hit": 2, "lifetime": 1, "match": {"path": seeded.target}, "crash": {"kind": "kill"}}
    apply(sim, step_of("arm", {"rule": rule}))
    assert apply(sim, Step("boot")) == "crashed:fs.write"
    apply(sim, Step("boot"))
    violated = {v.invariant for v in checker.violations}
    assert "migration_atomic" in violated, [v.describe() for v in checker.violations]
    message = next(v for v in checker.violations if v.invariant == "migration_atomic").describe()
    assert "half-written" in message
    sim.shutdown()


def test_explore_finds_the_in_place_publication(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(publication, "link_stage", write_in_place)
    result = explore(v0_scenario("zstd"), crash="kill")
    assert any(v.invariant == "migration_atomic" for _, v in result.violations)


def test_a_changed_source_violates_migration_atomic(mode: str) -> None:
    sim, checker = storage_sim(mode)
    apply(sim, step_of("seed_v0", {"turns": 1}))
    seeded = seeded_source(sim)
    assert seeded is not None
    ino = sim.disk.resolve(seeded.path)
    assert ino is not None
    changed = seeded.data[:-1]  # an old runtime still writing, or a repair tool, touched it
    sim.disk.nodes[ino] = attrs.evolve(sim.disk.file(ino), volatile=changed, durable=changed)
    apply(sim, Step("boot"))
    assert any(v.invariant == "migration_atomic" and "source" in v.message for v in checker.violations)
    sim.shutdown()


# -- the storage machine starts from v0 logs -----------------------------------------------------


@pytest.mark.slow
def test_storage_machine_runs_from_v0_logs() -> None:
    seen: dict[str, int] = {"v0": 0, "checked": 0}

    class Counting(StorageMachine):
        def teardown(self) -> None:
            if self.sim is not None and self.sim.history.seeded is not None:
                seen["v0"] += 1
                seen["checked"] += self.checker.checked["migration_atomic"]
            super().teardown()

    run_state_machine_as_test(
        Counting,
        settings=settings(
            max_examples=40, stateful_step_count=8, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
        ),
    )
    assert seen["v0"] > 0 and seen["checked"] >= seen["v0"]


def test_a_seeded_v0_session_migrates_and_resumes_and_a_header_that_forgets_it_is_caught() -> None:
    """A forked v0 session (seedLength) publishes ``isSeeded``; a header reader that drops the
    field (round 4 of bugs written apart from the harness) was found by one fuzz draw only —
    this regression finds it on every replay."""
    import os

    from dsh_sim.drivers.replay import run_scenario
    from dsh_sim.engine.logs import capture_runtime_logs
    from dsh_sim.mutants.patch import Edit, applied
    from dsh_sim.scenario.files import load

    path = os.path.join(
        ROOT,
        "scenarios",
        "regressions",
        "v0-seeded-session-migrates-and-resumes.json",
    )
    result, sim = run_scenario(load(path))
    assert result.violations == () and result.not_applicable is None
    published = read_recoverable(sim.disk.read_path(sim.config.log_path) or b"", sim.config.compression)
    assert published.header is not None and published.header.get("isSeeded") is True
    drops = Edit("runtime.persistence.header", "parse_header", '        is_seeded=record["isSeeded"],\n', "")
    with capture_runtime_logs(), applied([drops]):
        result, _ = run_scenario(load(path))
    assert [v.invariant for v in result.violations][:1] == ["recovery_succeeds"], result.violations
