"""``approval_policy``: every approval decision follows the policy in force when it was asked.

The policy in force is the last ``approval/policy`` event before the ``approval/asked`` — the
configured default when there is none (spec §6: a session's policy changes by appending the
event; the newest one wins).  Read here from the log, independently of the runtime's own
lookup, and held against what the simulated user was asked (ground truth, recorded by
:class:`~dsh_sim.adapters.answerer.SimAnswerer`):

* under ``never`` the user is never asked and the outcome is ``rejected`` (or ``cancelled``,
  for a call aborted first) — asking would let an answer allow what the user turned off;
* under ``ask`` a ``rejected`` outcome comes only from the user — a rejection nobody gave
  means the user's switch back to ``ask`` was not honoured.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

import attrs

from dsh_sim.evidence.oracles.event_records import in_force

NEVER_OUTCOMES = ("rejected", "cancelled")


@attrs.define
class PolicyWatch:
    """The policy in force along one process's log, and the questions still open."""

    policy: str
    open: dict[str, tuple[str, str | None]] = attrs.field(factory=dict)  # request id -> (policy when asked, call id)
    judged: int = 0  # decisions judged so far (what the check counts)

    @classmethod
    def after(cls, events: Sequence[Any], default: str) -> PolicyWatch:
        """Where a resumed log leaves off: its last ``approval/policy``, else ``default``."""
        return cls(str(in_force(events, "approval/policy", "policy", default)))

    def feed(self, events: Iterable[Any], consulted: Collection[str]) -> list[str]:
        """Judge the decisions among ``events``; what is wrong with them, one sentence each."""
        problems: list[str] = []
        for event in events:
            kind = event.type
            if kind == "approval/policy":
                self.policy = str(event.data["policy"])
            elif kind == "approval/asked":
                self.open[str(event.data["id"])] = (self.policy, event.data.get("callId"))
            elif kind == "approval/decided":
                request = str(event.data["id"])
                asked = self.open.pop(request, None)
                if asked is None:
                    continue  # (pairing is approval_audit's)
                policy, call = asked
                self.judged += 1
                outcome = event.data.get("outcome")
                where = f"approval {request}" + (f" of call {call}" if call else "")
                if policy == "never" and request in consulted:
                    problems.append(f"{where}: the user was asked although the policy in force was never")
                elif policy == "never" and outcome not in NEVER_OUTCOMES:
                    problems.append(f"{where}: decided {outcome!r} although the policy in force was never")
                elif policy == "ask" and outcome == "rejected" and request not in consulted:
                    problems.append(f"{where}: rejected without asking the user although the policy in force was ask")
        return problems
