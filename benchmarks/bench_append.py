"""Append latency of the runtime's backend against plain ``os`` calls, in one run.

Each batch of N events is appended durably through ``WriteHandle.append`` over the production
OS adapter: validate and copy the events, encode them (one zstd frame, or JSONL lines), then
write + fsync in one hop off the event loop on the descriptor the handle keeps open.  The
baseline writes the very same encoded bytes with ``os.write`` + ``os.fsync`` on a descriptor
kept open (the floor any durable append pays); a second reference opens and closes the file
around every batch, as the runtime used to; a third does the plain write + fsync in one trio
thread hop (``trio.to_thread.run_sync``), the floor of any append that leaves the event loop
for its I/O, as the runtime's does, so the runtime's own cost above that floor shows apart
from the hop's.  Rounds alternate between the writers so disk
noise hits all of them; the ratio of medians is what to compare across machines.

The figure is wall time: an append is I/O-bound (its cost is mostly waiting for fsync), and
CPU time would leave the fsync out.  CPU ms per batch is printed beside it.

    python benchmarks/bench_append.py --batches 300 --events 8
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import trio
from _bench import print_table

from runtime.adapters import production_ports
from runtime.persistence.backend import JsonlBackend
from runtime.persistence.header import SessionHeader
from runtime.persistence.log_format import encode_batch, encode_header
from runtime.session.events import Event, checked_copy


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


async def runtime_round(root: str, name: str, compression: str, batches: list[list[Event]]) -> tuple[float, float, str]:
    backend = JsonlBackend(root, production_ports(), compression=compression)
    handle = await backend.create(SessionHeader(name, 1000))
    await handle.flush()  # first publication (header only) is not part of the measurement
    start, cpu = time.perf_counter(), time.process_time()
    for batch in batches:
        await handle.append(batch)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    path = handle.paths.log
    await handle.close()
    return elapsed, cpu, path


def _prepared(path: str, header: bytes) -> None:
    with open(path, "wb") as f:
        f.write(header)
        os.fsync(f.fileno())


def plain_round(path: str, header: bytes, payloads: list[bytes]) -> tuple[float, float]:
    """write + fsync per batch on one descriptor kept open."""
    _prepared(path, header)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        start, cpu = time.perf_counter(), time.process_time()
        for payload in payloads:
            os.write(fd, payload)
            os.fsync(fd)
        return time.perf_counter() - start, time.process_time() - cpu
    finally:
        os.close(fd)


async def hop_round(path: str, header: bytes, payloads: list[bytes]) -> tuple[float, float]:
    """write + fsync per batch in one trio thread hop, on a descriptor kept open: the floor of
    any append that, like the runtime's, leaves the event loop for its I/O."""
    _prepared(path, header)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)

    def write_fsync(payload: bytes) -> None:
        os.write(fd, payload)
        os.fsync(fd)

    try:
        start, cpu = time.perf_counter(), time.process_time()
        for payload in payloads:
            await trio.to_thread.run_sync(write_fsync, payload)
        return time.perf_counter() - start, time.process_time() - cpu
    finally:
        os.close(fd)


def reopen_round(path: str, header: bytes, payloads: list[bytes]) -> tuple[float, float]:
    """open + write + fsync + close per batch."""
    _prepared(path, header)
    start, cpu = time.perf_counter(), time.process_time()
    for payload in payloads:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)
    return time.perf_counter() - start, time.process_time() - cpu


def cpu_only(batches: list[list[Event]], compression: str) -> float:
    """The runtime's per-batch CPU work without I/O: validate-and-copy, then encode."""
    start = time.perf_counter()
    for batch in batches:
        encode_batch([checked_copy(event) for event in batch], compression)
    return time.perf_counter() - start


def bench(compression: str, args: argparse.Namespace, workdir: str) -> None:
    batches = make_batches(args.batches, args.events)
    payloads = [encode_batch(batch, compression) for batch in batches]
    header = encode_header(SessionHeader("x", 1000), compression)
    times: dict[str, list[tuple[float, float]]] = {"plain": [], "reopen": [], "hop": [], "runtime": []}
    for r in range(args.rounds):
        times["plain"].append(plain_round(os.path.join(workdir, f"plain-{compression}-{r}"), header, payloads))
        times["reopen"].append(reopen_round(os.path.join(workdir, f"reopen-{compression}-{r}"), header, payloads))
        times["hop"].append(trio.run(hop_round, os.path.join(workdir, f"hop-{compression}-{r}"), header, payloads))
        elapsed, cpu, path = trio.run(runtime_round, os.path.join(workdir, f"root-{compression}"), f"x{r}", compression, batches)
        times["runtime"].append((elapsed, cpu))
        with open(path, "rb") as f:
            stored = f.read()
        assert stored.endswith(b"".join(payloads)), "runtime and baseline wrote different bytes"
    wall = {k: statistics.median(w for w, _ in v) for k, v in times.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in times.items()}
    encode = min(cpu_only(batches, compression) for _ in range(args.rounds))
    n = args.batches
    events = n * args.events
    print(
        f"compression={compression}  batches={n}  events/batch={args.events}  bytes/batch={sum(map(len, payloads)) // n}  rounds={args.rounds}"
    )
    labels = {
        "plain": "plain os: write+fsync (fd kept open)",
        "reopen": "plain os: open+write+fsync+close",
        "hop": "one trio thread hop: write+fsync",
        "runtime": "runtime WriteHandle.append",
    }
    print_table(
        ["writer", "wall s (median)", "batches/s", "events/s", "wall ms/batch", "CPU ms/batch"],
        [
            [labels[k], wall[k], n / wall[k], events / wall[k], 1e3 * wall[k] / n, 1e3 * cpu[k] / n]
            for k in ("plain", "reopen", "hop", "runtime")
        ],
    )
    print(
        f"ratio runtime / plain write+fsync (wall): {wall['runtime'] / wall['plain']:.3f}x   "
        f"overhead {1e3 * (wall['runtime'] - wall['plain']) / n:+.3f} ms/batch, of which validate+encode (CPU) "
        f"{1e3 * encode / n:.3f} ms/batch; the rest is the event loop and the one thread hop per append"
    )
    print(
        f"floor of a one-hop append (bytes ready, write+fsync in one trio thread hop) / plain: {wall['hop'] / wall['plain']:.3f}x; "
        f"runtime / that floor: {wall['runtime'] / wall['hop']:.3f}x"
    )
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=300)
    parser.add_argument("--events", type=int, default=8, help="events per batch")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--compression", choices=("zstd", "none", "both"), default="both")
    parser.add_argument("--dir", default=None, help="directory on the filesystem to measure (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as workdir:
        for compression in ("zstd", "none") if args.compression == "both" else (args.compression,):
            bench(compression, args, workdir)


if __name__ == "__main__":
    main()
