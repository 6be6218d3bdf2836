"""Session files cannot be redirected: links in place of logs, locks and directories are refused.

Every probe runs on the real OS and on SimFS (the same runtime code; SimFS models symbolic
links as Linux does), and also through :class:`Following` — the filesystem as the runtime
saw it before this change (no ``O_NOFOLLOW``, ``stat`` for ``lstat``, no link count) — where
each probe must escape: that shows the probe sees the hole it guards.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

from dsh_sim.adapters.simfs import Disk, ProcessView
from runtime.adapters.os_fs import OsFileSystem
from runtime.adapters.system import SystemClock, SystemIds
from runtime.persistence.backend import JsonlBackend
from runtime.persistence.errors import SessionPersistenceError, UnsafeSessionPathError
from runtime.persistence.layout import SessionPaths
from runtime.persistence.publication import inline_verifier
from runtime.ports import Ports
from runtime.ports.fs import OpenFlags, StatResult
from runtime.session.events import Event
from tests.runtime.test_lock_processes import HOLDER, wait_for_content
from tests.support.persistence import meta, run

SID = "victim"
OPEN_TURN = [Event("turn/start", 0, 1, {"turn": 1})]
BALANCED = [Event("turn/start", 0, 1, {"turn": 1}), Event("turn/end", 1, 2, {"turn": 1, "reason": {"kind": "completed"}})]


class Following:
    """The filesystem as the runtime used it before: links followed, no kinds, no link counts."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def open(self, path: str, flags: OpenFlags, mode: int = 0o600) -> int:
        return int(await self._inner.open(path, flags & ~OpenFlags.NOFOLLOW, mode))

    async def _old(self, st: StatResult) -> StatResult:
        return attrs.evolve(st, kind="dir" if st.is_dir else "file", nlink=1)

    async def stat(self, path: str) -> StatResult:
        return await self._old(await self._inner.stat(path))

    lstat = stat

    async def fstat(self, fd: int) -> StatResult:
        return await self._old(await self._inner.fstat(fd))


class World:
    """Two persistence roots on one filesystem (real or simulated) and a place outside both."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind = kind
        if kind == "os":
            self.fs: Any = OsFileSystem()
            self.top = str(tmp_path)
        else:
            self.disk = Disk()
            self.disk.mkdirs_durable("/top")
            self.fs = ProcessView(self.disk, 1)
            self.top = "/top"
        self.a, self.b, self.outside = f"{self.top}/a", f"{self.top}/b", f"{self.top}/outside"

    def backend(self, root: str, legacy: bool = False) -> JsonlBackend:
        fs = Following(self.fs) if legacy else self.fs
        return JsonlBackend(root, Ports(fs=fs, clock=SystemClock(), ids=SystemIds()), compression="none", verifier=inline_verifier)

    def paths(self, root: str) -> SessionPaths:
        return SessionPaths.of(root, None, SID, "none")

    async def read(self, path: str) -> bytes | None:
        try:
            fd = await self.fs.open(path, OpenFlags.READ)
        except FileNotFoundError:
            return None
        data = await self.fs.read(fd, 1 << 20)
        await self.fs.close(fd)
        return bytes(data)

    async def symlink(self, target: str, path: str) -> None:
        if self.kind == "os":
            os.symlink(target, path)
        else:
            await self.fs.symlink(target, path)

    async def mkdirs(self, path: str) -> None:
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            try:
                await self.fs.mkdir("/" + "/".join(parts[:i]))
            except FileExistsError:
                pass

    async def session(self, root: str, events: list[Event]) -> None:
        handle = await self.backend(root).create(meta(SID))
        await handle.append(events)
        await handle.close()


@pytest.fixture(params=["os", "simfs"])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> World:
    return World(request.param, tmp_path)


async def attempt(world: World, legacy: bool, action: Callable[[JsonlBackend], Any]) -> BaseException | None:
    try:
        await action(world.backend(world.b, legacy))
    except SessionPersistenceError as err:
        return err
    return None


async def append_more(backend: JsonlBackend) -> None:
    handle = await backend.open(SID, "write")
    await handle.append([Event("turn/start", handle.next_seq, 9, {"turn": 9})])
    await handle.close()


# ------------------------------------------------------------------------- the log


@pytest.mark.parametrize("legacy", [False, True], ids=["now", "before"])
def test_a_linked_log_is_not_written_through(world: World, legacy: bool) -> None:
    async def main() -> None:
        await world.session(world.a, OPEN_TURN)
        victim = world.paths(world.a).log
        before = await world.read(victim)
        await world.mkdirs(world.paths(world.b).session_dir)
        await world.symlink(victim, world.paths(world.b).log)
        refused = await attempt(world, legacy, append_more)
        after = await world.read(victim)
        if legacy:
            assert refused is None and after != before  # the write went through the link
        else:
            assert isinstance(refused, UnsafeSessionPathError) and "symbolic link" in str(refused)
            assert after == before
            with pytest.raises(UnsafeSessionPathError):
                await world.backend(world.b).open(SID, "read")

    run(main)


@pytest.mark.parametrize("legacy", [False, True], ids=["now", "before"])
def test_a_hard_linked_log_is_not_written_through(world: World, legacy: bool) -> None:
    async def main() -> None:
        await world.session(world.a, OPEN_TURN)
        victim = world.paths(world.a).log
        before = await world.read(victim)
        await world.mkdirs(world.paths(world.b).session_dir)
        await world.fs.link(victim, world.paths(world.b).log)
        refused = await attempt(world, legacy, append_more)
        after = await world.read(victim)
        if legacy:
            assert refused is None and after != before
        else:
            assert isinstance(refused, UnsafeSessionPathError) and "2 hard links" in str(refused)
            assert after == before

    run(main)


# ---------------------------------------------------------------- lock and directories


@pytest.mark.parametrize("legacy", [False, True], ids=["now", "before"])
def test_a_linked_lock_file_is_not_followed(world: World, legacy: bool) -> None:
    async def main() -> None:
        await world.session(world.b, BALANCED)
        await world.mkdirs(world.outside)
        target = f"{world.outside}/created-by-lock"
        lock = world.paths(world.b).lock
        await world.fs.unlink(lock)
        await world.symlink(target, lock)
        refused = await attempt(world, legacy, append_more)
        if legacy:
            assert refused is None and await world.read(target) is not None
        else:
            assert isinstance(refused, UnsafeSessionPathError) and "session.lock" in str(refused)
            assert await world.read(target) is None

    run(main)


@pytest.mark.parametrize("level", ["session_dir", "project_dir"])
@pytest.mark.parametrize("legacy", [False, True], ids=["now", "before"])
def test_a_linked_directory_is_not_followed(world: World, legacy: bool, level: str) -> None:
    async def main() -> None:
        await world.session(world.a, OPEN_TURN)
        before = await world.read(world.paths(world.a).log)
        here, there = getattr(world.paths(world.b), level), getattr(world.paths(world.a), level)
        await world.mkdirs(os.path.dirname(here))
        await world.symlink(there, here)
        refused = await attempt(world, legacy, append_more)
        after = await world.read(world.paths(world.a).log)
        if legacy:
            assert refused is None and after != before
        else:
            assert isinstance(refused, UnsafeSessionPathError) and "symbolic link" in str(refused)
            assert after == before

    run(main)


def test_a_linked_project_directory_is_refused_when_a_session_is_created(world: World) -> None:
    async def main() -> None:
        await world.mkdirs(world.outside)
        project = world.paths(world.b).project_dir
        await world.mkdirs(world.b)
        handle = await world.backend(world.b).create(meta(SID))
        await world.symlink(world.outside, project)  # planted between create and first write
        with pytest.raises(UnsafeSessionPathError, match="symbolic link"):
            await handle.append(BALANCED)
        await handle.close()
        assert await world.fs.listdir(world.outside) == []

    run(main)


def test_a_fifo_in_place_of_the_log_is_refused_without_blocking(tmp_path: Path) -> None:
    world = World("os", tmp_path)

    async def main() -> None:
        await world.session(world.b, BALANCED)
        log = world.paths(world.b).log
        os.unlink(log)
        os.mkfifo(log)
        for access in ("read", "write"):
            with pytest.raises(UnsafeSessionPathError, match="not a regular file"):
                await world.backend(world.b).open(SID, access)  # type: ignore[arg-type]

    run(main)


# ------------------------------------------------------------ the lease, two processes


@pytest.mark.slow
@pytest.mark.parametrize("legacy", [False, True], ids=["now", "before"])
def test_a_linked_log_cannot_bypass_a_lock_held_by_another_process(tmp_path: Path, legacy: bool) -> None:
    """A process holds session ``victim`` in root A; a second root B links its log to A's.

    Before: B's writer took B's own (uncontended) lock and rewrote A's log under the live
    holder.  Now: the link is refused and A's log is untouched while the holder holds it.
    """
    world = World("os", tmp_path)
    marker = tmp_path / "marker"
    marker.write_text("")
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    child = subprocess.Popen([sys.executable, str(script), world.a, SID, str(marker)], stderr=subprocess.PIPE)
    try:
        wait_for_content(str(marker), "holding", child)
        victim = world.paths(world.a).log
        before = Path(victim).read_bytes()
        Path(world.paths(world.b).session_dir).mkdir(parents=True)
        os.symlink(victim, world.paths(world.b).log)

        async def main() -> BaseException | None:
            async def rewrite(backend: JsonlBackend) -> None:
                handle = await backend.open(SID, "write")
                await handle.append([Event("turn/start", 2, 3, {"turn": 2})])
                await handle.close()

            return await attempt(world, legacy, rewrite)

        refused = run(main)
        assert child.poll() is None  # the holder is alive and holds the lock throughout
        if legacy:
            assert refused is None and Path(victim).read_bytes() != before
        else:
            assert isinstance(refused, UnsafeSessionPathError)
            assert Path(victim).read_bytes() == before
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        if child.stderr:
            child.stderr.close()


def test_a_fifo_in_place_of_the_lock_is_refused_without_blocking(tmp_path: Path) -> None:
    world = World("os", tmp_path)

    async def main() -> None:
        await world.session(world.b, BALANCED)
        lock = world.paths(world.b).lock
        os.unlink(lock)
        os.mkfifo(lock)
        with pytest.raises(UnsafeSessionPathError, match="not a regular file"):
            await world.backend(world.b).open(SID, "write")

    run(main)
