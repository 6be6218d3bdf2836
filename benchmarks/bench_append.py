"""Append latency of the runtime's backend against plain ``os`` calls, in one run.

Each batch of N events is appended durably through ``WriteHandle.append`` over the production
OS adapter: validate the events, encode them once (one zstd frame, or JSONL lines), then
write + fsync in one hop off the event loop on the descriptor the handle keeps open.  The
baseline writes the very same encoded bytes with ``os.write`` + ``os.fsync`` on a descriptor
kept open (the floor any durable append pays).  References: open + write + fsync + close per
batch, as the runtime once did; the plain write + fsync in one trio thread hop
(``trio.to_thread.run_sync``), **the one-hop floor**: the floor of any append that leaves the
event loop for its I/O, as the runtime's does; and the same write + fsync in one hop of the
adapter's own ``run_in_thread`` (the OS adapter's hop: ``to_thread``'s guarantees with one
scheduler pass less), so what the runtime spends above the hop it really takes shows too.

Every writer has its own file, and the writers take turns block by block (``--block`` batches
each, the order rotating) inside one trio run, so a disk whose fsync latency drifts from one
second to the next (a shared virtual disk) hits them all alike.  Per round, a writer's time is
the sum of its blocks; the figures are medians over rounds, and the ratio of medians is what to
compare across machines.

The figure is wall time: an append is I/O-bound (its cost is mostly waiting for fsync), and
CPU time would leave the fsync out.  CPU ms per batch (the process's, every thread's) is printed
beside it.

    python benchmarks/bench_append.py --batches 300 --events 8
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable

import trio
from _bench import print_table

from runtime.adapters import production_ports
from runtime.adapters.os_fs import run_in_thread
from runtime.persistence.backend import JsonlBackend
from runtime.persistence.handles import WriteHandle
from runtime.persistence.header import SessionHeader
from runtime.persistence.log_format import encode_batch, encode_header
from runtime.session.events import Event, checked_as_is

WRITERS = ("plain", "reopen", "hop", "adapter_hop", "runtime")
LABELS = {
    "plain": "plain os: write+fsync (fd kept open)",
    "reopen": "plain os: open+write+fsync+close",
    "hop": "one trio thread hop: write+fsync",
    "adapter_hop": "one adapter hop (run_in_thread): write+fsync",
    "runtime": "runtime WriteHandle.append",
}


def make_batches(batches: int, per_batch: int) -> list[list[Event]]:
    out: list[list[Event]] = []
    seq = 0
    for b in range(batches):
        batch = []
        for i in range(per_batch):
            text = f"batch {b} event {i}: " + "lorem ipsum dolor sit amet " * 4
            batch.append(Event("todo/write", seq, 1_760_000_000_000 + seq, {"turn": 1, "items": [{"text": text, "done": i % 2 == 0}]}))
            seq += 1
        out.append(batch)
    return out


def _prepared(path: str, header: bytes) -> None:
    with open(path, "wb") as f:
        f.write(header)
        os.fsync(f.fileno())


def _write_fsync(fd: int, payload: bytes) -> None:
    os.write(fd, payload)
    os.fsync(fd)


Block = Callable[[int, int], Awaitable[None]]  # writes batches [start, end)


async def _writers(
    workdir: str, tag: str, compression: str, batches: list[list[Event]], payloads: list[bytes]
) -> tuple[dict[str, Block], Callable[[], Awaitable[None]]]:
    """One ready writer per kind (files prepared, the runtime's session published), and the
    closer that checks every file holds the bytes the baseline wrote."""
    header = encode_header(SessionHeader("x", 1000), compression)
    paths = {k: os.path.join(workdir, f"{k}-{tag}") for k in ("plain", "reopen", "hop", "adapter_hop")}
    for path in paths.values():
        _prepared(path, header)
    fds = {k: os.open(paths[k], os.O_WRONLY | os.O_APPEND) for k in ("plain", "hop", "adapter_hop")}
    backend = JsonlBackend(os.path.join(workdir, f"root-{tag}"), production_ports(), compression=compression)
    handle: WriteHandle = await backend.create(SessionHeader(f"x{tag}", 1000))
    await handle.flush()  # the first publication (header only) is not part of the measurement

    async def plain(start: int, end: int) -> None:
        fd = fds["plain"]
        for payload in payloads[start:end]:
            os.write(fd, payload)
            os.fsync(fd)

    async def reopen(start: int, end: int) -> None:
        for payload in payloads[start:end]:
            fd = os.open(paths["reopen"], os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, payload)
                os.fsync(fd)
            finally:
                os.close(fd)

    async def hop(start: int, end: int) -> None:
        fd = fds["hop"]
        for payload in payloads[start:end]:
            await trio.to_thread.run_sync(_write_fsync, fd, payload)

    async def adapter_hop(start: int, end: int) -> None:
        fd = fds["adapter_hop"]
        for payload in payloads[start:end]:
            await run_in_thread(_write_fsync, fd, payload)

    async def runtime(start: int, end: int) -> None:
        for batch in batches[start:end]:
            await handle.append(batch)

    async def close() -> None:
        for fd in fds.values():
            os.close(fd)
        log = handle.paths.log
        await handle.close()
        expected = b"".join(payloads)
        for path in (*paths.values(), log):
            with open(path, "rb") as f:
                assert f.read().endswith(expected), f"{path}: the writers wrote different bytes"

    return {"plain": plain, "reopen": reopen, "hop": hop, "adapter_hop": adapter_hop, "runtime": runtime}, close


async def one_round(
    workdir: str, tag: str, compression: str, batches: list[list[Event]], payloads: list[bytes], block: int
) -> dict[str, tuple[float, float]]:
    """Every writer writes every batch, the writers taking turns block by block."""
    writers, close = await _writers(workdir, tag, compression, batches, payloads)
    wall = dict.fromkeys(WRITERS, 0.0)
    cpu = dict.fromkeys(WRITERS, 0.0)
    for index, start in enumerate(range(0, len(batches), block)):
        end = min(start + block, len(batches))
        turn = index % len(WRITERS)
        for name in WRITERS[turn:] + WRITERS[:turn]:
            w, c = time.perf_counter(), time.process_time()
            await writers[name](start, end)
            wall[name] += time.perf_counter() - w
            cpu[name] += time.process_time() - c
    await close()
    return {k: (wall[k], cpu[k]) for k in WRITERS}


def cpu_only(batches: list[list[Event]], compression: str) -> float:
    """The runtime's per-batch CPU work without I/O: validate (no copy), then encode once."""
    start = time.perf_counter()
    for batch in batches:
        encode_batch([checked_as_is(event) for event in batch], compression)
    return time.perf_counter() - start


def bench(compression: str, args: argparse.Namespace, workdir: str) -> None:
    batches = make_batches(args.batches, args.events)
    payloads = [encode_batch(batch, compression) for batch in batches]
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in WRITERS}
    for r in range(args.rounds):
        measured = trio.run(one_round, workdir, f"{compression}-{r}", compression, batches, payloads, args.block)
        for k, v in measured.items():
            times[k].append(v)
    wall = {k: statistics.median(w for w, _ in v) for k, v in times.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in times.items()}
    encode = min(cpu_only(batches, compression) for _ in range(args.rounds))
    n = args.batches
    events = n * args.events
    print(
        f"compression={compression}  batches={n}  events/batch={args.events}  bytes/batch={sum(map(len, payloads)) // n}  "
        f"rounds={args.rounds}  block={args.block}"
    )
    print_table(
        ["writer", "wall s (median)", "batches/s", "events/s", "wall ms/batch", "CPU ms/batch"],
        [[LABELS[k], wall[k], n / wall[k], events / wall[k], 1e3 * wall[k] / n, 1e3 * cpu[k] / n] for k in WRITERS],
    )
    ms = {k: 1e3 * wall[k] / n for k in WRITERS}
    print(
        f"runtime / one-hop floor (write+fsync in one trio thread hop): {wall['runtime'] / wall['hop']:.3f}x   "
        f"runtime / plain write+fsync: {wall['runtime'] / wall['plain']:.3f}x   "
        f"(runtime {ms['runtime']:.3f}, floor {ms['hop']:.3f}, plain {ms['plain']:.3f} wall ms/batch)"
    )
    print(
        f"CPU (process, every thread): runtime / one-hop floor {cpu['runtime'] / cpu['hop']:.3f}x   "
        f"runtime / plain {cpu['runtime'] / cpu['plain']:.3f}x   "
        f"(runtime {1e3 * cpu['runtime'] / n:.3f}, floor {1e3 * cpu['hop'] / n:.3f}, plain {1e3 * cpu['plain'] / n:.3f} CPU ms/batch)"
    )
    print(
        f"runtime / the adapter's own hop (write+fsync in one run_in_thread): {wall['runtime'] / wall['adapter_hop']:.3f}x   "
        f"trio hop floor / plain: {wall['hop'] / wall['plain']:.3f}x   adapter hop / plain: {wall['adapter_hop'] / wall['plain']:.3f}x   "
        f"validate+encode (CPU, no I/O): {1e3 * encode / n:.3f} ms/batch"
    )
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=300)
    parser.add_argument("--events", type=int, default=8, help="events per batch")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--block", type=int, default=10, help="batches a writer writes before the next takes its turn")
    parser.add_argument("--compression", choices=("zstd", "none", "both"), default="both")
    parser.add_argument("--dir", default=None, help="directory on the filesystem to measure (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as workdir:
        for compression in ("zstd", "none") if args.compression == "both" else (args.compression,):
            bench(compression, args, workdir)


if __name__ == "__main__":
    main()
