"""Append throughput of the runtime's backend against plain ``os`` calls, in one run.

Each batch of N events is appended durably through ``WriteHandle.append`` (encode, open,
fstat, write, fsync, close — every call through the production OS adapter, i.e. a
``trio.to_thread`` hop each).  The baseline writes the very same encoded bytes with
``os.open``/``os.write``/``os.fsync``/``os.close`` per batch.  Rounds alternate between the
two so disk noise hits both; the ratio of medians is what to compare across machines.

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


async def runtime_round(root: str, name: str, compression: str, batches: list[list[Event]]) -> tuple[float, str]:
    backend = JsonlBackend(root, production_ports(), compression=compression)
    handle = await backend.create(SessionHeader(name, 1000))
    await handle.flush()  # first publication (header only) is not part of the measurement
    start = time.perf_counter()
    for batch in batches:
        await handle.append(batch)
    elapsed = time.perf_counter() - start
    path = handle.paths.log
    await handle.close()
    return elapsed, path


def baseline_round(path: str, header: bytes, payloads: list[bytes]) -> float:
    with open(path, "wb") as f:
        f.write(header)
        os.fsync(f.fileno())
    start = time.perf_counter()
    for payload in payloads:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)
    return time.perf_counter() - start


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
    runtime_times: list[float] = []
    baseline_times: list[float] = []
    for r in range(args.rounds):
        base_path = os.path.join(workdir, f"baseline-{compression}-{r}")
        baseline_times.append(baseline_round(base_path, header, payloads))
        elapsed, path = trio.run(runtime_round, os.path.join(workdir, f"root-{compression}"), f"x{r}", compression, batches)
        runtime_times.append(elapsed)
        with open(path, "rb") as f:
            stored = f.read()
        assert stored.endswith(b"".join(payloads)), "runtime and baseline wrote different bytes"
    rt, bl = statistics.median(runtime_times), statistics.median(baseline_times)
    cpu = min(cpu_only(batches, compression) for _ in range(args.rounds))
    n = args.batches
    events = n * args.events
    print(
        f"compression={compression}  batches={n}  events/batch={args.events}  bytes/batch={sum(map(len, payloads)) // n}  rounds={args.rounds}"
    )
    print_table(
        ["writer", "s (median)", "batches/s", "events/s", "ms/batch"],
        [
            ["plain os (open+write+fsync+close)", bl, n / bl, events / bl, 1e3 * bl / n],
            ["runtime WriteHandle.append", rt, n / rt, events / rt, 1e3 * rt / n],
        ],
    )
    print(
        f"ratio runtime/plain (time): {rt / bl:.3f}x   overhead {1e3 * (rt - bl) / n:+.3f} ms/batch, "
        f"of which validate+encode (CPU) {1e3 * cpu / n:.3f} ms/batch; the rest is mostly the 5 thread hops per append"
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
