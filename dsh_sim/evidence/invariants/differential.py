"""Invariants judged against another implementation of the same spec: the published DSH
reader reading our crash images (``dsh_agrees``, plugged in for a block by
:mod:`dsh_sim.evidence.extra`), and the published DSH route run beside ours
(``route_agrees``, judged by the route differential, not by a simulation's checker)."""

from __future__ import annotations

from dsh_sim.evidence.extra import recovery_judges
from dsh_sim.evidence.invariants.base import Invariant, Judge
from dsh_sim.evidence.invariants.moments import Boot


def _dsh_reads(obs: Judge, boot: Boot) -> None:
    assert boot.crash is not None  # (the recovery hook's moment has its crash)
    for judge in recovery_judges():  # e.g. --against dsh: the real DSH reads the same crash image
        judge(obs, boot.life, boot.crash)


DSH_AGREES = Invariant(
    "dsh_agrees",
    (
        "with --against dsh: the published DSH reader (list, read, inspect, load) reads every crash image"
        " the runtime recovers — projected to the v0 log DSH reads — as the runtime did: the same refusal"
        " class or the same prefix, closers and verdicts, unless a known DSH finding explains the "
        "difference"
    ),
    checks={"recovery": _dsh_reads},
)
ROUTE_AGREES = Invariant(
    "route_agrees",
    (
        "with --runtime dsh-route: after the same scenario, and after a kill at the same announcement of "
        "a route point both have, the published DSH route and dsh-sim's runtime agree on what a user sees"
        " — the repair verdicts, the world's ledger, the results the model sees, the calls recorded, how "
        "each turn ended — unless a documented route finding explains the difference"
    ),
    judged_by="dsh_sim.dsh.route.differential",
)
