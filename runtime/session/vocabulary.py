"""Event types: the v3 vocabulary this runtime knows (spec §1.4, §10.1)."""

from __future__ import annotations

# KNOWN_SESSION_EVENT_TYPES of the v3 generation: the 48 UP names without assistant/chunk
# and tool/code-dispatch*, plus the 15 names the LATE generation added.
KNOWN_EVENT_TYPES: frozenset[str] = frozenset(
    {
        "agent-preset/selected",
        "agent/inbox/spliced",
        "approval/asked",
        "approval/decided",
        "approval/policy",
        "assistant/attempt",
        "assistant/message",
        "command/done",
        "command/run",
        "compaction/end",
        "compaction/prune",
        "compaction/start",
        "compaction/summary",
        "deliverables/presented",
        "developer/message",
        "feedback/message-delete",
        "feedback/message-put",
        "feedback/record",
        "goal/change",
        "hook/invoked",
        "hook/result",
        "image/offload",
        "llm/retry",
        "llm/retry-started",
        "model/selection",
        "permission/preset",
        "plan/mode",
        "request/context",
        "request/header",
        "sandbox/mode",
        "schedule/change",
        "session-log-deepseek/delivery-accepted",
        "session/end-seed",
        "session/title",
        "session/title-llm-request",
        "slots/dispatch",
        "step/end",
        "step/start",
        "subagent/catalog",
        "subagent/descriptor",
        "subagent/model-selection-policy",
        "system/message",
        "team/member",
        "team/message/delivered",
        "team/message/queued",
        "team/task",
        "todo/write",
        "tool-workflow/agent-end",
        "tool-workflow/agent-start",
        "tool-workflow/run-end",
        "tool-workflow/run-start",
        "tool/call",
        "tool/ptc-dispatch",
        "tool/ptc-dispatch-start",
        "tool/result",
        "turn/end",
        "turn/start",
        "user/message",
        "web/deepseek-search-llm-request",
        "workspace/changes",
    }
)

# Model-visible ("surface") event types; in v3 each one must carry ``surfaceOp``.
SURFACE_EVENT_TYPES: frozenset[str] = frozenset({"user/message", "assistant/message", "tool/result", "system/message"})

SESSION_FORMAT_VERSION = 3
