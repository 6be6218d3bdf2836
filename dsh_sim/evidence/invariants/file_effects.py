"""``file_effects_durable``: a file write the recovered log reports done is on the medium.

The runtime's own ``write_file`` (``config.file_tools``) writes through the process's view of
the simulated disk, so its effect lives under the crash model like the log does.  After every
recovery, for each workspace path, the last ``write_file`` call the recovered log holds for it
is judged: if its durable result is a success, the file is on the medium with exactly that
content (spec §5: a success is reported only once the effect is complete — for a new file,
that includes its directory entry).  A later call to the same path whose outcome the log does
not settle makes the path unjudgeable, and without the checkpoint policy a body may run before
its call is durable, so nothing is judged then.  A call whose path or content is no UTF-8 text
(a lone surrogate) is refused before it opens the file, so it changes nothing and is passed over.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Any

from dsh_sim.evidence.invariants.base import Invariant, Judge, fail
from dsh_sim.evidence.invariants.moments import accepted
from dsh_sim.evidence.oracles.agreement import parse_arguments
from dsh_sim.evidence.oracles.progress import is_utf8_text

NAME = "file_effects_durable"


def check_file_effects(obs: Judge, events: Sequence[Any]) -> None:
    config = obs.sim.config
    if not config.file_tools or not config.checkpoint_policy:
        return
    workspace = posixpath.normpath(config.workspace)
    last: dict[str, tuple[str, str | None]] = {}  # path -> (call id, content) of its last write_file call
    succeeded: dict[str, bool] = {}
    for event in events:
        if event.type == "assistant/message":
            for block in event.data["message"]["content"]:
                if block.get("type") == "tool-call" and block.get("name") == "write_file":
                    path, content = _target(block.get("arguments"), workspace)
                    if path is not None:
                        last[path] = (block["id"], content)
        elif event.type == "tool/result":
            message = event.data["message"]
            succeeded[message["source"]["callId"]] = not message["content"][0].get("isError")
    damaged = {corruption.path for corruption in obs.corruptions}  # bytes the harness flipped on purpose
    for path, (call_id, content) in sorted(last.items()):
        if content is None or not succeeded.get(call_id) or path in damaged:
            continue
        obs.count(NAME)
        on_disk = obs.sim.disk.read_path(path)
        if on_disk != content.encode():
            found = "no file" if on_disk is None else f"{len(on_disk)} bytes that differ"
            fail(obs, NAME, f"the recovered log says write_file {call_id} wrote {path}, but the medium holds {found}", call_id)


def _target(arguments: Any, workspace: str) -> tuple[str | None, str | None]:
    """The path a call writes and its content; no path for a call refused before it touches a
    file (its path or content is no UTF-8 text: a lone surrogate), which leaves the file as the
    calls before it made it."""
    args = parse_arguments(arguments) if isinstance(arguments, str) else None
    if not isinstance(args, dict) or not isinstance(args.get("path"), str):
        return None, None
    content = args.get("content")
    if not is_utf8_text(args["path"]) or (isinstance(content, str) and not is_utf8_text(content)):
        return None, None
    return posixpath.normpath(posixpath.join(workspace, args["path"])), content if isinstance(content, str) else None


FILE_EFFECTS_DURABLE = Invariant(
    NAME,
    (
        "after every recovery, each workspace file whose last write_file call in the recovered log "
        "succeeded is on the medium with exactly that content (config file_tools: the runtime's own file "
        "tool on the simulated disk)"
    ),
    checks={"boot": accepted(lambda obs, boot: check_file_effects(obs, boot.full))},
)
