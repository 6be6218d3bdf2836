"""The post-crash states a power cut may leave, enumerable and applicable.

Prefix model (appends land in order): for each file with unsynced operations, keep the
first ``k`` operations, and optionally a torn prefix of the next write; for each directory
entry whose name is not yet durable, keep the new binding or the old one.  Reorder model:
any subset of a file's unsynced operations, applied in order (ALICE-style), untorn.

Which torn lengths are worth visiting is a question about the file's *format*, so callers
pass ``cut_points``; by default every byte length is a state.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from dsh_sim.adapters.simfs.disk import Disk, FileNode, WriteOp, apply_op

CutPoints = Callable[[WriteOp], Sequence[int]]  # torn lengths of one unsynced write worth a state


def _indexes(name: str, value: tuple[int, ...] | None) -> None:
    if value is not None and any(i < 0 for i in value):
        raise ValueError(f"'{name}' must hold operation indexes >= 0: {list(value)}")


@attrs.frozen
class TornCut:
    ino: int = attrs.field(validator=attrs.validators.ge(1))
    keep_ops: int = attrs.field(default=0, validator=attrs.validators.ge(0))  # prefix model: pending ops applied in full
    # bytes of the next op (a write) that also landed
    torn_bytes: int | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.ge(0)))
    # reorder model: indexes of the ops that landed
    subset: tuple[int, ...] | None = attrs.field(default=None, validator=lambda _, a, v: _indexes(a.name, v))

    def describe(self) -> str:
        if self.subset is not None:
            return f"ino{self.ino}:ops{list(self.subset)}"
        torn = f"+{self.torn_bytes}B" if self.torn_bytes is not None else ""
        return f"ino{self.ino}:keep{self.keep_ops}{torn}"


@attrs.frozen
class PowerCut:
    files: tuple[TornCut, ...] = ()
    entries: tuple[tuple[int, str, bool], ...] = ()  # (dir ino, name, keep the new binding)

    def describe(self) -> str:
        parts = [f.describe() for f in self.files]
        parts += [f"{'keep' if keep else 'drop'}:{name}" for _, name, keep in self.entries]
        return ",".join(parts) or "clean"

    def to_json(self) -> dict[str, Any]:
        return {
            "files": [attrs.asdict(f) for f in self.files],
            "entries": [[d, n, k] for d, n, k in self.entries],
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> PowerCut:
        files = tuple(
            TornCut(f["ino"], f.get("keep_ops", 0), f.get("torn_bytes"), tuple(f["subset"]) if f.get("subset") is not None else None)
            for f in obj.get("files", ())
        )
        return cls(files, tuple((int(d), str(n), bool(k)) for d, n, k in obj.get("entries", ())))


DROP_ALL = PowerCut()


def every_byte(op: WriteOp) -> Sequence[int]:
    return range(1, len(op.data))


def _file_options(node: FileNode, model: str, cut_points: CutPoints) -> list[TornCut]:
    ops = node.pending
    if model == "reorder":
        return [TornCut(node.ino, subset=subset) for n in range(len(ops) + 1) for subset in itertools.combinations(range(len(ops)), n)]
    options: list[TornCut] = []
    for k, op in enumerate(ops):
        options.append(TornCut(node.ino, k))
        if isinstance(op, WriteOp) and len(op.data) > 1:
            for cut in sorted(set(cut_points(op))):
                if 0 < cut < len(op.data):
                    options.append(TornCut(node.ino, k, cut))
    options.append(TornCut(node.ino, len(ops)))
    return options


def _entry_choices(disk: Disk) -> list[tuple[int, str]]:
    return [(d.ino, name) for d in disk.iter_dirs() for name in d.unsynced_names()]


def state_count(disk: Disk, model: str = "prefix", cut_points: CutPoints = every_byte) -> int:
    total: int = 2 ** len(_entry_choices(disk))
    for node in disk.iter_files():
        if node.pending:
            total *= len(_file_options(node, model, cut_points))
    return total


def crash_states(disk: Disk, model: str = "prefix", cut_points: CutPoints = every_byte) -> Iterable[PowerCut]:
    """Every post-crash state the model allows for the disk as it is now."""
    per_file = [_file_options(node, model, cut_points) for node in disk.iter_files() if node.pending]
    names = _entry_choices(disk)
    for files in itertools.product(*per_file):
        for keeps in itertools.product((False, True), repeat=len(names)):
            yield PowerCut(tuple(files), tuple((d, n, k) for (d, n), k in zip(names, keeps)))


def random_state(disk: Disk, rng: random.Random, model: str = "prefix") -> PowerCut:
    """One allowed post-crash state drawn from ``rng`` (byte-granular tears)."""
    files = []
    for node in disk.iter_files():
        if not node.pending:
            continue
        if model == "reorder":
            files.append(TornCut(node.ino, subset=tuple(i for i in range(len(node.pending)) if rng.random() < 0.5)))
            continue
        k = rng.randint(0, len(node.pending))
        torn = None
        next_op = node.pending[k] if k < len(node.pending) else None
        if isinstance(next_op, WriteOp) and len(next_op.data) > 1 and rng.random() < 0.7:
            torn = rng.randint(1, len(next_op.data) - 1)
        files.append(TornCut(node.ino, k, torn))
    entries = tuple((d, n, rng.random() < 0.5) for d, n in _entry_choices(disk))
    return PowerCut(tuple(files), entries)


def keep_all(disk: Disk) -> PowerCut:
    """Every unsynced operation and directory entry landed (the luckiest power cut)."""
    files = tuple(TornCut(node.ino, len(node.pending)) for node in disk.iter_files() if node.pending)
    return PowerCut(files, tuple((d, n, True) for d, n in _entry_choices(disk)))


def torn_last_write(disk: Disk, ino: int | None, fraction: float) -> PowerCut:
    """Everything landed except the last unsynced write of file ``ino``, of which only the
    first ``fraction`` did (at least one byte short of the whole write)."""
    cut = keep_all(disk)
    files = list(cut.files)
    for index, choice in enumerate(files):
        node = disk.file(choice.ino)
        writes = [i for i, op in enumerate(node.pending) if isinstance(op, WriteOp)]
        if choice.ino == ino and writes:
            last = writes[-1]
            op = node.pending[last]
            assert isinstance(op, WriteOp)
            size = len(op.data)
            files[index] = TornCut(choice.ino, last, max(0, min(size - 1, int(size * fraction))))
    return PowerCut(tuple(files), cut.entries)


def misfit(disk: Disk, cut: PowerCut) -> str | None:
    """Why ``cut`` is not a post-crash state of the disk as it is now (``None`` when it is).

    A cut recorded in a scenario names unsynced operations and directory entries of the state
    it was recorded in; a hand-written one, or one replayed after a change of steps or faults,
    may name others.  Applying it anyway would invent a state no crash can leave.
    """
    names = {(d, n) for d, n in _entry_choices(disk)}
    for choice in cut.files:
        node = disk.nodes.get(choice.ino)
        if not isinstance(node, FileNode):
            return f"ino {choice.ino} is not a file"
        ops = node.pending
        if not ops:
            return f"file ino {choice.ino} has no unsynced operation"
        if choice.subset is not None:
            if list(choice.subset) != sorted(set(choice.subset)) or any(not 0 <= i < len(ops) for i in choice.subset):
                return (
                    f"file ino {choice.ino}: subset {list(choice.subset)} is not increasing indexes of its {len(ops)} unsynced operation(s)"
                )
            continue
        if not 0 <= choice.keep_ops <= len(ops):
            return f"file ino {choice.ino} has {len(ops)} unsynced operation(s), the cut keeps {choice.keep_ops}"
        if choice.torn_bytes is not None:
            if choice.keep_ops == len(ops):
                return f"file ino {choice.ino}: no unsynced operation after the {choice.keep_ops} kept to tear"
            op = ops[choice.keep_ops]
            if not isinstance(op, WriteOp):
                return f"file ino {choice.ino}: unsynced operation {choice.keep_ops} is a truncation, not a write to tear"
            if not 0 < choice.torn_bytes < len(op.data):
                return f"file ino {choice.ino}: a tear keeps 1 to {len(op.data) - 1} bytes of its {len(op.data)}-byte write, not {choice.torn_bytes}"
    for d, name, _ in cut.entries:
        if (d, name) not in names:
            return f"directory ino {d} has no unsynced entry {name!r}"
    return None


def apply_power_cut(disk: Disk, cut: PowerCut) -> None:
    """Replace the disk's state by the post-crash state ``cut`` (unlisted: unsynced lost)."""
    chosen = {f.ino: f for f in cut.files}
    for node in list(disk.iter_files()):
        content = node.durable
        choice = chosen.get(node.ino)
        if choice is not None and node.pending:
            if choice.subset is not None:
                for index in choice.subset:
                    content = apply_op(content, node.pending[index])
            else:
                for op in node.pending[: choice.keep_ops]:
                    content = apply_op(content, op)
                if choice.torn_bytes is not None and choice.keep_ops < len(node.pending):
                    op = node.pending[choice.keep_ops]
                    assert isinstance(op, WriteOp)
                    content = apply_op(content, WriteOp(op.offset, op.data[: choice.torn_bytes]))
        elif not node.pending and node.volatile == content:
            continue  # synced: the node is what it would be replaced by (it keeps its identity,
            # so digests remembered by identity, explore's, still know it)
        disk.nodes[node.ino] = attrs.evolve(node, volatile=content, durable=content, pending=())
    keep = {(d, n): k for d, n, k in cut.entries}
    for directory in list(disk.iter_dirs()):
        volatile, durable = dict(directory.entries), dict(directory.durable)
        result = dict(durable)
        for name in directory.unsynced_names():
            if keep.get((directory.ino, name), False):
                if name in volatile:
                    result[name] = volatile[name]
                else:
                    result.pop(name, None)
        entries = tuple(sorted(result.items()))
        if entries == directory.entries == directory.durable:
            continue  # synced: the node is what it would be replaced by (see above)
        disk.nodes[directory.ino] = attrs.evolve(directory, entries=entries, durable=entries)
    disk.locks.clear()
