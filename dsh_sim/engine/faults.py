"""The fault plan: JSON-serializable rules keyed by named point and hit count.

A rule fires on the ``hit``-th announcement of its point that matches its filter (and,
optionally, only in one process lifetime), ``times`` times in a row.  Actions: ``crash``
(kill or power loss with its post-crash state), ``delay``, ``cancel``, filesystem ``error``
and ``fsync_fail``, ``corrupt`` (flip stored bytes of a file), and the domain faults each
point declares in :mod:`dsh_sim.engine.points`.  The plan is consulted at named points and nowhere
else.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from dsh_sim.engine.points import spec

POWER_STATES = ("drop", "keep", "torn", "random", "cut")


@attrs.frozen
class CrashSpec:
    kind: str = "kill"  # "kill" | "power"
    state: str = "drop"  # power: "drop" | "keep" | "torn" | "random" | "cut"
    torn_fraction: float = 0.5  # state "torn": fraction of the last unsynced write that lands
    cut: dict[str, Any] | None = None  # state "cut": an explicit PowerCut (JSON)

    def __attrs_post_init__(self) -> None:
        if self.kind not in ("kill", "power"):
            raise ValueError(f"crash kind must be kill or power, got {self.kind!r}")
        if self.state not in POWER_STATES:
            raise ValueError(f"power state must be one of {POWER_STATES}, got {self.state!r}")

    def label(self) -> str:
        if self.kind == "kill":
            return "kill"
        return f"power:{self.state}" + (f"@{self.torn_fraction:g}" if self.state == "torn" else "")


@attrs.frozen
class FaultRule:
    point: str
    action: str
    hit: int = 1
    times: int = 1
    lifetime: int | None = None  # only in this process lifetime (1 = first boot)
    match: tuple[tuple[str, Any], ...] = ()  # details that must equal these values
    crash: CrashSpec | None = None
    errno: str = "EIO"
    drop_dirty: bool = False
    delay: float = 0.0
    corrupt_path: str | None = None  # "corrupt": file to damage (default: the session log)
    corrupt_offset: int = -1  # byte offset (negative: from the end)

    def __attrs_post_init__(self) -> None:
        point = spec(self.point)
        if not point.allows(self.action):
            raise ValueError(f"named point {self.point!r} does not allow the fault {self.action!r}")
        if self.hit < 1 or self.times < 1:
            raise ValueError("hit and times must be >= 1")
        if self.action == "crash" and self.crash is None:
            object.__setattr__(self, "crash", CrashSpec())

    def matches(self, details: dict[str, Any]) -> bool:
        return all(details.get(key) == value for key, value in self.match)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"point": self.point, "action": self.action, "hit": self.hit}
        if self.times != 1:
            out["times"] = self.times
        if self.lifetime is not None:
            out["lifetime"] = self.lifetime
        if self.match:
            out["match"] = dict(self.match)
        if self.action == "crash" and self.crash is not None:
            out["crash"] = {k: v for k, v in attrs.asdict(self.crash).items() if v is not None}
        if self.action in ("error", "fsync_fail"):
            out["errno"] = self.errno
        if self.action == "fsync_fail":
            out["drop_dirty"] = self.drop_dirty
        if self.action in ("delay", "timeout"):
            out["delay"] = self.delay
        if self.action == "corrupt":
            out["corrupt_path"] = self.corrupt_path
            out["corrupt_offset"] = self.corrupt_offset
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> FaultRule:
        known = {f.name for f in attrs.fields(cls)}
        extra = sorted(set(obj) - known)
        if extra:
            raise ValueError(f"fault rule has unknown keys {extra}")
        crash = CrashSpec(**obj["crash"]) if obj.get("crash") else None
        return cls(
            point=obj["point"],
            action=obj["action"],
            hit=int(obj.get("hit", 1)),
            times=int(obj.get("times", 1)),
            lifetime=obj.get("lifetime"),
            match=tuple(sorted(obj.get("match", {}).items())),
            crash=crash,
            errno=obj.get("errno", "EIO"),
            drop_dirty=bool(obj.get("drop_dirty", False)),
            delay=float(obj.get("delay", 0.0)),
            corrupt_path=obj.get("corrupt_path"),
            corrupt_offset=int(obj.get("corrupt_offset", -1)),
        )


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

    def __init__(self, rules: list[FaultRule] | None = None) -> None:
        self._armed = [_Armed(rule) for rule in rules or ()]

    @property
    def rules(self) -> list[FaultRule]:
        return [a.rule for a in self._armed]

    def add(self, rule: FaultRule) -> int:
        self._armed.append(_Armed(rule))
        return len(self._armed) - 1

    def unfired(self) -> list[tuple[int, FaultRule]]:
        return [(i, a.rule) for i, a in enumerate(self._armed) if a.fired == 0]

    def hit(self, point: str, details: dict[str, Any], lifetime: int) -> list[Firing]:
        out: list[Firing] = []
        for index, armed in enumerate(self._armed):
            rule = armed.rule
            if rule.point != point or (rule.lifetime is not None and rule.lifetime != lifetime) or not rule.matches(details):
                continue
            armed.seen += 1
            if rule.hit <= armed.seen < rule.hit + rule.times:
                armed.fired += 1
                out.append(Firing(rule, index))
        return out

    def to_json(self) -> list[dict[str, Any]]:
        return [r.to_json() for r in self.rules]

    @classmethod
    def from_json(cls, rules: Iterable[dict[str, Any]]) -> FaultPlan:
        return cls([FaultRule.from_json(r) for r in rules])
