"""A ``tools/post-execute`` plugin that replaces a result's content, as real deployments do
(redaction, summarising a large output, appending a provenance note).

With only the pipeline witness mounted, every post-execute verdict is a plain ``Accept`` and
the registry's content replacement is never exercised.  This plugin (config
``post_execute_note``) answers each result that reaches post-execute with ``Accept(content=…)``:
the body's blocks plus one text block, :data:`NOTE`.  ``post_execute_once`` then holds the log
to it: a result that passed post-execute carries the note as its last block, one that did not
(a final result) never does (spec §5.2: post-execute may replace the content).
"""

from __future__ import annotations

from typing import Any

from runtime.agent.hooks import Next, PluginContext
from runtime.tools.registry import Accept, ToolExecution
from runtime.tools.results import ToolResult

NOTE = "[noted by post-execute]"
NOTE_BLOCK = {"type": "text", "text": NOTE}


class PostExecuteNote:
    """Replaces the content of every result that passes post-execute: its blocks, then the note."""

    name = "sim-post-execute-note"

    def apply(self, ctx: PluginContext) -> None:
        ctx.on("tools/post-execute", self._post)

    async def _post(self, value: tuple[ToolExecution, ToolResult], next: Next) -> Any:
        verdict = await next(value)
        if isinstance(verdict, Accept) and verdict.content is None:
            return Accept(content=(*value[1].content, dict(NOTE_BLOCK)))
        return verdict
