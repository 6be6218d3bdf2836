"""The reader differential: every read entry point of the runtime against the spec's reader.

Each case (:mod:`.reader_cases`) is placed on a fresh SimFS disk where the runtime looks for
the session, then read through ``stat``, ``list``, a read open (its header, reads at many
windows and offsets — invalid ones included — twice through one handle, ``append``/``flush``
refused, a read after close) and, for some, a write open (next seq, torn tail, recovered
records).  Everything is compared exactly with :mod:`dsh_sim.evidence.oracles.read_outcome`:
records, torn tail, the refusal's class and, where the spec documents it, its text.  Two
more kinds of case move the disk under the reader through the FS port: the log shrinks
between two reads of one handle (§10.2: never backwards) or grows while it is being read
(§10.5: the stable read retries) or is replaced by a link (refused, naming the log), a
read fails with EIO (the error passes through, no descriptor stays open), and the reader is
cancelled while it reads (no descriptor stays open either).
"""

from __future__ import annotations

import errno
import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs
import trio

from dsh_sim.adapters.simfs import Disk, ProcessView
from dsh_sim.adapters.simfs.view import FsFault
from dsh_sim.drivers import reader_cases as rc
from dsh_sim.drivers.reader_checks import BAD_RANGES, Checks
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.engine.config import session_paths
from dsh_sim.evidence.oracles.read_outcome import CORRUPT, ReadOutcome, expected_listing, expected_read
from dsh_sim.evidence.oracles.spec_log import read_recoverable
from dsh_sim.scenario.model import Scenario
from runtime.adapters.system import SystemClock, SystemIds
from runtime.persistence import layout
from runtime.persistence.backend import JsonlBackend
from runtime.persistence.publication import inline_verifier
from runtime.ports import Ports
from runtime.ports.fs import OpenFlags

ROOT = "/sim/root"


@attrs.frozen
class ReaderRun:
    """The reader differential's count of cases and checks, and every mismatch found."""

    cases: int
    checks: int
    mismatches: tuple[str, ...]
    seconds: float = 0.0  # wall time, when the caller measured it


class _Gate:
    """The disk moving under the reader at the log's reads: an EIO, or one concurrent append."""

    def __init__(
        self,
        log: str,
        *,
        fail_read: bool = False,
        append: bytes | None = None,
        link: bool = False,
        other: ProcessView | None = None,
        cancel_at: int = 0,
        scope: trio.CancelScope | None = None,
    ) -> None:
        self.log, self.fail_read, self.append, self.link, self.other = log, fail_read, append, link, other
        self.cancel_at, self.scope, self.reads = cancel_at, scope, 0

    async def before_fs(self, view: ProcessView, op: str, path: str, details: dict[str, Any]) -> FsFault | None:
        if op != "read" or path != self.log:
            return None
        self.reads += 1
        if self.scope is not None and self.reads == self.cancel_at:
            self.scope.cancel()  # the caller is cancelled while it reads: the next checkpoint raises
        if self.fail_read:
            return FsFault("error", errno.EIO)
        if self.append is not None and self.other is not None:
            data, self.append = self.append, None
            fd = await self.other.open(self.log, OpenFlags.WRITE | OpenFlags.APPEND)
            await self.other.write(fd, data)
            await self.other.close(fd)
        if self.link and self.other is not None:  # the log replaced by a link while it is read
            self.link = False
            await self.other.unlink(self.log)
            await self.other.symlink(self.log + ".elsewhere", self.log)
        return None

    def after_fs(self, view: ProcessView, op: str, path: str, outcome: str) -> None:
        return None


def _place(case: rc.Case) -> tuple[Disk, str]:
    disk = Disk()
    path = session_paths(ROOT, case.header.get("cwd") or "/", case.header["id"], case.compression).log
    disk.write_file_durable(path, case.data)
    return disk, path


def _backend(view: ProcessView, compression: str) -> JsonlBackend:
    ports = Ports(fs=view, clock=SystemClock(), ids=SystemIds())
    return JsonlBackend(ROOT, ports, compression=compression, verifier=inline_verifier)


def windows(count: int, rng: random.Random) -> list[tuple[Any, Any]]:
    """Read windows: the defaults, empty ones, past the end, and a seeded sample."""
    fixed = [(0, None), (0, 0), (1, None), (count, None), (count + 3, None), (1, 2), (max(count - 1, 0), 5), (2, 0), (0, count + 1)]
    return fixed + [(rng.randrange(count + 2), rng.choice([None, rng.randrange(count + 2)])) for _ in range(4)]


async def _read_all_entries(case: rc.Case, checks: Checks, rng: random.Random) -> None:
    disk, path = _place(case)
    view = ProcessView(disk, 1)
    backend = _backend(view, case.compression)
    sid = case.header["id"]
    checks.bind(case.name, sid, path)
    expected = expected_read(case.data, case.compression)
    placed = (sid, case.header.get("cwd"))
    foreign = expected.header is not None and (expected.header.get("id"), expected.header.get("cwd")) != placed
    if foreign:  # §3.7: the header's id and cwd name another session directory than the one read
        expected = ReadOutcome(refusal=CORRUPT)
    await checks.stat(backend, expected, len(case.data))
    if not foreign:  # (§3.8 says nothing of a listed header that names another directory)
        await checks.listing(backend, expected_listing(case.data, case.compression))
    handle = await checks.open_read(backend, expected)
    if handle is not None:
        for offset, length in windows(len(expected.records), rng):
            await checks.window(handle, expected, offset, length)
        for offset, length in BAD_RANGES:
            await checks.bad_range(handle, offset, length)
        await checks.read_only(handle)
        await handle.close()
        await checks.closed(handle)
    if case.write_open:
        await checks.write_open(backend, expected)
    checks.no_open_descriptors(view)


async def _shrinking(case: rc.Case, checks: Checks) -> None:
    """§10.2: the log shrinks between two reads of one handle (the last frame or line goes)."""
    start, _ = rc.last_unit(case.data, case.compression)
    disk, path = _place(case)
    view = ProcessView(disk, 1)
    checks.bind(case.name + "/shrinks", case.header["id"], path)
    handle = await checks.open_read(_backend(view, case.compression), expected_read(case.data, case.compression))
    if handle is None:
        return
    await checks.window(handle, expected_read(case.data, case.compression), 0, None)
    await ProcessView(disk, 2).truncate(path, start)
    await checks.shrank(handle)
    await handle.close()
    checks.no_open_descriptors(view)


async def _moving(case: rc.Case, checks: Checks, extra: bytes) -> None:
    """§10.5: the log grows while the first read of it runs; the stable read must retry."""
    disk, path = _place(case)
    view = ProcessView(disk, 1, _Gate(path, append=extra, other=ProcessView(disk, 2)))
    checks.bind(case.name + "/grows-while-read", case.header["id"], path)
    await checks.stat(_backend(view, case.compression), expected_read(case.data + extra, case.compression), len(case.data) + len(extra))
    checks.no_open_descriptors(view)


async def _relinked(case: rc.Case, checks: Checks) -> None:
    """The log is replaced by a symbolic link while it is read: refused, naming the log."""
    disk, path = _place(case)
    view = ProcessView(disk, 1, _Gate(path, link=True, other=ProcessView(disk, 2)))
    checks.bind(case.name + "/replaced-by-link-while-read", case.header["id"], path)
    await checks.unsafe("stat", _backend(view, case.compression).stat(case.header["id"]))
    checks.no_open_descriptors(view)


async def _cancelled(case: rc.Case, checks: Checks) -> None:
    """The reader is cancelled at its first or second read of the log (mid-read, or with the
    file read and its close ahead): whatever it opened is closed all the same."""
    for entry in ("stat", "list"):
        for at in (1, 2):
            disk, path = _place(case)
            gate = _Gate(path, cancel_at=at)
            view = ProcessView(disk, 1, gate)
            backend = _backend(view, case.compression)
            checks.bind(f"{case.name}/{entry}-cancelled-at-read-{at}", case.header["id"], path)
            with trio.CancelScope() as scope:
                gate.scope = scope
                await checks.cancelled(entry, backend.stat(case.header["id"]) if entry == "stat" else backend.list())
            checks.no_open_descriptors(view)


async def _failing(case: rc.Case, checks: Checks) -> None:
    """A read of the log fails with EIO: every reader passes it through and closes what it opened."""
    disk, path = _place(case)
    view = ProcessView(disk, 1, _Gate(path, fail_read=True))
    backend = _backend(view, case.compression)
    checks.bind(case.name + "/read-fails", case.header["id"], path)
    await checks.io_error("stat", backend.stat(case.header["id"]))
    await checks.io_error("list", backend.list())
    checks.no_open_descriptors(view)


Original = tuple[str, str, bytes, rc.Source]  # (name, compression, bytes as written, content)


def corpus_originals(scenarios: Sequence[Scenario]) -> list[Original]:
    """The logs these scenarios leave when replayed (read by the spec's reader for content)."""
    out: list[Original] = []
    for scenario in scenarios:
        _, sim = run_scenario(scenario)
        data = sim.disk.read_path(sim.config.log_path)
        if data:
            log = read_recoverable(data, sim.config.compression)
            out.append((scenario.name, sim.config.compression, data, rc.Source(scenario.name, log.header, log.records)))
    return out


def default_sources(seed: int = 1) -> list[rc.Source]:
    """A small synthetic log, and one with a 300 KB record and a header past 8 KiB."""
    return [rc.synthetic_source(seed), rc.synthetic_source(seed + 1, cwd_length=12_000, big_record=300_000)]


@attrs.frozen
class Plan:
    """How much of each variant to run (``None``: every one)."""

    seed: int = 1
    tear_limit: int | None = None
    flips: int = 64
    bomb_limit: int | None = None


FULL_PLAN = Plan(tear_limit=None, flips=256, bomb_limit=None)  # every tear, every bomb: ~10 CPU-s
# the corpus scenarios whose logs are cut and damaged (a tool call boundary; a reader beside a writer)
READER_SCENARIOS = ("boundary-3-4-pay", "read-only-reader-beside-writer-none")

GROUPS = ("corpus", "synthetic", "frames", "bombs", "large", "moving")


def cases(sources: Sequence[rc.Source], originals: Sequence[Original], plan: Plan, groups: Sequence[str] = GROUPS) -> Iterator[rc.Case]:
    rng = random.Random(plan.seed)
    for name, compression, data, source in originals if "corpus" in groups else ():  # logs as corpus runs left them
        yield rc.Case(f"{name}/as-written", compression, data, source.header, write_open=True)
        yield from rc.tears(name, source, data, compression, rng, plan.tear_limit)
        yield from rc.flips(name, source, data, compression, rng, plan.flips)
    for source in sources[:1] if "synthetic" in groups else ():
        for compression in ("zstd", "none"):
            data = rc.encode(source, compression)
            name = f"{source.name}/{compression}"
            yield rc.Case(name, compression, data, source.header, write_open=True)
            yield from rc.tears(name, source, data, compression, rng, plan.tear_limit)
            yield from rc.junk(name, source, data, compression)
            yield from rc.header_shapes(name, source, compression)
            yield from rc.source_seqs(name, source, compression)
            yield from rc.unsafe_values(name, source, compression)
            yield from rc.unsafe_texts(name, source, compression)
            yield from rc.lone_surrogates(name, source, compression)
            yield from rc.flips(name, source, data, compression, rng, plan.flips // 4)
            if compression == "none":
                yield from rc.raw_damage(name, source, data)
    for source in sources[:1] if "frames" in groups else ():
        for frame in (
            "stream",
            "nochecksum",
            "raw-single-0",
            "raw-single-1",
            "raw-window-0",
            "raw-window-2",
            "raw-window-3",
            "raw-empty-last",
        ):
            data = rc.encode(source, "zstd", sizes=(1, 4), frame=frame)
            yield rc.Case(f"{source.name}/{frame}", "zstd", data, source.header, write_open=frame.startswith("raw"))
            if frame in ("stream", "raw-empty-last") or plan.tear_limit is None:
                yield from rc.tears(f"{source.name}/{frame}", source, data, "zstd", rng, plan.tear_limit)
    for source in sources[1:] if "large" in groups else ():  # large records, a header past the first 8 KiB read
        for compression in ("zstd", "none"):
            data = rc.encode(source, compression, sizes=(3, 3))
            name = f"{source.name}/{compression}"
            yield rc.Case(name, compression, data, source.header, write_open=True)
            yield from rc.tears(name, source, data, compression, rng, 2 if plan.tear_limit else 16, structural=False)
        data = rc.encode(source, "zstd", sizes=(3, 3), frame="raw-window-0")
        yield rc.Case(f"{source.name}/raw-blocks", "zstd", data, source.header)
    if sources and "bombs" in groups:
        yield from rc.bombs(sources[0], rng, plan.bomb_limit)


def differential(
    sources: Sequence[rc.Source],
    originals: Sequence[Original],
    plan: Plan = Plan(),
    groups: Sequence[str] = GROUPS,
    between: Callable[[int], None] | None = None,
) -> ReaderRun:
    """Run every case through every entry point; the mismatches say where the runtime differs.
    ``between(cases so far)`` is called after each case: a campaign reports progress there and
    stops there when asked (it raises)."""
    # the runtime's layout keeps the path segments it encoded; a run starts cold, so that every
    # case's placement goes through the encoding (a warm cache from an earlier run would hide it)
    layout.encode_segment.cache_clear()
    layout.project_key.cache_clear()
    session_paths.cache_clear()
    checks = Checks()
    rng = random.Random(plan.seed)
    count = 0

    async def main() -> None:
        nonlocal count
        for case in cases(sources, originals, plan, groups):
            count += 1
            await _read_all_entries(case, checks, rng)
            if between is not None:
                between(count)
        for source in sources[:1] if "moving" in groups else ():
            for compression in ("zstd", "none"):
                clean = rc.Case(f"{source.name}/{compression}", compression, rc.encode(source, compression), source.header)
                await _shrinking(clean, checks)
                await _moving(clean, checks, rc.next_batch(source, compression))
                await _failing(clean, checks)
                await _relinked(clean, checks)
                await _cancelled(clean, checks)
                count += 8
                if between is not None:
                    between(count)

    trio.run(main)
    return ReaderRun(count, checks.count, tuple(checks.mismatches))
