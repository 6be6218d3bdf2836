"""Extra recovery judges switched on for a block of code, like a mutant: a layer above the
evidence (the published DSH's reader, :mod:`dsh_sim.dsh.against`) plugs its judge in here, so
the checker calls it without depending on it and the drivers need no new parameters.

A judge is called after the first boot that follows a crash, where ``reference_model`` judges
the recovery, with the checker (as a :class:`~dsh_sim.evidence.invariants.base.Judge`), the
lifetime that booted and the crash it recovered from.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dsh_sim.engine.crash import CrashRecord
    from dsh_sim.engine.lifetime import Lifetime
    from dsh_sim.evidence.invariants.base import Judge

RecoveryJudge = Callable[["Judge", "Lifetime", "CrashRecord"], None]

_JUDGES: list[RecoveryJudge] = []  # the enabled blocks' judges, innermost last


def recovery_judges() -> tuple[RecoveryJudge, ...]:
    return tuple(_JUDGES)


@contextlib.contextmanager
def judging(judge: RecoveryJudge) -> Iterator[None]:
    """Call ``judge`` after every recovery inside the block."""
    _JUDGES.append(judge)
    try:
        yield
    finally:
        _JUDGES.remove(judge)
