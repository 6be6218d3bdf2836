"""Named invariants: what must hold after every step, crash and recovery.

Each is one :class:`~.base.Invariant` — its name, what must hold, the moments it is judged at
(:mod:`.moments`) and its check there — defined beside its check, and listed once in
:mod:`.registry`, which the checker (:mod:`dsh_sim.evidence.checker`) runs.  Each check names
the call and the evidence when it fails.  They read only the simulation's ground truth (disk,
ledger, acknowledgements, an independent reader) and what the runtime returned; none is
satisfied by construction — ``tests/simulation/test_invariants.py`` shows each one failing on a
bug it guards against.

* :mod:`.live` — at the named point they concern (a tool body, a model request);
* :mod:`.recovery` — after every boot: the log opened, what survived, what repair said;
* :mod:`.calls` — after every boot: the calls in the log (results, verdicts, approvals, refusals);
* :mod:`.effects`, :mod:`.file_effects` — against the world's ledger and the workspace's files;
* :mod:`.storage` — writers, dead processes, migration, rollback, shutdown;
* :mod:`.medium` — what the medium holds when the runtime says it is durable, and its format;
* :mod:`.models`, :mod:`.pipeline` — against an executable model (reference model, log grammar, world
  agreement, the tool pipeline's models); :mod:`.route`, :mod:`.window`,
  :mod:`.model_exchange` — the route's decisions, write-behind's timing, the model port;
* :mod:`.differential` — against another implementation (the published DSH);
* :mod:`.pace` — after a quiet step: the turn's progress and write-behind's window;
* :mod:`.residue`, :mod:`.lease`, :mod:`.links` — what a process leaves, holds and follows;
* :mod:`.points`, :mod:`.errors`, :mod:`.closed`, :mod:`.hang`, :mod:`.lossless` — what the
  runtime announces, raises and refuses, and that it never hangs.
"""

from dsh_sim.evidence.invariants.base import NO_HANG, Invariant, Violation, fail
from dsh_sim.evidence.invariants.calls import (
    check_approval_audit,
    check_fail_closed,
    check_one_result_per_call,
    check_verdicts,
)
from dsh_sim.evidence.invariants.effects import check_idempotent_keys
from dsh_sim.evidence.invariants.recovery import check_acked, check_committed_bytes, check_seq_dense
from dsh_sim.evidence.invariants.registry import INVARIANTS, REGISTRY
from dsh_sim.evidence.invariants.storage import SeededSource

__all__ = [
    "INVARIANTS",
    "NO_HANG",
    "REGISTRY",
    "Invariant",
    "SeededSource",
    "Violation",
    "check_acked",
    "check_approval_audit",
    "check_committed_bytes",
    "check_fail_closed",
    "check_idempotent_keys",
    "check_one_result_per_call",
    "check_seq_dense",
    "check_verdicts",
    "fail",
]
