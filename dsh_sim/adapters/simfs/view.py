"""One simulated process's view of the disk: the simulated filesystem-port adapter.

Each process has its own descriptors and holds its own locks.  When the process dies its
view is revoked at once; every later call raises :class:`FidelityError` and is recorded on
the disk, because trio runs ``finally`` blocks while unwinding a crash and a write from one
of them would persist data a real crash loses.

Every operation is a trio checkpoint (as real I/O off the event loop is), then passes the
gate — the hook that announces the named point ``fs.<op>`` and may return a fault — and
only then takes effect.  Errors are the same ``OSError`` subclasses and ``errno`` values the
real OS gives; ``tests/test_simfs_conformance.py`` checks that against a real directory.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import attrs
from trio.lowlevel import checkpoint

from dsh_sim.adapters.simfs.disk import (
    DirNode,
    Disk,
    FidelityError,
    FileNode,
    SymlinkNode,
    TruncateOp,
    WriteOp,
    apply_op,
)
from dsh_sim.adapters.simfs.paths import existing, lookup, os_error, realpath
from runtime.ports.fs import OpenFlags, StatResult, write_fsync_in_steps


def _require_mode(mode: object) -> None:
    """A mode that is not an int fails as ``os.open``/``os.mkdir`` fail, before anything happens."""
    if type(mode) is not int:
        raise TypeError(f"'{type(mode).__name__}' object cannot be interpreted as an integer")


@attrs.frozen
class FsFault:
    """What the gate asks the view to do instead of (or around) the operation."""

    kind: str  # "error" | "fsync_fail" | "replaced" | "removed" (another process swapped or removed the file at the path first) | "contended" (another process holds the lock)
    errno: int = errno.EIO
    drop_dirty: bool = False  # fsync_fail: pages marked clean, data never made durable


class FsGate(Protocol):
    async def before_fs(self, view: ProcessView, op: str, path: str, details: dict[str, Any]) -> FsFault | None: ...

    def after_fs(self, view: ProcessView, op: str, path: str, outcome: str) -> None: ...


class NoGate:
    async def before_fs(self, view: ProcessView, op: str, path: str, details: dict[str, Any]) -> FsFault | None:
        return None

    def after_fs(self, view: ProcessView, op: str, path: str, outcome: str) -> None:
        return None


_err = os_error


@attrs.define
class _Open:
    ino: int
    path: str
    flags: OpenFlags
    pos: int = 0


class ProcessView:
    def __init__(
        self,
        disk: Disk,
        pid: int,
        gate: FsGate | None = None,
        now_ns: Callable[[], int] = lambda: 0,
        *,
        checkpoint: Callable[[], Awaitable[None]] = checkpoint,
    ) -> None:
        """``checkpoint``: the yield every operation makes (trio's, inside the simulator; a
        server that answers one operation at a time from outside any event loop passes a no-op)."""
        self.disk = disk
        self.pid = pid
        self._checkpoint = checkpoint
        self.gate: FsGate = gate or NoGate()
        self._now_ns = now_ns
        self._fds: dict[int, _Open] = {}
        self.alive = True

    def open_paths(self) -> list[str]:
        """The paths this process still holds open (a clean stop should leave none)."""
        return sorted(entry.path for entry in self._fds.values())

    def revoke(self) -> None:
        """The process died: drop its descriptors, release its locks, refuse everything after."""
        self.alive = False
        self._fds.clear()
        self.disk.release_locks(self.pid)

    # -- plumbing --------------------------------------------------------------------------

    def _refuse(self, op: str, path: str) -> FidelityError:
        text = f"process {self.pid} is dead but called fs.{op}({path!r})"
        self.disk.fidelity_errors.append(text)
        return FidelityError(text)

    async def _enter(self, op: str, path: str, **details: Any) -> FsFault | None:
        if not self.alive:
            raise self._refuse(op, path)
        await self._checkpoint()
        if not self.alive:
            raise self._refuse(op, path)
        fault = await self.gate.before_fs(self, op, path, details)
        if not self.alive:
            raise self._refuse(op, path)
        return fault

    def _done(self, op: str, path: str, outcome: str = "ok") -> None:
        self.gate.after_fs(self, op, path, outcome)

    def _fd(self, fd: int) -> _Open:
        entry = self._fds.get(fd)
        if entry is None:
            raise _err(errno.EBADF)
        return entry

    def _set_entries(self, dir_ino: int, name: str, ino: int | None) -> None:
        node = self.disk.dir(dir_ino)
        entries = [(n, i) for n, i in node.entries if n != name]
        if ino is not None:
            entries.append((name, ino))
        stamp = self.disk.stamp(self._now_ns())
        self.disk.nodes[dir_ino] = DirNode(node.ino, entries=tuple(sorted(entries)), durable=node.durable, mtime_ns=stamp, ctime_ns=stamp)

    def _apply(self, ino: int, op: WriteOp | TruncateOp) -> None:
        node = self.disk.file(ino)
        stamp = self.disk.stamp(self._now_ns())
        # the node built directly, every field named (what attrs.evolve builds, without its generic copy)
        self.disk.nodes[ino] = FileNode(
            node.ino,
            volatile=apply_op(node.volatile, op),
            durable=node.durable,
            pending=node.pending + (op,),
            mtime_ns=stamp,
            ctime_ns=stamp,
        )

    def _stat(self, ino: int) -> StatResult:
        node = self.disk.nodes[ino]
        dev = self.disk.dev
        if not isinstance(node, DirNode):
            links = 0  # the names of this inode in every directory
            for other in self.disk.nodes.values():
                if isinstance(other, DirNode):
                    for _, child in other.entries:
                        if child == ino:
                            links += 1
            if isinstance(node, SymlinkNode):
                return StatResult(dev, ino, len(node.target.encode()), node.mtime_ns, node.ctime_ns, False, "symlink", links)
            return StatResult(dev, ino, len(node.volatile), node.mtime_ns, node.ctime_ns, False, "file", links)
        subdirs = sum(1 for _, child in node.entries if isinstance(self.disk.nodes[child], DirNode))
        return StatResult(dev, ino, 4096, node.mtime_ns, node.ctime_ns, True, "dir", 2 + subdirs)

    # -- the port --------------------------------------------------------------------------

    async def open(self, path: str, flags: OpenFlags, mode: int = 0o600) -> int:
        _require_mode(mode)
        fault = await self._enter("open", path, flags=str(flags))
        if fault is not None:
            self._done("open", path, f"errno:{fault.errno}")
            raise _err(fault.errno, path)
        exclusive = OpenFlags.CREATE in flags and OpenFlags.EXCLUSIVE in flags
        found = lookup(self.disk, path, follow=not exclusive and OpenFlags.NOFOLLOW not in flags)
        parent, name, ino = found.parent, found.name, found.ino
        writing = OpenFlags.WRITE in flags
        if ino is not None:
            if exclusive:
                raise _err(errno.EEXIST, path)
            if isinstance(self.disk.nodes[ino], SymlinkNode):  # only reached with NOFOLLOW
                raise _err(errno.ELOOP, path)
            if isinstance(self.disk.nodes[ino], DirNode) and writing:
                raise _err(errno.EISDIR, path)
            if writing and OpenFlags.TRUNCATE in flags and self.disk.file(ino).volatile:
                self._apply(ino, TruncateOp(0))
        else:
            if OpenFlags.CREATE not in flags:
                raise _err(errno.ENOENT, path)
            ino = self.disk.new_ino()
            stamp = self.disk.stamp(self._now_ns())
            self.disk.nodes[ino] = FileNode(ino, mtime_ns=stamp, ctime_ns=stamp)
            self._set_entries(parent, name, ino)
        fd = 3  # like the OS: the lowest free descriptor number (so a stale fd may alias a new file)
        while fd in self._fds:
            fd += 1
        self._fds[fd] = _Open(ino, path, flags)
        self._done("open", path, f"fd:{ino}")
        return fd

    async def read(self, fd: int, size: int) -> bytes:
        entry = self._fd(fd) if self.alive else None
        fault = await self._enter("read", entry.path if entry else "?")
        entry = self._fd(fd)
        if fault is not None:
            raise _err(fault.errno)
        if OpenFlags.READ not in entry.flags and OpenFlags.WRITE in entry.flags:
            raise _err(errno.EBADF)
        node = self.disk.nodes[entry.ino]
        if isinstance(node, DirNode):
            raise _err(errno.EISDIR)
        assert isinstance(node, FileNode)  # open never hands out a descriptor of a link
        data = node.volatile[entry.pos : entry.pos + size]
        entry.pos += len(data)
        return data

    async def write(self, fd: int, data: bytes) -> int:
        entry = self._fd(fd) if self.alive else None
        path = entry.path if entry else "?"
        fault = await self._enter("write", path, size=len(data))
        entry = self._fd(fd)
        if fault is not None:
            self._done("write", path, f"errno:{fault.errno}")
            raise _err(fault.errno, path)
        if OpenFlags.WRITE not in entry.flags:
            raise _err(errno.EBADF)
        node = self.disk.file(entry.ino)
        offset = len(node.volatile) if OpenFlags.APPEND in entry.flags else entry.pos
        self._apply(entry.ino, WriteOp(offset, bytes(data)))
        entry.pos = offset + len(data)
        self._done("write", path, f"{offset}+{len(data)}")
        return len(data)

    async def fsync(self, fd: int) -> None:
        entry = self._fd(fd) if self.alive else None
        path = entry.path if entry else "?"
        fault = await self._enter("fsync", path)
        entry = self._fd(fd)
        node = self.disk.nodes[entry.ino]
        if not isinstance(node, FileNode):
            return
        if fault is not None:
            if fault.kind == "fsync_fail" and fault.drop_dirty:
                self.disk.nodes[entry.ino] = attrs.evolve(node, pending=())
            self._done("fsync", path, f"errno:{fault.errno}" + (":dropped" if fault.drop_dirty else ""))
            raise _err(fault.errno, path)
        durable = node.durable
        for op in node.pending:
            durable = apply_op(durable, op)
        self.disk.nodes[entry.ino] = FileNode(
            node.ino, volatile=node.volatile, durable=durable, pending=(), mtime_ns=node.mtime_ns, ctime_ns=node.ctime_ns
        )
        self._done("fsync", path, f"durable:{len(durable)}")

    async def write_fsync(self, fd: int, data: bytes, rollback_size: int | None = None) -> None:
        """Write then fsync (then the rollback), each its own named point, as the port defines."""
        await write_fsync_in_steps(self, fd, data, rollback_size)

    async def fsync_dir(self, path: str) -> None:
        fault = await self._enter("fsync_dir", path)
        if fault is not None:
            self._done("fsync_dir", path, f"errno:{fault.errno}")
            raise _err(fault.errno, path)
        ino = existing(self.disk, path, follow=True)
        node = self.disk.nodes[ino]
        if not isinstance(node, DirNode):
            raise _err(errno.ENOTDIR, path)
        self.disk.nodes[ino] = DirNode(node.ino, entries=node.entries, durable=node.entries, mtime_ns=node.mtime_ns, ctime_ns=node.ctime_ns)
        self._done("fsync_dir", path)

    async def link(self, src: str, dst: str) -> None:
        fault = await self._enter("link", dst, src=src)
        if fault is not None:
            self._done("link", dst, f"errno:{fault.errno}")
            raise _err(fault.errno, dst)
        ino = existing(self.disk, src, follow=False)  # link(2) on Linux links a symbolic link itself
        target = lookup(self.disk, dst, follow=False)
        parent, name = target.parent, target.name
        if target.ino is not None:  # Linux checks the target first
            raise _err(errno.EEXIST, dst)
        if isinstance(self.disk.nodes[ino], DirNode):
            raise _err(errno.EPERM, src)
        self._set_entries(parent, name, ino)
        self._done("link", dst)

    async def unlink(self, path: str) -> None:
        fault = await self._enter("unlink", path)
        if fault is not None:
            self._done("unlink", path, f"errno:{fault.errno}")
            raise _err(fault.errno, path)
        found = lookup(self.disk, path, follow=False)  # removes a symbolic link, not its target
        if found.ino is None:
            raise _err(errno.ENOENT, path)
        if isinstance(self.disk.nodes[found.ino], DirNode):
            raise _err(errno.EISDIR, path)
        self._set_entries(found.parent, found.name, None)
        self._done("unlink", path)

    async def truncate(self, path: str, size: int) -> None:
        fault = await self._enter("truncate", path, size=size)
        if fault is not None:
            self._done("truncate", path, f"errno:{fault.errno}")
            raise _err(fault.errno, path)
        ino = existing(self.disk, path, follow=True)
        if isinstance(self.disk.nodes[ino], DirNode):
            raise _err(errno.EISDIR, path)
        self._apply(ino, TruncateOp(size))
        self._done("truncate", path, str(size))

    async def ftruncate(self, fd: int, size: int) -> None:
        entry = self._fd(fd) if self.alive else None
        path = entry.path if entry else "?"
        fault = await self._enter("ftruncate", path, size=size)
        entry = self._fd(fd)
        if fault is not None:
            self._done("ftruncate", path, f"errno:{fault.errno}")
            raise _err(fault.errno, path)
        if OpenFlags.WRITE not in entry.flags:
            raise _err(errno.EINVAL)
        self._apply(entry.ino, TruncateOp(size))
        self._done("ftruncate", path, str(size))

    async def stat(self, path: str) -> StatResult:
        await self._enter("stat", path)
        return self._stat(existing(self.disk, path, follow=True))

    async def lstat(self, path: str) -> StatResult:
        """Announced as ``fs.stat`` (the same kind of question; no fault targets it)."""
        await self._enter("stat", path)
        return self._stat(existing(self.disk, path, follow=False))

    async def fstat(self, fd: int) -> StatResult:
        entry = self._fd(fd) if self.alive else None
        await self._enter("fstat", entry.path if entry else "?")
        return self._stat(self._fd(fd).ino)

    async def listdir(self, path: str) -> list[str]:
        await self._enter("listdir", path)
        node = self.disk.nodes[existing(self.disk, path, follow=True)]
        if not isinstance(node, DirNode):
            raise _err(errno.ENOTDIR, path)
        return [name for name, _ in node.entries]

    async def mkdir(self, path: str, mode: int = 0o700) -> None:
        _require_mode(mode)
        fault = await self._enter("mkdir", path)
        if fault is not None:
            self._done("mkdir", path, f"errno:{fault.errno}")
            raise _err(fault.errno, path)
        found = lookup(self.disk, path, follow=False)
        if found.ino is not None:
            raise _err(errno.EEXIST, path)
        ino = self.disk.new_ino()
        stamp = self.disk.stamp(self._now_ns())
        self.disk.nodes[ino] = DirNode(ino, mtime_ns=stamp, ctime_ns=stamp)
        self._set_entries(found.parent, found.name, ino)
        self._done("mkdir", path)

    async def symlink(self, target: str, path: str) -> None:
        """Create a symbolic link (not a port operation: the runtime never makes one).

        What another program sharing the disk does — a user, an attacker — so that tests can
        plant links where the runtime will look.  Announced as ``fs.link`` (a new name).
        """
        fault = await self._enter("link", path, target=target)
        if fault is not None:
            self._done("link", path, f"errno:{fault.errno}")
            raise _err(fault.errno, path)
        found = lookup(self.disk, path, follow=False)
        if found.ino is not None:
            raise _err(errno.EEXIST, path)
        ino = self.disk.new_ino()
        stamp = self.disk.stamp(self._now_ns())
        self.disk.nodes[ino] = SymlinkNode(ino, target, mtime_ns=stamp, ctime_ns=stamp)
        self._set_entries(found.parent, found.name, ino)
        self._done("link", path, "symlink")

    async def realpath(self, path: str) -> str:
        """``path`` with every symbolic link resolved, as ``os.path.realpath`` does it."""
        await self._enter("stat", path)
        return realpath(self.disk, path)

    async def flock(self, fd: int) -> None:
        entry = self._fd(fd) if self.alive else None
        path = entry.path if entry else "?"
        fault = await self._enter("flock", path)
        entry = self._fd(fd)
        if fault is not None and fault.kind in ("replaced", "removed"):
            self._replace_behind(path, recreate=fault.kind == "replaced")
        elif fault is not None and fault.kind != "contended":
            self._done("flock", path, f"errno:{fault.errno}")
            raise _err(fault.errno, path)
        holder = self.disk.locks.get(entry.ino)
        if (holder is not None and holder != (self.pid, fd)) or (fault is not None and fault.kind == "contended"):
            self._done("flock", path, "busy")
            raise BlockingIOError(errno.EWOULDBLOCK, os.strerror(errno.EWOULDBLOCK))
        self.disk.locks[entry.ino] = (self.pid, fd)
        self._done("flock", path)

    def _replace_behind(self, path: str, *, recreate: bool) -> None:
        """Another process removed the file at ``path`` (a stale-lock cleaner) and, with
        ``recreate``, created an empty one in its place: this descriptor now refers to a file
        no name reaches."""
        found = lookup(self.disk, path, follow=False)
        if found.ino is None or not isinstance(self.disk.nodes[found.ino], FileNode):
            return
        ino: int | None = None
        if recreate:
            ino = self.disk.new_ino()
            stamp = self.disk.stamp(self._now_ns())
            self.disk.nodes[ino] = FileNode(ino, mtime_ns=stamp, ctime_ns=stamp)
        self._set_entries(found.parent, found.name, ino)
        self._done("flock", path, "replaced" if recreate else "removed")

    async def close(self, fd: int) -> None:
        """Like the real adapter's close off the event loop (``run_in_thread``, which keeps
        ``trio.to_thread.run_sync``'s rules): a cancelled caller gets ``Cancelled`` *before*
        anything happens — the descriptor stays open, which is why the runtime shields its
        closes — and a close that started finishes."""
        if not self.alive:
            raise self._refuse("close", str(fd))
        await self._checkpoint()
        if not self.alive:
            raise self._refuse("close", str(fd))
        entry = self._fd(fd)
        if self.disk.locks.get(entry.ino) == (self.pid, fd):
            del self.disk.locks[entry.ino]
        del self._fds[fd]
