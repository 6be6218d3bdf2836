"""The production OS adapter, hermetically, on pyfakefs (libraries notes §3).

pyfakefs fakes ``os``/``fcntl`` globally, so the adapter's worker threads (``trio.to_thread``)
see the fake filesystem too; each operation runs alone in its thread, which pyfakefs handles.
The synchronous helpers are also tested directly.  What pyfakefs cannot show (fsync is a
no-op, flock is a no-op) is covered against the real OS in ``test_backend.py`` and
``test_lock_processes.py``.
"""

from __future__ import annotations

import errno
import os
from typing import Any

import pytest

from runtime.adapters import os_fs
from runtime.adapters.os_fs import OsFileSystem, os_open_flags
from runtime.ports.fs import OpenFlags
from tests.support.persistence import (
    backend,
    meta,
    one_turn_log,
    run,
    second_turn,
    seqs,
)


def test_open_flag_mapping() -> None:
    cloexec = getattr(os, "O_CLOEXEC", 0)
    assert os_open_flags(OpenFlags.READ) == os.O_RDONLY | cloexec
    assert os_open_flags(OpenFlags.WRITE) == os.O_WRONLY | cloexec
    assert os_open_flags(OpenFlags.READ | OpenFlags.WRITE) == os.O_RDWR | cloexec
    assert os_open_flags(OpenFlags.WRITE | OpenFlags.CREATE | OpenFlags.EXCLUSIVE) == os.O_WRONLY | os.O_CREAT | os.O_EXCL | cloexec
    assert os_open_flags(OpenFlags.WRITE | OpenFlags.APPEND) == os.O_WRONLY | os.O_APPEND | cloexec
    assert os_open_flags(OpenFlags.WRITE | OpenFlags.TRUNCATE) == os.O_WRONLY | os.O_TRUNC | cloexec


def test_error_mapping(fs: Any) -> None:
    fs.create_dir("/d")

    async def main() -> None:
        osfs = OsFileSystem()
        with pytest.raises(FileNotFoundError) as err:
            await osfs.open("/d/missing", OpenFlags.READ)
        assert err.value.errno == errno.ENOENT
        with pytest.raises(FileNotFoundError):
            await osfs.stat("/d/missing")
        with pytest.raises(FileNotFoundError):
            await osfs.unlink("/d/missing")
        with pytest.raises(FileNotFoundError):
            await osfs.mkdir("/nope/child")
        fd = await osfs.open("/d/f", OpenFlags.WRITE | OpenFlags.CREATE | OpenFlags.EXCLUSIVE)
        await osfs.close(fd)
        with pytest.raises(FileExistsError) as err2:
            await osfs.open("/d/f", OpenFlags.WRITE | OpenFlags.CREATE | OpenFlags.EXCLUSIVE)
        assert err2.value.errno == errno.EEXIST
        fd = await osfs.open("/d/g", OpenFlags.WRITE | OpenFlags.CREATE)
        await osfs.close(fd)
        with pytest.raises(FileExistsError) as err3:
            await osfs.link("/d/f", "/d/g")  # never overwrites
        assert err3.value.errno == errno.EEXIST
        with pytest.raises(FileExistsError):
            await osfs.mkdir("/d")

    run(main)


def test_listdir_is_sorted_and_stat_reports_dirs(fs: Any) -> None:
    for name in ["b", "a", "C", "_z", "10", "2"]:
        fs.create_file(f"/d/{name}")
    fs.create_dir("/d/sub")

    async def main() -> None:
        osfs = OsFileSystem()
        assert await osfs.listdir("/d") == sorted(["b", "a", "C", "_z", "10", "2", "sub"])
        assert (await osfs.stat("/d/sub")).is_dir
        assert not (await osfs.stat("/d/a")).is_dir

    run(main)


def test_file_operations_and_revisions(fs: Any) -> None:
    fs.create_dir("/d")

    async def main() -> None:
        osfs = OsFileSystem()
        fd = await osfs.open("/d/log", OpenFlags.WRITE | OpenFlags.CREATE | OpenFlags.APPEND)
        assert await osfs.write(fd, b"hello ") == 6
        await osfs.write(fd, b"world")
        await osfs.fsync(fd)
        await osfs.flock(fd)  # a no-op under pyfakefs, but the call path works
        st = await osfs.fstat(fd)
        assert st.size == 11
        await osfs.close(fd)
        assert (await osfs.stat("/d/log")).revision() == st.revision()
        fd = await osfs.open("/d/log", OpenFlags.READ | OpenFlags.WRITE)
        await osfs.ftruncate(fd, 5)
        assert await osfs.read(fd, 100) == b"hello"
        assert await osfs.read(fd, 100) == b""
        await osfs.close(fd)
        await osfs.truncate("/d/log", 2)
        assert (await osfs.stat("/d/log")).size == 2
        await osfs.fsync_dir("/d")
        await osfs.link("/d/log", "/d/log2")
        assert (await osfs.stat("/d/log2")).ino == (await osfs.stat("/d/log")).ino
        await osfs.unlink("/d/log")
        assert await osfs.listdir("/d") == ["log2"]

    run(main)


def test_disk_full_is_enospc(fs: Any) -> None:
    fs.create_dir("/d")
    fs.set_disk_usage(100)

    async def main() -> None:
        osfs = OsFileSystem()
        fd = await osfs.open("/d/f", OpenFlags.WRITE | OpenFlags.CREATE)
        with pytest.raises(OSError) as err:
            await osfs.write(fd, b"x" * 200)
        assert err.value.errno == errno.ENOSPC
        await osfs.close(fd)

    run(main)


def test_sync_helpers_directly(fs: Any) -> None:
    fs.create_dir("/d")
    fd = os.open("/d/f", os.O_WRONLY | os.O_CREAT)
    assert os_fs._write_all(fd, b"abc" * 1000) == 3000
    os_fs._flock(fd)
    os.close(fd)
    os_fs._fsync_dir("/d")
    with pytest.raises(NotADirectoryError):
        os_fs._fsync_dir("/d/f")
    result = os_fs._stat_result(os.stat("/d/f"))
    assert result.size == 3000 and not result.is_dir


def test_backend_round_trip_on_the_fake_filesystem(fs: Any) -> None:
    async def main() -> None:
        for mode in ("zstd", "none"):
            b = backend(f"/sessions-{mode}", mode)
            handle = await b.create(meta("hermetic", "/work"))
            await handle.append(one_turn_log())
            await handle.append(second_turn())
            await handle.close()
            reader = await backend(f"/sessions-{mode}", mode).open("hermetic", "read")
            assert seqs(await reader.read()) == list(range(8))
            assert sorted(os.listdir(f"/sessions-{mode}/--work--/hermetic"))[0] == "session.lock"

    run(main)
