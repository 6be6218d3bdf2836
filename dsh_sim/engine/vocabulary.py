"""The harness's closed vocabularies, defined once.

Scenario validation, the crash classifier, coverage requirements and the report all speak
these names; they import them from here so that a name cannot be spelt two ways.
"""

from __future__ import annotations

# Where a crash struck among the four moments of a tool call (model emits the call → the
# runtime records it durably → the world receives it → the runtime records the result).
BOUNDARIES: tuple[str, ...] = ("before 1", "1→2", "2→3", "3→4", "after 4")
# The spellings a shell user types and file names use: 3-4 for 3→4.
BOUNDARY_ALIASES = {"before-1": "before 1", "1-2": "1→2", "2-3": "2→3", "3-4": "3→4", "after-4": "after 4"}

# How a process dies, and what a power loss leaves of the unsynced writes.
CRASH_KINDS: tuple[str, ...] = ("kill", "power")
POWER_STATES: tuple[str, ...] = ("drop", "keep", "torn", "random", "cut")

# What a crash did to the session log (dsh_sim.engine.crash.crash_phase), in reading order.
PHASES: tuple[str, ...] = (
    "kill",
    "power:no-log",
    "power:before-publication",
    "power:publication-dropped",
    "power:publication-kept",
    "power:publication-unsynced",
    "power:unsynced-dropped",
    "power:partial",
    "power:torn",
    "power:reordered",
    "power:unsynced",
    "power:unsynced-kept",
    "power:synced",
)

# Codec-aware places a torn write can end (dsh_sim.adapters.simfs.torn).
TORN_CLASSES: tuple[str, ...] = (
    "magic",
    "frame-header",
    "block-header",
    "block",
    "checksum",
    "frame-boundary",
    "mid-line",
    "before-newline",
    "line-boundary",
)

# Durability barriers: the runtime's flush reasons, then the steps inside persistence.
INNER_BARRIERS: tuple[str, ...] = ("first publication", "torn-tail rewrite", "repair append")
BARRIERS: tuple[str, ...] = ("pre-step", "llm/stream", "tools/execute", "window write") + INNER_BARRIERS

# What repair said about a call (or what happened to it) in a recovery.
OUTCOMES: tuple[str, ...] = ("TOOL_NOT_STARTED", "TOOL_OUTCOME_UNKNOWN", "closed", "lost", "not emitted")

# Filesystem error numbers a fault rule may inject, by name.
ERRNOS: dict[str, int] = {"EIO": 5, "ENOSPC": 28, "EACCES": 13, "EWOULDBLOCK": 11, "EAGAIN": 11}

# Scripted approval answers (dsh_sim.adapters.answerer), consumed in order.
APPROVAL_ANSWERS: tuple[str, ...] = ("allowed-once", "rejected", "unavailable", "cancelled", "hang", "raise", "yolo")

# The state machines a scenario runs on.
MACHINES: tuple[str, ...] = ("durability", "storage")


# The invariants a scenario may name (``expect.invariant``): the scenario language's side of the
# registry, which implements exactly these (dsh_sim.evidence.invariants.base checks it at import).
INVARIANT_NAMES: tuple[str, ...] = (
    "seq_dense",
    "committed_bytes_stable",
    "acked_events_survive",
    "one_result_per_call",
    "verdict_soundness",
    "checkpoint_before_effect",
    "idempotent_retry_converges",
    "repair_idempotent",
    "approval_audit",
    "approval_policy",
    "approval_gate",
    "fail_closed",
    "corrupt_frame_refused",
    "recovery_succeeds",
    "lock_exclusion",
    "fidelity",
    "recovery_maximal",
    "file_effects_durable",
    "lossless_refused",
    "links_not_followed",
    "eventually_durable",
    "failed_append_rolled_back",
    "reference_model",
    "log_grammar",
    "world_agreement",
    "durable_when_acknowledged",
    "reader_agrees",
    "cancellation_honoured",
    "tool_schedule",
    "points_truthful",
    "result_shape",
    "post_execute_once",
    "turn_progress",
    "write_behind_timely",
    "closed_handle_refuses",
    "no_residue",
    "format_conformance",
    "errors_documented",
    "dsh_agrees",
    "route_agrees",
    "no_hang",
    "migration_atomic",
    "write_behind_window",
    "route_decisions",
    "lease_held",
    "foreign_files_kept",
    "model_exchange",
)
