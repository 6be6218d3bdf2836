"""The simulated storage: what survives a process, and what survives power loss.

Per file inode: ``volatile`` (what reads see — the page cache) and ``durable`` (what a power
cut keeps), plus ``pending``: the writes and truncates since the last successful fsync, in
order.  Per directory inode: ``entries`` (volatile names) and ``durable`` names; a create,
link or unlink is durable only after an fsync of the directory.

A failed fsync can drop its pending operations without applying them (Linux marks the pages
clean), so ``durable + pending`` need not equal ``volatile`` — the fsyncgate behaviour.

:class:`DiskImage` is an immutable snapshot (bytes are shared, not copied), cheap enough to
take at every named point of a recorded run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import attrs

ROOT_INO = 1


class FidelityError(BaseException):
    """A dead simulated process touched the filesystem.

    A ``BaseException``, like the crash itself: cleanup code of a dead process must not be
    able to catch it with ``except Exception`` and carry on doing things.
    """


@attrs.frozen
class WriteOp:
    offset: int
    data: bytes


@attrs.frozen
class TruncateOp:
    size: int


PendingOp = WriteOp | TruncateOp


def apply_op(content: bytes, op: PendingOp) -> bytes:
    if isinstance(op, TruncateOp):
        return content[: op.size] if op.size <= len(content) else content + b"\0" * (op.size - len(content))
    if op.offset > len(content):
        content = content + b"\0" * (op.offset - len(content))
    return content[: op.offset] + op.data + content[op.offset + len(op.data) :]


@attrs.frozen
class FileNode:
    ino: int
    volatile: bytes = b""
    durable: bytes = b""
    pending: tuple[PendingOp, ...] = ()
    mtime_ns: int = 0
    ctime_ns: int = 0


@attrs.frozen
class DirNode:
    ino: int
    entries: tuple[tuple[str, int], ...] = ()  # sorted (name, ino)
    durable: tuple[tuple[str, int], ...] = ()
    mtime_ns: int = 0
    ctime_ns: int = 0

    def lookup(self, name: str) -> int | None:
        for entry_name, ino in self.entries:
            if entry_name == name:
                return ino
        return None

    def durable_lookup(self, name: str) -> int | None:
        for entry_name, ino in self.durable:
            if entry_name == name:
                return ino
        return None

    def unsynced_names(self) -> list[str]:
        """Names whose volatile binding differs from the durable one (sorted)."""
        if self.entries == self.durable:
            return []  # the same bindings (most directories after their fsync)
        vol, dur = dict(self.entries), dict(self.durable)
        return sorted(n for n in set(vol) | set(dur) if vol.get(n) != dur.get(n))


@attrs.frozen
class SymlinkNode:
    """A symbolic link: a name for a path, resolved at each lookup (as Linux does).

    Its target never changes after creation; a crash model has nothing to tear in it, so it
    is durable as soon as its directory entry is.
    """

    ino: int
    target: str
    mtime_ns: int = 0
    ctime_ns: int = 0


Node = FileNode | DirNode | SymlinkNode


@attrs.frozen
class DiskImage:
    """An immutable state of the whole disk."""

    nodes: tuple[tuple[int, Node], ...]
    next_ino: int

    def node_map(self) -> dict[int, Node]:
        return dict(self.nodes)


_EMPTY_ROOT = DirNode(ROOT_INO)  # a new disk's root (nodes are immutable: one serves every disk)


class Disk:
    """Mutable storage shared by every process of one simulation."""

    def __init__(self, dev: int = 0x5D5) -> None:
        self.dev = dev
        self.nodes: dict[int, Node] = {ROOT_INO: _EMPTY_ROOT}
        self.next_ino = ROOT_INO + 1
        self.locks: dict[int, tuple[int, int]] = {}  # ino -> (pid, fd)
        self.fidelity_errors: list[str] = []
        self.ops = 0  # every mutation counts; mtime/ctime derive from it (strictly increasing)

    # -- snapshots -------------------------------------------------------------------------

    def image(self) -> DiskImage:
        return DiskImage(tuple(sorted(self.nodes.items())), self.next_ino)

    @classmethod
    def from_image(cls, image: DiskImage) -> Disk:
        disk = cls()
        disk.nodes = image.node_map()
        disk.next_ino = image.next_ino
        return disk

    # -- helpers used by views and the crash model ----------------------------------------

    def new_ino(self) -> int:
        ino = self.next_ino
        self.next_ino += 1
        return ino

    def stamp(self, now_ns: int) -> int:
        """A modification time: virtual time, nudged so every mutation is distinguishable."""
        self.ops += 1
        return now_ns + self.ops

    def file(self, ino: int) -> FileNode:
        node = self.nodes[ino]
        assert isinstance(node, FileNode)
        return node

    def dir(self, ino: int) -> DirNode:
        node = self.nodes[ino]
        assert isinstance(node, DirNode)
        return node

    def iter_files(self) -> Iterator[FileNode]:
        for ino in sorted(self.nodes):
            node = self.nodes[ino]
            if isinstance(node, FileNode):
                yield node

    def iter_dirs(self) -> Iterator[DirNode]:
        for ino in sorted(self.nodes):
            node = self.nodes[ino]
            if isinstance(node, DirNode):
                yield node

    def path_of(self, ino: int, *, durable: bool = False) -> str | None:
        """A path naming ``ino`` through volatile (or durable) entries, for reports."""
        parents: dict[int, tuple[int, str]] = {}
        for d in self.iter_dirs():
            for name, child in d.durable if durable else d.entries:
                parents.setdefault(child, (d.ino, name))
        parts: list[str] = []
        cur = ino
        while cur != ROOT_INO:
            if cur not in parents:
                return None
            cur, name = parents[cur][0], parents[cur][1]
            parts.append(name)
        return "/" + "/".join(reversed(parts))

    def resolve(self, path: str, *, durable: bool = False) -> int | None:
        """Inode at ``path`` (no error mapping; for harness inspection)."""
        nodes = self.nodes
        ino = ROOT_INO
        for part in path.split("/"):
            if not part:
                continue
            node = nodes.get(ino)
            if not isinstance(node, DirNode):
                return None
            for name, child in node.durable if durable else node.entries:  # DirNode.lookup, inline
                if name == part:
                    ino = child
                    break
            else:
                return None
        return ino

    def read_path(self, path: str) -> bytes | None:
        ino = self.resolve(path)
        if ino is None:
            return None
        node = self.nodes[ino]
        return node.volatile if isinstance(node, FileNode) else None

    def release_locks(self, pid: int) -> None:
        for ino in [i for i, (owner, _) in self.locks.items() if owner == pid]:
            del self.locks[ino]

    def mkdirs_durable(self, path: str) -> None:
        """Harness setup: create a directory chain that is durable from the start."""
        ino = ROOT_INO
        for part in [p for p in path.split("/") if p]:
            parent = self.dir(ino)
            child = parent.lookup(part)
            if child is None:
                child = self.new_ino()
                self.nodes[child] = DirNode(child)
                entries = tuple(sorted(parent.entries + ((part, child),)))
                self.nodes[ino] = attrs.evolve(parent, entries=entries, durable=tuple(sorted(parent.durable + ((part, child),))))
            ino = child

    def append_durable(self, path: str, data: bytes, now_ns: int) -> None:
        """Another process (not simulated) appends ``data`` to a file and fsyncs it: a writer the
        simulated processes share the disk with, such as an older runtime still logging to a
        historical generation.  A file a simulated process has unsynced changes on is refused
        (``ValueError``): two writers of one file are not what this models."""
        ino = self.resolve(path)
        if ino is None:
            raise FileNotFoundError(path)
        node = self.file(ino)
        if node.pending or node.volatile != node.durable:
            raise ValueError(f"{path} has unsynced changes of a simulated process")
        stamp = self.stamp(now_ns)
        self.nodes[ino] = attrs.evolve(node, volatile=node.volatile + data, durable=node.durable + data, mtime_ns=stamp, ctime_ns=stamp)

    def symlink_durable(self, path: str, target: str) -> None:
        """Another program plants a symbolic link at ``path`` (parents made as needed), durable
        from the start; refuses to replace an existing name."""
        self._place_durable(path, lambda ino, stamp: SymlinkNode(ino, target, mtime_ns=stamp, ctime_ns=stamp))

    def _place_durable(self, path: str, make: Callable[[int, int], Node]) -> int:
        """A new node at ``path`` whose directory entry is durable from the start (parents made
        as needed); refuses to replace an existing name."""
        parent, name = path.rstrip("/").rsplit("/", 1)
        self.mkdirs_durable(parent)
        dir_ino = self.resolve(parent)
        assert dir_ino is not None
        if self.dir(dir_ino).lookup(name) is not None:
            raise FileExistsError(path)
        ino = self.new_ino()
        self.nodes[ino] = make(ino, self.stamp(0))
        self._enter_durable(dir_ino, name, ino)
        return ino

    def _enter_durable(self, dir_ino: int, name: str, ino: int) -> None:
        directory = self.dir(dir_ino)
        self.nodes[dir_ino] = attrs.evolve(
            directory,
            entries=tuple(sorted(directory.entries + ((name, ino),))),
            durable=tuple(sorted(directory.durable + ((name, ino),))),
        )

    def _remove_durable(self, dir_ino: int, name: str) -> None:
        directory = self.dir(dir_ino)
        self.nodes[dir_ino] = attrs.evolve(
            directory,
            entries=tuple(e for e in directory.entries if e[0] != name),
            durable=tuple(e for e in directory.durable if e[0] != name),
        )

    def remove_links(self, paths: list[str]) -> int:
        """Another program removes each of ``paths`` that is a symbolic link (durably); returns
        how many it removed.  A path that is anything else, or missing, is left alone."""
        removed = 0
        for path in paths:
            parent, name = path.rstrip("/").rsplit("/", 1)
            dir_ino = self.resolve(parent)
            if dir_ino is None or not isinstance(self.nodes.get(dir_ino), DirNode):
                continue
            directory = self.dir(dir_ino)
            ino = directory.lookup(name)
            if ino is None or not isinstance(self.nodes.get(ino), SymlinkNode):
                continue
            del self.nodes[ino]
            self._remove_durable(dir_ino, name)
            removed += 1
        return removed

    def rename_durable(self, src: str, dst: str) -> None:
        """Another program moves ``src`` to the free name ``dst`` (parents made as needed) and
        syncs both directories: the inode, its bytes and their durability go along."""
        src_parent, src_name = src.rstrip("/").rsplit("/", 1)
        dst_parent, dst_name = dst.rstrip("/").rsplit("/", 1)
        self.mkdirs_durable(dst_parent)
        src_dir, dst_dir = self.resolve(src_parent), self.resolve(dst_parent)
        assert src_dir is not None and dst_dir is not None
        ino = self.dir(src_dir).lookup(src_name)
        if ino is None:
            raise FileNotFoundError(src)
        if self.dir(dst_dir).lookup(dst_name) is not None:
            raise FileExistsError(dst)
        self._remove_durable(src_dir, src_name)
        self._enter_durable(dst_dir, dst_name, ino)

    def is_file(self, ino: int) -> bool:
        return isinstance(self.nodes.get(ino), FileNode)

    def is_dir(self, ino: int) -> bool:
        return isinstance(self.nodes.get(ino), DirNode)

    def link_target(self, path: str) -> str | None:
        """The target of the symbolic link ``path`` names (its final component not followed), or None."""
        ino = self.resolve(path)
        node = self.nodes.get(ino) if ino is not None else None
        return node.target if isinstance(node, SymlinkNode) else None

    def tree(self, path: str) -> tuple[tuple[str, bytes | None], ...]:
        """Every name under ``path`` (not following links), relative, with a file's bytes or
        ``None`` for anything else; ``path`` itself as ``"."``.  Empty when nothing is there."""
        ino = self.resolve(path)
        if ino is None:
            return ()
        out: list[tuple[str, bytes | None]] = []
        pending = [(".", ino)]
        while pending:
            name, at = pending.pop()
            node = self.nodes[at]
            out.append((name, node.volatile if isinstance(node, FileNode) else None))
            if isinstance(node, DirNode):
                pending.extend((f"{name}/{child}", child_ino) for child, child_ino in node.entries)
        return tuple(sorted(out))

    def write_file_durable(self, path: str, data: bytes) -> int:
        """Harness setup: a file whose bytes and directory entry are durable from the start.

        Used to place artifacts a simulated process did not write (a historical log left by
        an older runtime); refuses to replace an existing name.
        """
        return self._place_durable(path, lambda ino, stamp: FileNode(ino, volatile=data, durable=data, mtime_ns=stamp, ctime_ns=stamp))
