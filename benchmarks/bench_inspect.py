"""``dsh-sim inspect --json`` of a long session log: wall time, CPU time and peak memory of the
whole command, beside a floor measured the same way in the same run.

    python benchmarks/bench_inspect.py              # a 50 MB raw log and a zstd log of as many events
    python benchmarks/bench_inspect.py --mb 10 --repeat 3

The log is a real one: the runtime's own write path appends turns of a user message each (raw
lines ~330 bytes).  The floor is the least any validating reader of JSONL does with it: a
Python process that reads the file, ``json.loads`` every line and writes ``json.dumps`` of every
record — no envelope checks, no lossless checks, no repair.  Target (issue 33): a 50 MB log in
≤ 10 s wall with bounded memory (peak RSS not growing with the log).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

FLOOR = """
import json, sys
with open(sys.argv[1], "rb") as f, open(sys.argv[2], "w") as out:
    next(f)
    for line in f:
        out.write(json.dumps(json.loads(line), ensure_ascii=False) + "\\n")
"""


def _message(turn: int, text: str) -> dict[str, object]:
    return {"id": f"u{turn}", "role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": "user"}}


def make_log(root: str, compression: str, target_bytes: int | None, turns: int | None) -> tuple[str, int]:
    """A session of user-message turns written by the runtime: (session directory, turns)."""
    import trio

    from runtime.adapters import production_ports
    from runtime.persistence.backend import JsonlBackend
    from runtime.persistence.header import SessionHeader
    from runtime.persistence.layout import SessionPaths
    from runtime.session.events import Event

    text = "x" * 180

    async def write() -> int:
        backend = JsonlBackend(root, production_ports(), compression=compression)
        handle = await backend.create(SessionHeader("big", 0))
        seq, turn, size = 0, 0, 0
        while (turns is None or turn < turns) and (target_bytes is None or size < target_bytes):
            batch = []
            for _ in range(200):
                turn += 1
                batch += [
                    Event("turn/start", seq, seq, {"turn": turn}),
                    Event("user/message", seq + 1, seq, _message(turn, text), surface_op="append"),
                    Event("turn/end", seq + 2, seq, {"turn": turn, "reason": {"kind": "completed"}}),
                ]
                seq += 3
            await handle.append(batch)
            size = os.path.getsize(handle.paths.log)
        await handle.close()
        return turn

    made = trio.run(write)
    return SessionPaths.of(root, None, "big", compression).session_dir, made


def measure(argv: list[str], stdout: str) -> tuple[float, float, int]:
    """(wall s, CPU s, peak RSS KiB) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(stdout, "w") as out:
        subprocess.run(argv, stdout=out, check=True, cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss  # maxrss of children: the largest so far (the command runs last)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=50.0, help="size of the raw log in MB (default 50)")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        raw_dir, turns = make_log(os.path.join(tmp, "raw"), "none", int(args.mb * 1_000_000), None)
        zstd_dir, _ = make_log(os.path.join(tmp, "zstd"), "zstd", None, turns)
        for name, session_dir in (("raw", raw_dir), ("zstd", zstd_dir)):
            log = os.path.join(session_dir, next(n for n in os.listdir(session_dir) if n.startswith("session.v")))
            out = os.path.join(tmp, "out.json")
            rows = []
            for _ in range(args.repeat):
                floor = measure([sys.executable, "-c", FLOOR, os.path.join(raw_dir, "session.v3.jsonl"), out], out + ".floor")
                command = measure([sys.executable, "-m", "dsh_sim", "inspect", "--json", session_dir], out)
                rows.append((floor, command))
            wall = statistics.median(c[0] for _, c in rows)
            cpu = statistics.median(c[1] for _, c in rows)
            floor_cpu = statistics.median(f[1] for f, _ in rows)
            rss = max(c[2] for _, c in rows)
            print(
                f"{name}: {os.path.getsize(log) / 1e6:.1f} MB, {3 * turns} events: inspect --json {wall:.2f} s wall, "
                f"{cpu:.2f} CPU-s ({cpu / floor_cpu:.2f}x the json.loads+dumps floor of the raw log, {floor_cpu:.2f} CPU-s), "
                f"peak RSS {rss / 1024:.0f} MiB, output {os.path.getsize(out) / 1e6:.1f} MB"
            )


if __name__ == "__main__":
    main()
