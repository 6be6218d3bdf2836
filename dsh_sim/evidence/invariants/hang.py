"""``no_hang``: no command hangs the process; the kernel's watchdog (:mod:`dsh_sim.engine.hang`)
kills one that does and the checker reports it here."""

from __future__ import annotations

from dsh_sim.evidence.invariants.base import NO_HANG, Invariant, Judge, fail
from dsh_sim.evidence.invariants.moments import Hang


def _hung(obs: Judge, hung: Hang) -> None:
    fail(obs, NO_HANG, str(hung.hang), None, f"process {hung.life.index}: {hung.hang.kind} after {hung.hang.batches} scheduler batches")


NO_HANG_INVARIANT = Invariant(
    NO_HANG,
    (
        "no command hangs the process — boot, a prompt, a flush, a graceful stop: it never spins (a whole"
        " window of 10,000 scheduler batches without virtual time moving: a failure retried at once "
        "forever, tasks waking each other) never deadlocks while it stops (every task waiting with "
        "nothing left that could wake one), never overruns a stop's grace of 600 virtual seconds with its"
        " clock moving, and never stalls (one command running 10 CPU seconds: a loop that does not "
        "yield); the harness then kills it, as an operator would"
    ),
    checks={
        "hang": _hung,
        "step": lambda obs, _: obs.count(NO_HANG),
    },  # (the step's command handed control back, or the hang hook reported it)
)
