"""The fault plan: rules keyed by named point and hit count.

A rule fires on the ``hit``-th announcement of its point that matches its filter (and,
optionally, only in one process lifetime), ``times`` times in a row.  Actions: ``crash``
(kill or power loss with its post-crash state), ``delay``, ``cancel``, ``corrupt`` (flip a
stored byte of a file), filesystem ``error`` and ``fsync_fail``, and the domain faults each
point declares in :mod:`dsh_sim.engine.points`.  The plan is consulted at named points and
nowhere else.

The classes validate themselves: an unknown point, an action the point does not allow, a
``match`` key the point never carries, a number out of range are refused when the rule is
made (a scenario file is refused at load, naming the JSON path), never discovered at replay.
JSON in and out is :mod:`dsh_sim.scenario.codec`'s job.
"""

from __future__ import annotations

from typing import Any

import attrs

from dsh_sim.adapters.simfs.crash import PowerCut
from dsh_sim.engine.bounds import integer, member, number, optional
from dsh_sim.engine.points import ACTIONS, POINTS
from dsh_sim.engine.vocabulary import CRASH_KINDS, ERRNOS, POWER_STATES
from dsh_sim.errors import FieldError, did_you_mean, one_of

MAX_HIT = 1_000_000
MAX_LIFETIME = 10_000
MAX_DELAY = 86_400.0  # virtual seconds


@attrs.frozen
class CrashSpec:
    kind: str = attrs.field(
        default="kill",
        validator=member(CRASH_KINDS, "crash kind"),
        metadata={"doc": "kill (page cache survives) or power (unsynced data at risk)"},
    )
    state: str = attrs.field(
        default="drop", validator=member(POWER_STATES, "power state"), metadata={"doc": "power loss: what survives (below)"}
    )
    torn_fraction: float = attrs.field(
        default=0.5, validator=number(0.0, 1.0), metadata={"doc": "state torn: share of the last unsynced write that lands"}
    )
    cut: PowerCut | None = attrs.field(default=None, metadata={"doc": "state cut: which unsynced operations and entries survive"})

    def label(self) -> str:
        if self.kind == "kill":
            return "kill"
        return f"power:{self.state}" + (f"@{self.torn_fraction:g}" if self.state == "torn" else "")


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


@attrs.frozen
class FaultRule:
    point: str = attrs.field(metadata={"doc": "the named point (below)"})
    action: str = attrs.field(validator=member(ACTIONS, "fault action"), metadata={"doc": "what happens there (below)"})
    hit: int = attrs.field(default=1, validator=integer(1, MAX_HIT), metadata={"doc": "fire on the hit-th matching announcement"})
    times: int = attrs.field(
        default=1, validator=integer(1, MAX_HIT), metadata={"doc": "fire on this many matching announcements in a row"}
    )
    lifetime: int | None = attrs.field(
        default=None, validator=optional(integer(1, MAX_LIFETIME)), metadata={"doc": "only in this process lifetime (1 = the first boot)"}
    )
    match: tuple[tuple[str, Any], ...] = attrs.field(default=(), metadata={"doc": "detail keys of the point that must equal these values"})
    crash: CrashSpec | None = attrs.field(default=None, metadata={"doc": "action crash: how the process dies (default kill)"})
    errno: str = attrs.field(default="EIO", validator=member(ERRNOS, "errno"), metadata={"doc": "actions error, fsync_fail"})
    drop_dirty: bool = attrs.field(default=False, metadata={"doc": "action fsync_fail: the dirty pages are dropped"})
    delay: float = attrs.field(default=0.0, validator=number(0.0, MAX_DELAY), metadata={"doc": "actions delay, timeout: virtual seconds"})
    corrupt_path: str | None = attrs.field(default=None, metadata={"doc": "action corrupt: the file (default the session log)"})
    corrupt_offset: int = attrs.field(
        default=-1, validator=integer(-(2**40), 2**40), metadata={"doc": "action corrupt: byte offset (negative: from the end)"}
    )

    def __attrs_post_init__(self) -> None:
        point = POINTS.get(self.point)
        if point is None:
            raise FieldError("point", one_of(self.point, POINTS, "named point") + " (dsh-sim points lists them)")
        if not point.allows(self.action):
            allowed = ", ".join(("crash", "delay", "cancel", "corrupt") + point.faults)
            raise FieldError("action", f"named point {self.point!r} does not allow the fault {self.action!r} (allowed: {allowed})")
        for key, value in self.match:
            if key not in point.details:
                carried = ", ".join(point.details) or "no details"
                raise FieldError(
                    "match", f"{self.point!r} is never announced with {key!r}{did_you_mean(key, point.details)} (it carries: {carried})"
                )
            if not _scalar(value):
                raise FieldError("match", f"match value of {key!r} must be a string, number, boolean or null, got {value!r}")
        if self.action == "crash" and self.crash is None:
            object.__setattr__(self, "crash", CrashSpec())

    def matches(self, details: dict[str, Any]) -> bool:
        return all(details.get(key) == value for key, value in self.match)

    def describe(self) -> str:
        match = "".join(f", {k}={v!r}" for k, v in self.match)
        return f"{self.action} at {self.point}, hit {self.hit}{match}"


@attrs.define
class _Armed:
    rule: FaultRule
    seen: int = 0
    fired: int = 0


@attrs.frozen
class Firing:
    rule: FaultRule
    index: int  # position of the rule in the plan


class FaultPlan:
    """An ordered list of rules plus their hit counters (counters are run state, not plan)."""

    def __init__(self, rules: list[FaultRule] | tuple[FaultRule, ...] | None = None) -> None:
        self._armed = [_Armed(rule) for rule in rules or ()]
        # the points any rule names: an announcement of any other point meets no rule (most
        # announcements; :meth:`Simulation.point` asks this before calling :meth:`hit`)
        self.points = {armed.rule.point for armed in self._armed}

    @property
    def rules(self) -> list[FaultRule]:
        return [a.rule for a in self._armed]

    def add(self, rule: FaultRule) -> int:
        self._armed.append(_Armed(rule))
        self.points.add(rule.point)
        return len(self._armed) - 1

    def unfired(self) -> list[tuple[int, FaultRule, int]]:
        """(position, rule, matching announcements seen) of every rule that never fired."""
        return [(i, a.rule, a.seen) for i, a in enumerate(self._armed) if a.fired == 0]

    def hit(self, point: str, details: dict[str, Any], lifetime: int) -> list[Firing]:
        out: list[Firing] = []
        if point not in self.points:
            return out  # most announcements meet no rule at all
        for index, armed in enumerate(self._armed):
            rule = armed.rule
            if rule.point != point or (rule.lifetime is not None and rule.lifetime != lifetime) or not rule.matches(details):
                continue
            armed.seen += 1
            if rule.hit <= armed.seen < rule.hit + rule.times:
                armed.fired += 1
                out.append(Firing(rule, index))
        return out
