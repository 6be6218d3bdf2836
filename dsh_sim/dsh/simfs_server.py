"""The simulator's side of the SimFS shim: answer the DSH backend's filesystem calls on a Disk.

Each message from the Node shim (``js/sim-fs-promises.mjs``) is one operation, applied to a
:class:`~dsh_sim.adapters.simfs.view.ProcessView` of the simulated disk (so the crash model,
page cache and durability bookkeeping are the simulator's own), with errors mapped to the
``code`` strings node:fs uses.  ``before`` is called ahead of every operation that can change
the disk: that is where the explorer takes its crash points.  ``randomBytes`` (the temporary
file name of a first publication) comes from a counter, so a recording replays identically.

Not routed: ``mkdtemp`` (Windows only in the backend) answers ENOSYS; there is no ``flock``
in DSH 0.1.0-rc.8 (its only single-writer guard is in-process), so none is needed.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import posixpath
from collections.abc import Callable, Coroutine
from typing import Any

from dsh_sim.adapters.simfs.disk import Disk
from dsh_sim.adapters.simfs.view import ProcessView
from runtime.ports.fs import OpenFlags, StatResult

MUTATING = frozenset({"open", "write", "fsync", "ftruncate", "truncate", "mkdir", "link", "rm"})
_FLAGS = {
    "r": OpenFlags.READ,
    "r+": OpenFlags.READ | OpenFlags.WRITE,
    "w": OpenFlags.WRITE | OpenFlags.CREATE | OpenFlags.TRUNCATE,
    "wx": OpenFlags.WRITE | OpenFlags.CREATE | OpenFlags.EXCLUSIVE,
    "a": OpenFlags.WRITE | OpenFlags.CREATE | OpenFlags.APPEND,
}


async def _no_checkpoint() -> None:
    """The server answers one operation at a time from outside any event loop: nothing to yield to."""


def _run(fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> Any:
    """Run one view operation to its end.  With no checkpoint and no gate it never awaits
    anything, so it completes on its first step — without a trio loop per operation (which
    cost half of a DSH exploration's time)."""
    coro = fn(*args)
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError(f"SimFS operation {getattr(fn, '__name__', fn)} waited on an event loop: the server's view must not")


def _stat(st: StatResult) -> dict[str, Any]:
    return {"dev": st.dev, "ino": st.ino, "size": st.size, "mtimeNs": str(st.mtime_ns), "ctimeNs": str(st.ctime_ns), "isDir": st.is_dir}


class SimFsServer:
    def __init__(self, disk: Disk, pid: int, seed: str, before: Callable[[str, dict[str, Any]], None] | None = None) -> None:
        self.disk = disk
        self.view = ProcessView(disk, pid, checkpoint=_no_checkpoint)
        self.seed = seed
        self.before = before
        self.random_calls = 0
        self.fds: dict[int, tuple[str, bool]] = {}  # fd -> (path, is a directory)
        self.ops = 0

    def handle(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        if op in MUTATING and self.before is not None and not (op == "open" and args.get("flags") == "r"):
            self.before(op, args)
        self.ops += 1
        try:
            return {"ok": True, "value": getattr(self, f"op_{op}")(args)}
        except OSError as err:
            code = errno.errorcode.get(err.errno or errno.EIO, "EIO")
            return {"ok": False, "error": {"code": code, "errno": err.errno, "message": err.strerror or code}}
        except AttributeError:
            return {"ok": False, "error": {"code": "ENOSYS", "errno": errno.ENOSYS, "message": f"{op} is not routed to SimFS"}}

    # -- operations ------------------------------------------------------------------------

    def op_randomBytes(self, args: dict[str, Any]) -> str:
        self.random_calls += 1
        digest = hashlib.sha256(f"{self.seed}:{self.random_calls}".encode()).digest()
        return base64.b64encode(digest[: int(args["size"])]).decode()

    def op_open(self, args: dict[str, Any]) -> int:
        path = args["path"]
        flags = _FLAGS.get(args["flags"])
        if flags is None:
            raise OSError(errno.EINVAL, f"open flags {args['flags']!r} are not routed")
        fd: int = _run(self.view.open, path, flags, int(args.get("mode", 0o600)))
        self.fds[fd] = (path, _run(self.view.fstat, fd).is_dir)
        return fd

    def op_write(self, args: dict[str, Any]) -> None:
        _run(self.view.write, args["fd"], base64.b64decode(args["data"]))

    def op_fsync(self, args: dict[str, Any]) -> None:
        path, is_dir = self.fds.get(args["fd"], (args.get("path", "?"), False))
        if is_dir:  # node's FileHandle.sync() on a directory: the directory's entries
            _run(self.view.fsync_dir, path)
        else:
            _run(self.view.fsync, args["fd"])

    def op_fstat(self, args: dict[str, Any]) -> dict[str, Any]:
        return _stat(_run(self.view.fstat, args["fd"]))

    def op_stat(self, args: dict[str, Any]) -> dict[str, Any]:
        return _stat(_run(self.view.stat, args["path"]))

    def op_ftruncate(self, args: dict[str, Any]) -> None:
        _run(self.view.ftruncate, args["fd"], int(args["size"]))

    def op_truncate(self, args: dict[str, Any]) -> None:
        _run(self.view.truncate, args["path"], int(args["size"]))

    def op_read(self, args: dict[str, Any]) -> str:
        return base64.b64encode(_run(self.view.read, args["fd"], int(args["size"]))).decode()

    def op_readAll(self, args: dict[str, Any]) -> str:
        chunks = []
        while chunk := _run(self.view.read, args["fd"], 1 << 20):
            chunks.append(chunk)
        return base64.b64encode(b"".join(chunks)).decode()

    def op_readFile(self, args: dict[str, Any]) -> str:
        fd = _run(self.view.open, args["path"], OpenFlags.READ)
        self.fds[fd] = (args["path"], False)
        try:
            return self.op_readAll({"fd": fd})
        finally:
            self.op_close({"fd": fd})

    def op_readdir(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        names = sorted(_run(self.view.listdir, args["path"]))
        return [{"name": n, "isDir": _run(self.view.stat, posixpath.join(args["path"], n)).is_dir} for n in names]

    def op_mkdir(self, args: dict[str, Any]) -> str | None:
        path = posixpath.normpath(args["path"])
        if not args.get("recursive"):
            _run(self.view.mkdir, path, int(args.get("mode", 0o700)))
            return None
        first = None
        parts = [p for p in path.split("/") if p]
        for i in range(1, len(parts) + 1):
            sub = "/" + "/".join(parts[:i])
            if self.disk.resolve(sub) is None:
                _run(self.view.mkdir, sub, int(args.get("mode", 0o700)))
                first = first or sub
        return first

    def op_link(self, args: dict[str, Any]) -> None:
        _run(self.view.link, args["src"], args["dst"])

    def op_rm(self, args: dict[str, Any]) -> None:
        try:
            _run(self.view.unlink, args["path"])
        except FileNotFoundError:
            if not args.get("force"):
                raise

    def op_realpath(self, args: dict[str, Any]) -> str:
        _run(self.view.stat, args["path"])  # ENOENT like the real call
        return posixpath.normpath(str(args["path"]))

    def op_close(self, args: dict[str, Any]) -> None:
        self.fds.pop(args["fd"], None)
        _run(self.view.close, args["fd"])
