"""Built-in file tools confined to the workspace: ``read_file`` and ``write_file``.

A path must stay inside the workspace twice over: lexically (``..`` cannot climb out) and
after resolving symbolic links (a link planted in the workspace — by a shell command, say —
cannot point a write elsewhere): the parent directory's real path must lie inside the
workspace's real path, and the final component is opened with ``NOFOLLOW``.  Only regular
files are opened: a FIFO planted in the workspace by a shell command made ``read_file`` block
forever in ``open`` (and ``write_file`` too, waiting for a reader), so the name is checked with
``lstat`` before the open and the descriptor with ``fstat`` after it.  Both tools go through
the filesystem port, so in a simulation they act on the simulated disk.
"""

from __future__ import annotations

import errno
import posixpath
from typing import Any

from runtime.ports.fs import FileSystem, OpenFlags
from runtime.tools.arguments import utf8_text
from runtime.tools.registry import ToolExecution
from runtime.tools.results import HarnessError, ToolResult


class WorkspaceEscapeError(HarnessError):
    name = "WorkspaceEscapeError"
    code = "WORKSPACE_ESCAPE"


def confine_path(workspace: str, path: Any) -> str:
    if not isinstance(path, str) or not path:
        raise HarnessError("path must be a non-empty string", name="InvalidArguments", code="INVALID_ARGUMENTS")
    resolved = posixpath.normpath(posixpath.join(workspace, path))
    if resolved != workspace and not resolved.startswith(workspace.rstrip("/") + "/"):
        raise WorkspaceEscapeError(f'path "{path}" is outside the workspace')
    return resolved


async def confine_real(fs: FileSystem, workspace: str, path: Any) -> str:
    """The confined path, refused when a symbolic link on the way leads out of the workspace,
    or when it is no UTF-8 text (a lone surrogate: see :mod:`runtime.tools.arguments`)."""
    if isinstance(path, str):
        utf8_text(path, "path")
    resolved = confine_path(workspace, path)
    root = await fs.realpath(workspace)
    parent = await fs.realpath(posixpath.dirname(resolved))
    if parent != root and not parent.startswith(root.rstrip("/") + "/"):
        raise WorkspaceEscapeError(f'path "{path}" leads outside the workspace through a symbolic link')
    return resolved


def _not_regular(path: str, kind: str) -> HarnessError:
    what = "a directory" if kind == "dir" else "not a regular file (a FIFO, socket or device)"
    return HarnessError(
        f'"{posixpath.basename(path)}" is {what}; the file tools open regular files only', name="NotARegularFile", code="NOT_A_REGULAR_FILE"
    )


async def _open(fs: FileSystem, path: str, flags: OpenFlags, mode: int = 0o600) -> int:
    try:
        before = await fs.lstat(path)
    except FileNotFoundError:
        before = None
    if before is not None and before.kind in ("dir", "other"):
        raise _not_regular(path, before.kind)  # before open: opening a FIFO blocks
    try:
        fd = await fs.open(path, flags | OpenFlags.NOFOLLOW, mode)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise WorkspaceEscapeError(f'"{posixpath.basename(path)}" is a symbolic link; the file tools do not follow links') from None
        raise
    kind = (await fs.fstat(fd)).kind
    if kind != "file":
        await fs.close(fd)
        raise _not_regular(path, kind)
    return fd


def _args(ex: ToolExecution) -> dict[str, Any]:
    if not isinstance(ex.arguments, dict):
        raise HarnessError("arguments must be a JSON object", name="InvalidArguments", code="INVALID_ARGUMENTS")
    return ex.arguments


class ReadFileTool:
    name = "read_file"
    description = "Read a UTF-8 text file inside the workspace. Arguments: {path}."
    requires_approval = False

    def __init__(self, fs: FileSystem, workspace: str) -> None:
        self._fs = fs
        self._workspace = posixpath.normpath(workspace)

    def is_concurrency_safe(self, arguments: Any) -> bool:
        return True

    async def execute(self, ex: ToolExecution) -> ToolResult:
        path = await confine_real(self._fs, self._workspace, _args(ex).get("path"))
        fd = await _open(self._fs, path, OpenFlags.READ)
        try:
            chunks = []
            while chunk := await self._fs.read(fd, 1 << 20):
                chunks.append(chunk)
        finally:
            await self._fs.close(fd)
        return ToolResult.text(b"".join(chunks).decode("utf-8", errors="replace"))


class WriteFileTool:
    name = "write_file"
    description = "Write a UTF-8 text file inside the workspace (replacing it). Arguments: {path, content}."
    requires_approval = False

    def __init__(self, fs: FileSystem, workspace: str) -> None:
        self._fs = fs
        self._workspace = posixpath.normpath(workspace)

    def is_concurrency_safe(self, arguments: Any) -> bool:
        return False

    async def execute(self, ex: ToolExecution) -> ToolResult:
        args = _args(ex)
        path = await confine_real(self._fs, self._workspace, args.get("path"))
        content = args.get("content")
        if not isinstance(content, str):
            raise HarnessError("content must be a string", name="InvalidArguments", code="INVALID_ARGUMENTS")
        data = utf8_text(content, "content")  # before the file is opened (and truncated)
        fd = await _open(self._fs, path, OpenFlags.WRITE | OpenFlags.CREATE | OpenFlags.TRUNCATE, 0o644)
        try:
            await self._fs.write(fd, data)
            await self._fs.fsync(fd)
        finally:
            await self._fs.close(fd)
        # a new name is durable only after its directory is synced: report success only then
        await self._fs.fsync_dir(posixpath.dirname(path))
        return ToolResult.text(f"wrote {len(data)} bytes to {posixpath.relpath(path, self._workspace)}")
