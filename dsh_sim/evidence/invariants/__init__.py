"""Named invariants: what must hold after every step, crash and recovery.

Each check names the call and the evidence when it fails.  They read only the simulation's
ground truth (disk, ledger, acknowledgements, an independent reader) and what the runtime
returned; none is satisfied by construction — ``tests/test_invariants.py`` shows each one
failing on a bug it guards against.

* :mod:`.live` — at the named point they concern (a tool body, a model request);
* :mod:`.recovery` — after every recovery: what survived, and what repair said;
* :mod:`.calls` — after every recovery: the calls in the log (results, verdicts, approvals, refusals);
* :mod:`.effects` — against the world's ledger;
* :mod:`.storage` — writers, dead processes, migration, rollback, shutdown;
* :mod:`.oracles` — the oracles' verdicts (reference model, log grammar, world agreement, format…);
* :mod:`.pace` — after a quiet step: the turn's progress and write-behind's window;
* :mod:`.residue` — after a stop without a crash: nothing left open, no stray name;
* :mod:`.points`, :mod:`.errors`, :mod:`.closed` — what the runtime announces, raises and refuses.
"""

from dsh_sim.evidence.invariants.base import INVARIANTS, NO_HANG, Violation, fail
from dsh_sim.evidence.invariants.calls import (
    check_approval_audit,
    check_fail_closed,
    check_one_result_per_call,
    check_verdicts,
)
from dsh_sim.evidence.invariants.effects import check_idempotent_keys
from dsh_sim.evidence.invariants.live import (
    check_approval_gate,
    check_body_after_durable_call,
    check_request_after_durable_header,
)
from dsh_sim.evidence.invariants.recovery import (
    check_acked,
    check_committed_bytes,
    check_recovery,
    check_seq_dense,
    io_fault_refused,
)
from dsh_sim.evidence.invariants.storage import (
    SeededSource,
    check_eventually_durable,
    check_failed_append,
    check_fidelity,
    check_migration_atomic,
    check_second_writer,
    check_single_writer,
)

__all__ = [
    "INVARIANTS",
    "NO_HANG",
    "SeededSource",
    "Violation",
    "check_acked",
    "check_approval_audit",
    "check_approval_gate",
    "check_body_after_durable_call",
    "check_committed_bytes",
    "check_eventually_durable",
    "check_fail_closed",
    "check_failed_append",
    "check_fidelity",
    "check_idempotent_keys",
    "check_migration_atomic",
    "check_one_result_per_call",
    "check_recovery",
    "check_request_after_durable_header",
    "check_second_writer",
    "check_seq_dense",
    "check_single_writer",
    "check_verdicts",
    "fail",
    "io_fault_refused",
]
