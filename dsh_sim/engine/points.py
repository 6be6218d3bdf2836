"""The one registry of named points: every place a fault or crash may be injected.

Ports and hooks announce these names; the fault plan may only target them; the coverage
report lists them.  The simulator refuses an announcement of an undeclared name, so this
list cannot drift from the code.
"""

from __future__ import annotations

import attrs

# Allowed at every point: end the process, sleep, cancel the running turn, flip a stored byte.
UNIVERSAL_ACTIONS = ("crash", "delay", "cancel", "corrupt")


@attrs.frozen
class PointSpec:
    name: str
    layer: str  # "fs" | "runtime" | "world" | "model" | "approval" | "sandbox"
    doc: str
    faults: tuple[str, ...] = ()  # domain faults allowed here besides the universal actions

    def allows(self, action: str) -> bool:
        return action in UNIVERSAL_ACTIONS or action in self.faults


_FS_ERR = ("error",)
_SPECS = [
    # filesystem port (announced by SimFS before each operation takes effect)
    PointSpec("fs.open", "fs", "open a file (create, exclusive, append)", _FS_ERR),
    PointSpec("fs.read", "fs", "read from a descriptor", _FS_ERR),
    PointSpec("fs.write", "fs", "write bytes (EIO/ENOSPC before any byte lands)", _FS_ERR),
    PointSpec("fs.fsync", "fs", "fsync a file (failure keeps or drops the dirty data)", _FS_ERR + ("fsync_fail",)),
    PointSpec("fs.fsync_dir", "fs", "fsync a directory (entries become durable)", _FS_ERR),
    PointSpec("fs.link", "fs", "hard-link a name (publication)", _FS_ERR),
    PointSpec("fs.unlink", "fs", "remove a name", _FS_ERR),
    PointSpec("fs.truncate", "fs", "truncate by path", _FS_ERR),
    PointSpec("fs.ftruncate", "fs", "truncate by descriptor (rollback, torn-tail repair)", _FS_ERR),
    PointSpec("fs.stat", "fs", "stat a path"),
    PointSpec("fs.fstat", "fs", "stat a descriptor"),
    PointSpec("fs.listdir", "fs", "list a directory"),
    PointSpec("fs.mkdir", "fs", "create a directory", _FS_ERR),
    PointSpec("fs.flock", "fs", "take the writer lock (contention)", _FS_ERR),
    # runtime (announced through the probe port)
    PointSpec("agent.turn.start", "runtime", "turn/start appended", ()),
    PointSpec("agent.pre_step", "runtime", "before the agent/pre-step waterfall (checkpoint A)", ()),
    PointSpec("llm.request", "runtime", "after checkpoint B, immediately before the model stream is constructed", ()),
    PointSpec("llm.chunk", "runtime", "a stream part was received", ()),
    PointSpec("agent.assistant.appended", "runtime", "assistant/message appended in memory (moment 1)", ()),
    PointSpec("tools.call.appended", "runtime", "tool/call appended in memory, not yet durable", ()),
    PointSpec("tools.execute.body", "runtime", "after checkpoint C, the tool body is about to run", ("tool_failure",)),
    PointSpec("tools.result.appended", "runtime", "tool/result appended in memory, not yet durable", ()),
    PointSpec("agent.turn.end", "runtime", "turn/end appended in memory", ()),
    PointSpec("session.flush", "runtime", "a durability barrier starts (reason in details)", ()),
    PointSpec("persist.batch.durable", "runtime", "a batch was appended and fsynced (acknowledged)", ()),
    # simulated external world, model, approval, sandbox
    PointSpec(
        "world.deliver", "world", "a tool's request reaches a service (moment 3 happens here)", ("request_lost", "duplicate", "timeout")
    ),
    PointSpec("world.respond", "world", "the effect happened; the response is on its way back", ("response_lost", "timeout")),
    PointSpec("model.stream", "model", "the scripted model is about to emit a part", ("stream_cut",)),
    PointSpec("approval.answer", "approval", "the simulated answerer is asked", ("answerer_failure",)),
    PointSpec("sandbox.confine", "sandbox", "the simulated sandbox is asked to confine argv", ("sandbox_unavailable",)),
    # migration of a historical generation on write open (announced through the probe port)
    PointSpec("persist.migration.prepared", "runtime", "write open of a historical log: the source was read and migrated in memory", ()),
    PointSpec("persist.migration.staged", "runtime", "the migrated generation was written to its temp file and fsynced", ()),
    PointSpec(
        "persist.migration.verified", "runtime", "the staged generation passed verification; the source identity is rechecked next", ()
    ),
    PointSpec("persist.migration.published", "runtime", "the current generation was hard-linked and its directory fsynced", ()),
]

POINTS: dict[str, PointSpec] = {spec.name: spec for spec in _SPECS}


def spec(name: str) -> PointSpec:
    try:
        return POINTS[name]
    except KeyError:
        raise KeyError(f"undeclared named point {name!r}; declare it in dsh_sim/points.py") from None
