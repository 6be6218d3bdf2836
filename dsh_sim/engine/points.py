"""The one registry of named points: every place a fault or crash may be injected.

Ports and hooks announce these names; the fault plan may only target them; the coverage
report lists them.  The simulator refuses an announcement of an undeclared name, so this
list cannot drift from the code.  Each point also declares the detail keys it is announced
with — what a fault rule's ``match`` can filter on — so a scenario that matches on a key the
point never carries is refused at load instead of "never firing" at replay
(``tests/test_points.py`` replays the corpus and checks every announced key is declared).
"""

from __future__ import annotations

import attrs

# Allowed at every point: end the process, sleep, cancel the running turn, flip a stored byte.
UNIVERSAL_ACTIONS = ("crash", "delay", "cancel", "corrupt")


@attrs.frozen
class PointSpec:
    name: str
    layer: str  # "fs" | "runtime" | "plugin" | "world" | "model" | "approval" | "sandbox"
    doc: str
    faults: tuple[str, ...] = ()  # domain faults allowed here besides the universal actions
    details: tuple[str, ...] = ()  # detail keys every announcement carries (what ``match`` can use)

    def allows(self, action: str) -> bool:
        return action in UNIVERSAL_ACTIONS or action in self.faults


_FS_ERR = ("error",)
# an older runtime, still running, appends a turn to the historical source while it is migrated
# (before publication only: the migration must notice and migrate the grown source)
_SOURCE_APPEND = ("source_append",)
_SPECS = [
    # filesystem port (announced by SimFS before each operation takes effect)
    PointSpec("fs.open", "fs", "open a file (create, exclusive, append)", _FS_ERR + ("linked",), ("path", "flags")),
    PointSpec("fs.read", "fs", "read from a descriptor", _FS_ERR, ("path",)),
    PointSpec("fs.write", "fs", "write bytes (EIO/ENOSPC before any byte lands)", _FS_ERR, ("path", "size")),
    PointSpec("fs.fsync", "fs", "fsync a file (failure keeps or drops the dirty data)", _FS_ERR + ("fsync_fail",), ("path",)),
    PointSpec("fs.fsync_dir", "fs", "fsync a directory (entries become durable)", _FS_ERR, ("path",)),
    PointSpec("fs.link", "fs", "hard-link a name (publication)", _FS_ERR + ("target_exists",), ("path", "src")),
    PointSpec("fs.unlink", "fs", "remove a name", _FS_ERR, ("path",)),
    PointSpec("fs.truncate", "fs", "truncate by path", _FS_ERR, ("path", "size")),
    PointSpec("fs.ftruncate", "fs", "truncate by descriptor (rollback, torn-tail repair)", _FS_ERR, ("path", "size")),
    PointSpec("fs.stat", "fs", "stat a path", (), ("path",)),
    PointSpec("fs.fstat", "fs", "stat a descriptor", (), ("path",)),
    PointSpec("fs.listdir", "fs", "list a directory", (), ("path",)),
    PointSpec("fs.mkdir", "fs", "create a directory", _FS_ERR, ("path",)),
    PointSpec("fs.flock", "fs", "take the writer lock (contention)", _FS_ERR + ("replaced", "removed", "contended"), ("path",)),
    # runtime (announced through the probe port)
    PointSpec("agent.turn.start", "runtime", "turn/start appended", (), ("turn",)),
    PointSpec("agent.pre_step", "runtime", "before the agent/pre-step waterfall (checkpoint A)", (), ("turn", "step")),
    PointSpec("llm.request", "runtime", "after checkpoint B, immediately before the model stream is constructed", (), ("turn", "step")),
    PointSpec("llm.chunk", "runtime", "a stream part was received", (), ("turn", "step")),
    PointSpec("agent.assistant.appended", "runtime", "assistant/message appended in memory (moment 1)", (), ("turn", "step")),
    PointSpec("tools.call.appended", "runtime", "tool/call appended in memory, not yet durable", (), ("call_id", "tool", "seq")),
    PointSpec(
        "tools.execute.body",
        "runtime",
        "after checkpoint C, the tool body is about to run",
        ("tool_failure",),
        ("call_id", "tool", "nested"),
    ),
    PointSpec("tools.result.appended", "runtime", "tool/result appended in memory, not yet durable", (), ("call_id", "tool")),
    PointSpec("agent.turn.end", "runtime", "turn/end appended in memory", (), ("turn",)),
    PointSpec("session.flush", "runtime", "a durability barrier starts (reason in details)", (), ("session_id", "reason")),
    PointSpec(
        "persist.batch.durable", "runtime", "a batch was appended and fsynced (acknowledged)", (), ("session_id", "first_seq", "count")
    ),
    # plugins the simulated deployment mounts (announced through the domain gate)
    PointSpec(
        "plugin.tools_execute",
        "plugin",
        "a tools/execute hook mounted after the checkpoint policy awaits, top-level and nested calls alike "
        "(config execute_plugin; a cancel here comes after prepare's last abort check, before the body)",
        (),
        ("call_id", "root_call_id", "tool", "nested"),
    ),
    PointSpec(
        "policy.gate",
        "plugin",
        "the deployment's tools/pre-execute gate is about to answer a scripted call (config policy; a cancel here comes after prepare's first abort check)",
        (),
        ("call_id", "tool", "answer"),
    ),
    PointSpec(
        "policy.guard",
        "plugin",
        "the deployment's monotonic guard is about to answer a scripted call that pre-execute allowed (config policy)",
        (),
        ("call_id", "tool", "answer"),
    ),
    PointSpec(
        "policy.post",
        "plugin",
        "the deployment's tools/post-execute hook is about to answer a scripted call's result (config policy)",
        (),
        ("call_id", "tool", "answer"),
    ),
    # simulated external world, model, approval, sandbox
    PointSpec(
        "world.deliver",
        "world",
        "a tool's request reaches a service (moment 3 happens here)",
        ("request_lost", "duplicate", "timeout"),
        ("service", "op", "call_id", "root_call_id"),
    ),
    PointSpec(
        "world.respond",
        "world",
        "the effect happened; the response is on its way back",
        ("response_lost", "timeout"),
        ("service", "op", "call_id", "root_call_id"),
    ),
    PointSpec("model.stream", "model", "the scripted model is about to emit a part", ("stream_cut",), ("turn", "step", "part")),
    PointSpec("approval.answer", "approval", "the simulated answerer is asked", ("answerer_failure",), ("tool", "call_id")),
    PointSpec(
        "sandbox.confine", "sandbox", "the simulated sandbox is asked to confine argv", ("sandbox_unavailable",), ("call_id", "mode")
    ),
    # migration of a historical generation on write open (announced through the probe port)
    PointSpec(
        "persist.migration.prepared",
        "runtime",
        "write open of a historical log: the source was read and migrated in memory",
        _SOURCE_APPEND,
        ("session_id", "source", "events"),
    ),
    PointSpec(
        "persist.migration.staged",
        "runtime",
        "the migrated generation was written to its temp file and fsynced",
        _SOURCE_APPEND,
        ("session_id", "path", "size"),
    ),
    PointSpec(
        "persist.migration.verified",
        "runtime",
        "the staged generation passed verification; the source identity is rechecked next",
        _SOURCE_APPEND,
        ("session_id", "path", "events"),
    ),
    PointSpec(
        "persist.migration.published",
        "runtime",
        "the current generation was hard-linked and its directory fsynced",
        (),
        ("session_id", "path", "events"),
    ),
]

POINTS: dict[str, PointSpec] = {spec.name: spec for spec in _SPECS}
LAYERS: tuple[str, ...] = ("fs", "runtime", "plugin", "world", "model", "approval", "sandbox")
# every fault action some point allows: the universal ones, then the domain faults
ACTIONS: tuple[str, ...] = UNIVERSAL_ACTIONS + tuple(sorted({f for p in _SPECS for f in p.faults}))


def spec(name: str) -> PointSpec:
    try:
        return POINTS[name]
    except KeyError:
        raise KeyError(f"undeclared named point {name!r}; declare it in dsh_sim/engine/points.py") from None
