"""The cross-process writer lock (spec §10.3; reference ``lease.spec.ts`` and
``lease.two-process.e2e.ts``).

Kernel ``flock`` locks conflict between two open file descriptions even inside one process,
so two backend instances over one root behave like two processes; one test uses a real
child process and SIGKILL to show the kernel releases the lock with a dead holder.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest

from runtime.persistence.errors import (
    SessionAlreadyExistsError,
    SessionAlreadyOwnedError,
    SessionPersistenceNotFoundError,
)
from runtime.session.events import Event
from tests.support.persistence import (
    FaultFS,
    backend,
    churn,
    lock_path,
    meta,
    run,
    seqs,
)

EVENTS = [Event("turn/start", 0, 1, {"turn": 1}), Event("turn/end", 1, 2, {"turn": 1, "reason": {"kind": "completed"}})]
TURN_2 = [Event("turn/start", 2, 3, {"turn": 2})]

HOLDER = textwrap.dedent(
    """
    import sys, trio
    from runtime.adapters import production_ports
    from runtime.persistence.backend import JsonlBackend
    from runtime.persistence.header import SessionHeader
    from runtime.session.events import Event

    root, session_id, marker = sys.argv[1:4]

    async def main():
        backend = JsonlBackend(root, production_ports(), compression="none")
        handle = await backend.create(SessionHeader(session_id, 1000))
        await handle.append([
            Event("turn/start", 0, 1, {"turn": 1}),
            Event("turn/end", 1, 2, {"turn": 1, "reason": {"kind": "completed"}}),
        ])
        with open(marker, "w") as f:
            f.write("holding")
        await trio.sleep_forever()

    trio.run(main)
    """
)


def wait_for_content(path: str, expected: str, child: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """Poll the marker's content (it exists, empty, from the start, so existence proves nothing)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path) as f:
            if f.read() == expected:
                return
        if child.poll() is not None:
            raise AssertionError(f"holder exited early with {child.returncode}: {child.stderr.read() if child.stderr else ''!r}")
        time.sleep(0.01)
    raise AssertionError(f"marker {path} never read {expected!r}")


def test_two_process_lock_excludes_a_live_holder_and_frees_on_sigkill(tmp_path: Any) -> None:
    root = str(tmp_path / "root")
    marker = str(tmp_path / "marker")
    open(marker, "w").close()
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    child = subprocess.Popen([sys.executable, str(script), root, "two-process-lease", marker], stderr=subprocess.PIPE)
    try:
        wait_for_content(marker, "holding", child)

        async def excluded() -> None:
            b = backend(root, "none")
            with pytest.raises(SessionAlreadyOwnedError):
                await b.open("two-process-lease", "write")
            reader = await b.open("two-process-lease", "read")  # reads never take the lock
            assert seqs(await reader.read()) == [0, 1]

        run(excluded)
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL

        async def taken_over() -> None:
            b = backend(root, "none")
            writer = await b.open("two-process-lease", "write")  # immediately: no waiting period
            await writer.append(TURN_2)
            assert seqs(await writer.read()) == [0, 1, 2]
            await writer.close()

        run(taken_over)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stderr:
            child.stderr.close()


def test_exclusion_between_instances_and_admission_after_close(tmp_path: Any) -> None:
    root = str(tmp_path / "root")

    async def main() -> None:
        first, second = backend(root, "none"), backend(root, "none")
        holder = await first.create(meta("excluded", "/work"))
        await holder.append(EVENTS)
        with pytest.raises(SessionAlreadyExistsError):
            await second.create(meta("excluded", "/work"))
        with pytest.raises(SessionAlreadyOwnedError):
            await second.open("excluded", "write")
        # unmaterialized creates hold no lock: the collision surfaces at the loser's first write
        winner = await first.create(meta("pending", "/work"))
        loser = await second.create(meta("pending", "/work"))
        await winner.append(EVENTS)
        with pytest.raises(SessionAlreadyOwnedError):
            await loser.append(EVENTS)
        await loser.close()
        await winner.close()
        reader = await second.open("excluded", "read")
        assert seqs(await reader.read()) == [0, 1]
        await holder.close()
        assert os.path.exists(lock_path(root, "excluded", "/work"))  # the file stays; the lock is gone
        reopened = await second.open("excluded", "write")
        await reopened.append(TURN_2)
        await reopened.close()

    run(main)


def test_a_losing_create_after_the_winner_closed_is_refused_as_existing(tmp_path: Any) -> None:
    root = str(tmp_path / "root")

    async def main() -> None:
        first, second = backend(root, "none"), backend(root, "none")
        winner = await first.create(meta("race"))
        loser = await second.create(meta("race"))
        await winner.append(EVENTS)
        await winner.close()
        with pytest.raises(SessionAlreadyExistsError, match='refusing to materialize "race": a log already exists on disk'):
            await loser.append(EVENTS)
        await loser.close()
        assert seqs(await (await first.open("race", "read")).read()) == [0, 1]

    run(main)


def test_deleting_the_lock_file_admits_a_successor(tmp_path: Any) -> None:
    root = str(tmp_path / "root")

    async def main() -> None:
        first, second = backend(root, "none"), backend(root, "none")
        wedged = await first.create(meta("wedged"))
        await wedged.append(EVENTS)
        os.unlink(lock_path(root, "wedged"))
        successor = await second.open("wedged", "write")  # would raise SessionAlreadyOwnedError
        await successor.append(TURN_2)
        await successor.close()
        await wedged.close()
        stored = await (await backend(root, "none").open("wedged", "read")).read()
        assert [e.seq for e in stored] == list(range(len(EVENTS) + len(TURN_2)))

    run(main)


def test_no_lock_residue_for_absent_or_erased_sessions(tmp_path: Any) -> None:
    root = str(tmp_path / "root")

    async def main() -> None:
        b = backend(root, "none")
        with pytest.raises(SessionPersistenceNotFoundError):
            await b.open("absent", "write")
        handle = await b.create(meta("erased"))
        await handle.close()
        assert not os.path.exists(root)

    run(main)


def test_lock_is_taken_at_first_materializing_write_or_flush(tmp_path: Any) -> None:
    root = str(tmp_path / "root")

    async def main() -> None:
        first, second = backend(root, "none"), backend(root, "none")
        creator = await first.create(meta("lazy-lock"))
        await creator.append(EVENTS)
        assert os.path.exists(lock_path(root, "lazy-lock"))
        with pytest.raises(SessionAlreadyOwnedError):
            await second.open("lazy-lock", "write")
        await creator.append(TURN_2)  # reuses the held lock
        await creator.close()
        await (await second.open("lazy-lock", "write")).close()

        flushed = await first.create(meta("flush-lock"))
        await flushed.flush()
        with pytest.raises(SessionAlreadyOwnedError):
            await second.open("flush-lock", "write")
        await flushed.close()

    run(main)


async def _stored(root: str, session_id: str) -> None:
    writer = await backend(root, "none").create(meta(session_id))
    await writer.append(EVENTS)
    await writer.close()


def _eacces(name: str) -> OSError:
    return PermissionError(errno.EACCES, f"EACCES: injected {name} refusal")


@pytest.mark.parametrize("where", ["open", "flock", "stat"])
def test_filesystem_refusals_surface_and_leave_nothing_held(tmp_path: Any, where: str) -> None:
    root = str(tmp_path / "root")

    async def main() -> None:
        await _stored(root, "refused")
        fs = FaultFS()
        lock = lock_path(root, "refused")
        state = {"armed": True}

        def refuse(*args: Any) -> None:
            target = args[0]
            if state["armed"] and (where == "flock" or target == lock):
                state["armed"] = False
                raise _eacces(where)

        fs.hooks[where] = refuse
        b = backend(root, "none", fs)
        with pytest.raises(PermissionError, match="EACCES"):
            await b.open("refused", "write")
        # the claim and the descriptor were released: another instance can lock right away
        other = await backend(root, "none").open("refused", "write")
        await other.close()
        await (await b.open("refused", "write")).close()

    run(main)


def test_ewouldblock_contention_maps_to_already_owned(tmp_path: Any) -> None:
    root = str(tmp_path / "root")

    async def main() -> None:
        await _stored(root, "busy")
        fs = FaultFS()

        def busy(fd: int) -> None:
            del fs.hooks["flock"]
            raise BlockingIOError(errno.EWOULDBLOCK, "EWOULDBLOCK: injected contention")

        fs.hooks["flock"] = busy
        with pytest.raises(SessionAlreadyOwnedError):
            await backend(root, "none", fs).open("busy", "write")

    run(main)


@pytest.mark.parametrize("churns,succeeds", [(1, True), (2, True), (3, False)])
def test_inode_churn_is_retried_then_refused(tmp_path: Any, churns: int, succeeds: bool) -> None:
    root = str(tmp_path / "root")

    async def main() -> None:
        await _stored(root, "churned")
        fs = FaultFS()
        lock = lock_path(root, "churned")
        left = {"n": churns}

        def swap(path: str) -> None:
            if path == lock and left["n"] > 0:
                left["n"] -= 1
                churn(path)

        fs.hooks["stat"] = swap
        b = backend(root, "none", fs)
        if succeeds:
            writer = await b.open("churned", "write")
            await writer.append(TURN_2)
            # the lock held is the one at the path now
            with pytest.raises(SessionAlreadyOwnedError):
                await backend(root, "none").open("churned", "write")
            await writer.close()
        else:
            with pytest.raises(SessionAlreadyOwnedError, match="kept changing"):
                await b.open("churned", "write")
            await (await backend(root, "none").open("churned", "write")).close()

    run(main)


def test_lock_path_vanishing_under_the_verify_stat_is_retried(tmp_path: Any) -> None:
    root = str(tmp_path / "root")

    async def main() -> None:
        await _stored(root, "vanished")
        fs = FaultFS()
        lock = lock_path(root, "vanished")

        def drop(path: str) -> None:
            if path == lock:
                del fs.hooks["stat"]
                os.unlink(path)

        fs.hooks["stat"] = drop
        writer = await backend(root, "none", fs).open("vanished", "write")
        assert os.path.exists(lock)
        await writer.close()

    run(main)


def test_failing_lock_release_still_frees_the_claim(tmp_path: Any) -> None:
    root = str(tmp_path / "root")

    async def main() -> None:
        fs = FaultFS()
        b = backend(root, "none", fs)
        holder = await b.create(meta("release-fails"))
        await holder.append(EVENTS)
        lock_fd = holder.lock_fd

        def fail(fd: int) -> None:
            if fd == lock_fd:
                del fs.hooks["close"]
                raise OSError(errno.EIO, "EIO: injected release failure")

        fs.hooks["close"] = fail
        with pytest.raises(OSError, match="injected release failure"):
            await holder.close()
        reopened = await b.open("release-fails", "write")
        await reopened.append(TURN_2)
        await reopened.close()

    run(main)
