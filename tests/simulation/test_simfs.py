"""SimFS: volatile vs durable content, directory-entry durability, crash states, faults, fidelity."""

from __future__ import annotations

import errno

import attrs
import pytest
import trio
import trio.testing

from dsh_sim.adapters.simfs import (
    Disk,
    FidelityError,
    FsFault,
    ProcessView,
    crash_states,
)
from dsh_sim.adapters.simfs.crash import (
    DROP_ALL,
    PowerCut,
    TornCut,
    apply_power_cut,
    misfit,
    state_count,
)
from dsh_sim.adapters.simfs.disk import apply_op
from runtime.ports.fs import OpenFlags as F

NEW = F.WRITE | F.CREATE | F.EXCLUSIVE


def run(fn):
    return trio.run(fn)


def fresh() -> tuple[Disk, ProcessView]:
    disk = Disk()
    disk.mkdirs_durable("/d")
    return disk, ProcessView(disk, 1)


def test_unsynced_data_is_visible_but_not_durable():
    disk, view = fresh()

    async def main():
        fd = await view.open("/d/f", NEW)
        await view.write(fd, b"abc")
        assert disk.file(disk.resolve("/d/f")).durable == b""
        assert disk.read_path("/d/f") == b"abc"
        await view.fsync(fd)
        assert disk.file(disk.resolve("/d/f")).durable == b"abc"

    run(main)


def test_new_names_need_a_directory_fsync():
    disk, view = fresh()

    async def main():
        fd = await view.open("/d/f", NEW)
        await view.write(fd, b"data")
        await view.fsync(fd)
        lost = Disk.from_image(disk.image())
        apply_power_cut(lost, DROP_ALL)
        assert lost.resolve("/d/f") is None  # the data was synced, the name was not
        await view.fsync_dir("/d")
        kept = Disk.from_image(disk.image())
        apply_power_cut(kept, DROP_ALL)
        assert kept.read_path("/d/f") == b"data"

    run(main)


def test_crash_states_enumerate_prefixes_tears_and_entries():
    disk, view = fresh()

    async def main():
        fd = await view.open("/d/f", NEW)
        await view.write(fd, b"hello")
        await view.fsync(fd)
        await view.fsync_dir("/d")
        await view.write(fd, b" world")

    run(main)
    states = list(crash_states(disk))
    # keep 0 ops, each torn length 1..5 of the 6-byte write, keep the whole write
    assert len(states) == state_count(disk) == 7
    contents = set()
    for cut in states:
        after = Disk.from_image(disk.image())
        apply_power_cut(after, cut)
        contents.add(after.read_path("/d/f"))
    assert contents == {b"hello" + b" world"[:n] for n in range(7)}


def test_a_cut_fits_only_the_state_it_describes():
    """Every enumerated state fits; a cut naming operations or entries the disk does not have
    now is refused with the reason, never applied (it would invent a state no crash leaves)."""
    disk, view = fresh()

    async def main():
        fd = await view.open("/d/f", NEW)
        await view.write(fd, b"hello")
        await view.fsync(fd)
        await view.ftruncate(fd, 2)
        await view.write(fd, b" world")

    run(main)
    ino = disk.resolve("/d/f")
    assert all(misfit(disk, cut) is None for cut in crash_states(disk))
    assert all(misfit(disk, cut) is None for cut in crash_states(disk, "reorder"))
    refused = {
        "is not a file": PowerCut((TornCut(999),)),
        "keeps 3": PowerCut((TornCut(ino, 3),)),
        "a truncation, not a write": PowerCut((TornCut(ino, 0, 1),)),
        "1 to 5 bytes of its 6-byte write, not 6": PowerCut((TornCut(ino, 1, 6),)),
        "no unsynced operation after the 2 kept": PowerCut((TornCut(ino, 2, 1),)),
        "not increasing indexes": PowerCut((TornCut(ino, subset=(1, 0)),)),
        "has no unsynced entry 'g'": PowerCut((), ((disk.resolve("/d"), "g", True),)),
    }
    for reason, cut in refused.items():
        problem = misfit(disk, cut)
        assert problem is not None and reason in problem, (reason, problem)


def test_fsync_failure_can_drop_dirty_pages_so_a_later_fsync_lies():
    disk, view = fresh()

    async def main():
        fd = await view.open("/d/f", NEW)
        await view.fsync_dir("/d")
        await view.write(fd, b"lost")

        class FailOnce:
            fired = False

            async def before_fs(self, v, op, path, details):
                if op == "fsync" and not self.fired:
                    self.fired = True
                    return FsFault("fsync_fail", errno.EIO, drop_dirty=True)
                return None

            def after_fs(self, *a):
                pass

        view.gate = FailOnce()
        with pytest.raises(OSError) as err:
            await view.fsync(fd)
        assert err.value.errno == errno.EIO
        await view.fsync(fd)  # "succeeds"
        assert disk.read_path("/d/f") == b"lost"  # the page cache still shows the data
        assert disk.file(disk.resolve("/d/f")).durable == b""  # but it never reached the disk

    run(main)


def test_fsync_failure_keeping_dirty_pages_persists_on_retry():
    disk, view = fresh()

    async def main():
        fd = await view.open("/d/f", NEW)
        await view.write(fd, b"kept")

        class FailOnce:
            fired = False

            async def before_fs(self, v, op, path, details):
                if op == "fsync" and not self.fired:
                    self.fired = True
                    return FsFault("fsync_fail", errno.EIO, drop_dirty=False)

            def after_fs(self, *a):
                pass

        view.gate = FailOnce()
        with pytest.raises(OSError):
            await view.fsync(fd)
        await view.fsync(fd)
        assert disk.file(disk.resolve("/d/f")).durable == b"kept"

    run(main)


def test_locks_are_per_open_file_and_released_when_the_process_dies():
    disk, a = fresh()
    b = ProcessView(disk, 2)

    async def main():
        fa = await a.open("/d/lock", F.WRITE | F.CREATE)
        await a.flock(fa)
        fb = await b.open("/d/lock", F.WRITE | F.CREATE)
        with pytest.raises(BlockingIOError):
            await b.flock(fb)
        a.revoke()
        await b.flock(fb)

    run(main)


def test_a_dead_process_cannot_touch_the_disk_even_from_finally_blocks():
    """The fidelity guard: trio runs finally blocks while unwinding a crash; their writes must not land."""
    disk, view = fresh()
    refused = []

    class Crash(BaseException):
        pass

    async def worker(fd):
        try:
            await trio.sleep_forever()
        finally:
            try:
                await view.write(fd, b"written during unwinding")
            except FidelityError as err:
                refused.append(str(err))
                raise

    async def main():
        fd = await view.open("/d/f", NEW)
        await view.write(fd, b"before")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(worker, fd)
            await trio.testing.wait_all_tasks_blocked()
            view.revoke()
            raise Crash()

    with pytest.raises(BaseExceptionGroup) as group:
        trio.run(main)
    assert group.value.subgroup(FidelityError) is not None
    assert refused and "is dead" in refused[0]
    assert disk.read_path("/d/f") == b"before"
    assert disk.fidelity_errors


def test_explicit_power_cut_round_trips_through_json():
    cut = PowerCut((TornCut(5, 1, 7),), ((2, "x", True),))
    assert PowerCut.from_json(cut.to_json()) == cut


def test_a_cancelled_close_leaves_the_descriptor_open_like_the_real_adapter(tmp_path):
    """close in a cancelled scope raises Cancelled before it closes (the adapter's run_in_thread
    checks cancellation first, as trio.to_thread.run_sync does), in SimFS as in the real adapter;
    only a shielded close closes."""
    from runtime.adapters.os_fs import OsFileSystem

    disk, view = fresh()
    real = OsFileSystem()

    async def main():
        for fs, path in ((view, "/d/f"), (real, str(tmp_path / "f"))):
            fd = await fs.open(path, NEW)
            with trio.CancelScope() as scope:
                scope.cancel()
                await fs.close(fd)
            assert scope.cancelled_caught
            await fs.fstat(fd)  # still open
            with trio.CancelScope() as scope:
                scope.cancel()
                with trio.CancelScope(shield=True):
                    await fs.close(fd)
            with pytest.raises(OSError) as err:
                await fs.fstat(fd)
            assert err.value.errno == errno.EBADF
        assert view.open_paths() == []

    run(main)


def _cut_by_replacing_every_node(disk: Disk, cut: PowerCut) -> dict[int, object]:
    """apply_power_cut's plain definition, kept here as the reference the faster one is
    compared with: every node replaced by its post-crash value."""
    nodes = dict(disk.nodes)
    chosen = {f.ino: f for f in cut.files}
    for node in disk.iter_files():
        content, choice = node.durable, chosen.get(node.ino)
        if choice is not None and node.pending:
            ops = [node.pending[i] for i in choice.subset] if choice.subset is not None else list(node.pending[: choice.keep_ops])
            for op in ops:
                content = apply_op(content, op)
            if choice.subset is None and choice.torn_bytes is not None and choice.keep_ops < len(node.pending):
                op = node.pending[choice.keep_ops]
                content = apply_op(content, type(op)(op.offset, op.data[: choice.torn_bytes]))
        nodes[node.ino] = attrs.evolve(node, volatile=content, durable=content, pending=())
    keep = {(d, n): k for d, n, k in cut.entries}
    for directory in disk.iter_dirs():
        volatile, result = dict(directory.entries), dict(directory.durable)
        for name in directory.unsynced_names():
            if keep.get((directory.ino, name), False):
                if name in volatile:
                    result[name] = volatile[name]
                else:
                    result.pop(name, None)
        entries = tuple(sorted(result.items()))
        nodes[directory.ino] = attrs.evolve(directory, entries=entries, durable=entries)
    return nodes


def test_a_power_cut_gives_every_node_its_post_crash_value_and_synced_nodes_stay_themselves():
    disk, view = fresh()

    async def main():
        fd = await view.open("/d/synced", NEW)
        await view.write(fd, b"kept")
        await view.fsync(fd)
        await view.mkdir("/d/sub")
        await view.fsync_dir("/d")
        fd2 = await view.open("/d/sub/dirty", NEW)  # an unsynced name and unsynced data
        await view.write(fd2, b"hello")
        await view.write(fd2, b" world")
        await view.fsync_dir("/d/sub")
        await view.write(fd, b"more")  # a synced file with a dirty tail
        await view.unlink("/d/synced")  # and its name gone from the volatile entries only

    run(main)
    image = disk.image()
    states = list(crash_states(disk))
    assert len(states) > 10
    for cut in [*states, DROP_ALL]:
        after = Disk.from_image(image)
        expected = _cut_by_replacing_every_node(after, cut)
        apply_power_cut(after, cut)
        assert after.nodes == expected
        before = image.node_map()
        for ino, node in after.nodes.items():  # a node whose value is unchanged is the same object
            if node == before[ino]:
                assert node is before[ino]
