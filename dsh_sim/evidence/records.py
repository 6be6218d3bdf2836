"""The parts of a results document: violations, point counts, determinism re-checks, kill-matrix
rows, listed cases and the DSH sections (:mod:`dsh_sim.evidence.document` puts them together).

A field that is ``None`` is left out of the JSON, except those marked ``KEEP_NULL``: producers
always write them, ``null`` included (a survivor's kill-matrix row, a case's ``torn_class``), so
a document reads back with the same keys it was written with.
"""

from __future__ import annotations

import attrs

Counts = dict[str, int]
Grid = dict[str, dict[str, Counts]]  # row -> column -> counts

KEEP_NULL = {"keep_null": True}  # field metadata: written as null when None


@attrs.frozen
class Violation:
    """An invariant that failed, and the scenario that replays it."""

    invariant: str
    message: str | None = attrs.field(default=None, metadata=KEEP_NULL)
    scenario: str | None = attrs.field(default=None, metadata=KEEP_NULL)
    source: str | None = attrs.field(default=None, metadata=KEEP_NULL)


@attrs.frozen
class PointCounts:
    """One named point: crash states possible and explored there (explore), hits (replay, fuzz)."""

    possible: int | None = None
    explored: int | None = None
    hits: int | None = None

    def plus(self, other: PointCounts) -> PointCounts:
        def add(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        return PointCounts(add(self.possible, other.possible), add(self.explored, other.explored), add(self.hits, other.hits))


@attrs.frozen
class Determinism:
    """One scenario run twice: both trace digests and whether they are the same."""

    scenario: str
    same: bool
    digest_a: str | None = None
    digest_b: str | None = None
    how: str | None = None


@attrs.frozen
class MethodResult:
    """What one attack method did against one mutant."""

    killed: bool
    seconds: float
    invariant: str | None = attrs.field(default=None, metadata=KEEP_NULL)
    example: str | None = attrs.field(default=None, metadata=KEEP_NULL)
    examples: int | None = attrs.field(default=None, metadata=KEEP_NULL)
    scenario_steps: int | None = attrs.field(default=None, metadata=KEEP_NULL)


@attrs.frozen
class KillRow:
    """One mutant of the self-test: killed or not, the fastest kill, and each method's result."""

    mutant: str
    description: str | None = attrs.field(default=None, metadata=KEEP_NULL)
    killed: bool | None = attrs.field(default=None, metadata=KEEP_NULL)
    method: str | None = attrs.field(default=None, metadata=KEEP_NULL)
    time_to_kill: float | None = attrs.field(default=None, metadata=KEEP_NULL)
    invariant: str | None = attrs.field(default=None, metadata=KEEP_NULL)
    examples: int | None = attrs.field(default=None, metadata=KEEP_NULL)
    scenario: str | None = attrs.field(default=None, metadata=KEEP_NULL)
    scenario_steps: int | None = attrs.field(default=None, metadata=KEEP_NULL)
    by_method: dict[str, MethodResult] | None = attrs.field(default=None, metadata=KEEP_NULL)


@attrs.frozen
class CaseCall:
    """A tool call known at a crash: where it stood, what repair said, whether it happened."""

    boundary: str
    outcome: str
    id: str | None = None
    applied: bool | None = None


@attrs.frozen
class Case:
    """One crash and its recovery, as older documents list them (newer ones count them in
    ``case_tally``)."""

    kind: str
    phase: str
    barrier: str
    calls: tuple[CaseCall, ...]
    source: str | None = attrs.field(default=None, metadata=KEEP_NULL)
    point: str | None = attrs.field(default=None, metadata=KEEP_NULL)
    layer: str | None = attrs.field(default=None, metadata=KEEP_NULL)
    torn_class: str | None = attrs.field(default=None, metadata=KEEP_NULL)
    recovered: bool | None = attrs.field(default=None, metadata=KEEP_NULL)
    violations: tuple[str, ...] | None = attrs.field(default=None, metadata=KEEP_NULL)


@attrs.frozen
class DshViolation:
    """A violation of the published DSH writer, at one crash point."""

    invariant: str
    point: int
    crash: str
    detail: str


@attrs.frozen(kw_only=True)
class DshExploreRow:
    """The DSH writer explored over one session shape (``dsh-sim explore --runtime dsh``); the
    scenario whose shape it is comes last, as it was written."""

    shape: str | None = None
    compression: str | None = None
    crash_points: int | None = None
    states: int | None = None
    recoveries_run: int | None = None
    per_op: Counts | None = None
    points_by_op: Counts | None = None
    checked: Counts | None = None
    violations: tuple[DshViolation, ...] | None = None
    seconds: float | None = None
    scenario: str | None = None


@attrs.frozen(kw_only=True)
class DshRouteRow:
    """The DSH route crashed over one scenario, each kill compared with dsh-sim's recovery."""

    scenario: str | None = None
    name: str | None = None
    crash_points: int | None = None
    states: int | None = None
    recoveries: int | None = None
    points_hit: int | None = None
    verdicts: Counts | None = None
    confusion: dict[str, Counts] | None = None
    kills_compared: int | None = None
    kills_differing: int | None = None
    kills_unexplained: int | None = None
    not_announced_by_dsh_sim: int | None = None
    explained: Counts | None = None
    unexplained: int | None = None
    seconds: float | None = None


@attrs.frozen(kw_only=True)
class DshAgainst:
    """Recoveries read by the DSH reader too (``--against dsh``): how many, and what differed."""

    compared: int | None = None
    probes: int | None = None
    no_log: int | None = None
    not_projectable: int | None = None
    differences: int | None = None
    explained: Counts | None = None  # known finding -> differences it explained


@attrs.frozen(kw_only=True)
class ReaderCounts:
    """The reader differential of a replay shard: the corpus logs it read, its cases and checks,
    the mismatches (each also a ``reader_differential`` violation) and its time."""

    scenarios: tuple[str, ...] = ()
    cases: int = 0
    checks: int = 0
    mismatches: int = 0
    seconds: float = 0.0


@attrs.frozen(kw_only=True)
class SweepRow:
    """The failure-path sweep of one scenario: positions, runs (and how many were bridged or
    ended early), violations and time."""

    scenario: str
    positions: int = 0
    runs: int = 0
    bridged: int = 0
    not_applicable: int = 0
    violations: int = 0
    seconds: float = 0.0


@attrs.frozen(kw_only=True)
class PhaseTime:
    """One phase of a campaign run: its wall time as the submitter saw it, its CPU, its tasks."""

    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0
    tasks: int = 0


@attrs.frozen(kw_only=True)
class Execution:
    """One execution of a campaign run (the first, or a ``--resume``)."""

    argv: tuple[str, ...]
    command: str
    executor: str
    state: str
    wall_seconds: float
    cpu_seconds: float
    phases: dict[str, PhaseTime]


@attrs.frozen(kw_only=True)
class CampaignRecord:
    """A campaign run's own record (``run.json``): who ran it, how, and where the time went;
    its totals are the sums over its executions."""

    run: str
    seed: int
    argv: tuple[str, ...]
    command: str
    resume: str
    executor: str
    state: str
    tasks: int
    wall_seconds: float
    cpu_seconds: float
    phases: dict[str, PhaseTime]
    skipped: dict[str, str]
    executions: tuple[Execution, ...]


__all__ = [
    "KEEP_NULL",
    "CampaignRecord",
    "Case",
    "CaseCall",
    "Counts",
    "Determinism",
    "DshAgainst",
    "DshExploreRow",
    "DshRouteRow",
    "DshViolation",
    "Execution",
    "Grid",
    "KillRow",
    "MethodResult",
    "PhaseTime",
    "PointCounts",
    "ReaderCounts",
    "SweepRow",
    "Violation",
]
