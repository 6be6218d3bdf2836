"""The write handle keeps its append descriptor across batches; write + fsync is one port call."""

from __future__ import annotations

import errno
from typing import Any

import pytest
import trio

from runtime.adapters.os_fs import OsFileSystem
from runtime.persistence.backend import JsonlBackend
from runtime.ports.fs import OpenFlags, RollbackError
from runtime.session.events import Event
from tests.support.persistence import FaultFS, backend, log_path, meta, one_turn_log, run, second_turn, seqs


@pytest.fixture
def root(tmp_path: Any) -> str:
    return str(tmp_path / "root")


async def read_all(b: JsonlBackend, session_id: str) -> list[Event]:
    handle = await b.open(session_id, "read")
    return await handle.read()


def _log_opens(fs: FaultFS, path: str) -> int:
    return sum(1 for op, arg in fs.calls if op == "open" and arg == path)


def test_one_descriptor_serves_every_batch_and_closes_with_the_handle(root: str) -> None:
    async def main() -> None:
        fs = FaultFS()
        handle = await backend(root, "zstd", fs).create(meta("fd"))
        await handle.append(one_turn_log())  # the first batch publishes the file
        path = log_path(root, "fd", "zstd")
        for batch in (second_turn(6), second_turn(8), second_turn(10)):
            await handle.append(batch)
        assert _log_opens(fs, path) == 1
        await handle.close()
        assert seqs(await read_all(backend(root), "fd")) == list(range(12))

    run(main)


def test_a_failed_batch_drops_the_descriptor_and_the_next_one_reopens(root: str) -> None:
    async def main() -> None:
        fs = FaultFS()
        handle = await backend(root, "zstd", fs).create(meta("re"))
        await handle.append(one_turn_log())
        await handle.append(second_turn(6))
        path = log_path(root, "re", "zstd")
        fs.fail_fsync = {fs.fsyncs + 1}
        with pytest.raises(OSError, match="ENOSPC"):
            await handle.append(second_turn(8))
        await handle.append(second_turn(8))
        assert _log_opens(fs, path) == 2
        await handle.close()
        assert seqs(await read_all(backend(root), "re")) == list(range(10))

    run(main)


def test_the_os_adapter_rolls_back_in_the_same_call(tmp_path: Any) -> None:
    async def main() -> None:
        fs = OsFileSystem()
        path = str(tmp_path / "f")
        fd = await fs.open(path, OpenFlags.WRITE | OpenFlags.CREATE | OpenFlags.APPEND)
        await fs.write_fsync(fd, b"committed")
        await fs.close(fd)
        reader = await fs.open(path, OpenFlags.READ)
        with pytest.raises(OSError) as refused:  # a descriptor not open for writing
            await fs.write_fsync(reader, b"more", rollback_size=9)
        assert isinstance(refused.value, RollbackError) and refused.value.original.errno == errno.EBADF
        await fs.close(reader)
        with open(path, "rb") as stored:
            assert stored.read() == b"committed"

    trio.run(main)
