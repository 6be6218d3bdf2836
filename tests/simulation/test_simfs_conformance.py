"""SimFS behaves like the real OS: random operation sequences (no crash), same results and errors.

The production adapter over a real temporary directory is the oracle.  Descriptors are
compared symbolically (the k-th successful open), inode numbers by identity (which paths
name the same file), directory sizes and link counts not at all.  Symbolic links (relative
targets, dangling ones, loops, links to directories and out of the root) are planted by the
sequence itself, so ``O_NOFOLLOW``, ``lstat`` and ``realpath`` are compared on them too.
"""

from __future__ import annotations

import os
import posixpath
import tempfile

import pytest
import trio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dsh_sim.adapters.simfs import Disk, ProcessView
from runtime.adapters.os_fs import OsFileSystem
from runtime.ports.fs import OpenFlags as F
from runtime.ports.fs import RollbackError

NAMES = ("a", "b", "d", "d/a", "a/x", "l", "d/l", "l/a")
TARGETS = ("a", "d", "d/a", "nowhere", "..", "l", "d/l", "../d", "d/../b")
FLAG_SETS = (
    F.READ | F.NOFOLLOW,
    F.WRITE | F.CREATE | F.NOFOLLOW,
    F.WRITE | F.CREATE | F.EXCLUSIVE | F.NOFOLLOW,
    F.WRITE | F.APPEND | F.NOFOLLOW,
    F.READ,
    F.WRITE | F.CREATE,
    F.WRITE | F.CREATE | F.EXCLUSIVE,
    F.WRITE | F.APPEND,
    F.READ | F.WRITE,
    F.WRITE | F.CREATE | F.TRUNCATE,
    F.WRITE,
)

ops = st.one_of(
    st.tuples(st.just("open"), st.sampled_from(NAMES + ("",)), st.sampled_from(FLAG_SETS)),
    st.tuples(st.just("write"), st.integers(0, 4), st.binary(min_size=0, max_size=12)),
    st.tuples(st.just("read"), st.integers(0, 4), st.integers(0, 16)),
    st.tuples(st.just("fsync"), st.integers(0, 4)),
    st.tuples(st.just("write_fsync"), st.integers(0, 4), st.binary(min_size=0, max_size=12), st.one_of(st.none(), st.integers(0, 20))),
    st.tuples(st.just("ftruncate"), st.integers(0, 4), st.integers(0, 20)),
    st.tuples(st.just("fstat"), st.integers(0, 4)),
    st.tuples(st.just("flock"), st.integers(0, 4)),
    st.tuples(st.just("close"), st.integers(0, 4)),
    st.tuples(st.just("truncate"), st.sampled_from(NAMES), st.integers(0, 20)),
    st.tuples(st.just("stat"), st.sampled_from(NAMES + ("",))),
    st.tuples(st.just("lstat"), st.sampled_from(NAMES)),
    st.tuples(st.just("realpath"), st.sampled_from(NAMES)),
    st.tuples(st.just("symlink"), st.sampled_from(TARGETS), st.sampled_from(NAMES)),
    st.tuples(st.just("listdir"), st.sampled_from(("", "d", "a", "l"))),
    st.tuples(st.just("mkdir"), st.sampled_from(NAMES)),
    st.tuples(st.just("link"), st.sampled_from(NAMES), st.sampled_from(NAMES)),
    st.tuples(st.just("unlink"), st.sampled_from(NAMES)),
    st.tuples(st.just("fsync_dir"), st.sampled_from(("", "d", "a"))),
)


async def apply(fs, root: str, fds: list, inos: dict, op: tuple) -> object:
    kind = op[0]

    def path(name: str) -> str:
        return f"{root}/{name}" if name else root

    def fd(index: int) -> int:
        return fds[index] if index < len(fds) else 9999  # a descriptor nobody opened

    try:
        if kind == "open":
            handle = await fs.open(path(op[1]), op[2])
            fds.append(handle)
            return ("fd", len(fds) - 1)
        if kind == "write":
            return await fs.write(fd(op[1]), op[2])
        if kind == "write_fsync":
            try:
                return await fs.write_fsync(fd(op[1]), op[2], op[3])
            except RollbackError as err:
                return ("rollback failed", err.original.errno, err.rollback.errno)
        if kind == "read":
            return await fs.read(fd(op[1]), op[2])
        if kind in ("fsync", "close", "flock"):
            return await getattr(fs, kind)(fd(op[1]))
        if kind == "ftruncate":
            return await fs.ftruncate(fd(op[1]), op[2])
        if kind in ("fstat", "stat", "lstat"):
            st_ = await (fs.fstat(fd(op[1])) if kind == "fstat" else getattr(fs, kind)(path(op[1])))
            ident = inos.setdefault(st_.ino, len(inos))
            return ("stat", ident, st_.is_dir, st_.kind, None if st_.is_dir else st_.size, None if st_.is_dir else st_.nlink)
        if kind == "realpath":
            return posixpath.relpath(await fs.realpath(path(op[1])), root)
        if kind == "symlink":
            if isinstance(fs, OsFileSystem):
                return os.symlink(op[1], path(op[2]))
            return await fs.symlink(op[1], path(op[2]))
        if kind == "truncate":
            return await fs.truncate(path(op[1]), op[2])
        if kind == "listdir":
            return await fs.listdir(path(op[1]))
        if kind == "mkdir":
            return await fs.mkdir(path(op[1]))
        if kind == "link":
            return await fs.link(path(op[1]), path(op[2]))
        if kind == "unlink":
            return await fs.unlink(path(op[1]))
        if kind == "fsync_dir":
            return await fs.fsync_dir(path(op[1]))
    except OSError as err:
        return ("errno", err.errno)
    raise AssertionError(kind)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(ops, min_size=1, max_size=25))
@example([("open", "a", F.WRITE | F.CREATE), ("close", 0), ("open", "b", F.WRITE | F.CREATE), ("write", 0, b"x"), ("stat", "b")])
@example(
    [
        ("symlink", "a", "l"),
        ("open", "l", F.WRITE | F.CREATE | F.NOFOLLOW),
        ("open", "l", F.WRITE | F.CREATE),
        ("lstat", "l"),
        ("stat", "a"),
    ]
)
@example(
    [("mkdir", "d"), ("symlink", "d", "l"), ("open", "l/a", F.WRITE | F.CREATE), ("stat", "d/a"), ("realpath", "l/a"), ("unlink", "l")]
)
@example([("symlink", "l", "l"), ("open", "l", F.READ), ("realpath", "l"), ("symlink", "..", "d/l"), ("mkdir", "d")])
@example([("open", "a", F.WRITE | F.CREATE), ("link", "a", "b"), ("stat", "a"), ("symlink", "b", "l"), ("link", "l", "d"), ("lstat", "d")])
def test_simfs_matches_the_real_os(sequence):
    with tempfile.TemporaryDirectory() as real_top:
        # the root one level down, like /sim/root: a link to ".." sees an empty sibling set
        real_root = os.path.join(os.path.realpath(real_top), "root")
        os.mkdir(real_root)
        disk = Disk()
        disk.mkdirs_durable("/sim/root")
        sim = ProcessView(disk, 1)
        real = OsFileSystem()

        async def main():
            state_real: tuple[list, dict] = ([], {})
            state_sim: tuple[list, dict] = ([], {})
            try:
                for index, op in enumerate(sequence):
                    got_real = await apply(real, real_root, *state_real, op)
                    got_sim = await apply(sim, "/sim/root", *state_sim, op)
                    assert got_sim == got_real, f"op {index} {op}: real OS gave {got_real!r}, SimFS gave {got_sim!r}"
            finally:
                for handle in state_real[0]:
                    try:
                        await real.close(handle)
                    except OSError:
                        pass

        trio.run(main)


@pytest.mark.parametrize("op", ["mkdir", "open"])
def test_a_mode_that_is_not_an_int_fails_as_on_the_real_os(op):
    """A runtime that passes ``None`` as a mode gets a TypeError from the OS, before anything
    is created; SimFS fails the same way (it stores no modes, so it would otherwise pass)."""
    with tempfile.TemporaryDirectory() as real_top:
        disk = Disk()
        disk.mkdirs_durable("/sim/root")
        targets = [(OsFileSystem(), os.path.realpath(real_top)), (ProcessView(disk, 1), "/sim/root")]

        async def main():
            for fs, root in targets:
                path = os.path.join(root, "x")
                with pytest.raises(TypeError):
                    if op == "mkdir":
                        await fs.mkdir(path, None)
                    else:
                        await fs.open(path, F.WRITE | F.CREATE, None)
                assert not os.path.lexists(os.path.join(real_top, "x"))
                assert disk.resolve("/sim/root/x") is None

        trio.run(main)
