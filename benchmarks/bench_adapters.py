"""The simulated adapters against the production adapters, same agent session, one run.

One agent session — the real runtime (``open_runtime``: write-behind store, JSONL backend,
checkpoint policy mounted, approval service), the deterministic ``ScriptModel``, the file
tools ``write_file`` and ``read_file`` — runs ``--turns`` turns, each of three model steps
(write a note, read it back, answer).  It runs twice per round, alternating:

* simulated ports: ``ProcessView`` over an in-memory SimFS ``Disk``, ``SimClock`` over a
  ``MockClock`` (the trio clock of the run), ``SimIds`` from a seeded RNG — the adapters a
  simulation gives the runtime, without the simulator's process harness around them;
* production ports: ``production_ports()`` (``OsFileSystem``, every call one worker-thread
  hop, ``run_in_thread``, real ``fsync``; wall clock; random ids) on a real temp directory
  (``--dir`` to pick the filesystem, e.g. ``/dev/shm`` to take the disk out).

Figure: wall milliseconds per turn (median over turns, then over ``--rounds`` rounds) both
ways, and the ratio production / simulated.  Both runs must log the same number of events.

    python benchmarks/bench_adapters.py --turns 30 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from typing import Any

import trio
from _bench import median, print_table

from dsh_sim.adapters.simfs import Disk, ProcessView
from dsh_sim.engine.determinism import SimClock, SimIds, new_clock
from dsh_sim.engine.logs import capture_runtime_logs
from runtime.adapters import production_ports
from runtime.adapters.script_model import ScriptedResponse, ScriptModel
from runtime.agent.runtime import RuntimeConfig, open_runtime
from runtime.persistence.layout import SessionPaths
from runtime.ports import Ports
from runtime.tools.files import ReadFileTool, WriteFileTool

SESSION = "bench-session"


def script(turns: int) -> list[ScriptedResponse]:
    out = []
    for n in range(turns):
        text = f"turn {n}: " + "the quick brown fox jumps over the lazy dog " * 8
        out += [
            ScriptedResponse.from_json(
                {
                    "text": "writing the note",
                    "tool_calls": [
                        {"id": f"w{n}", "name": "write_file", "arguments": {"path": f"notes/note-{n % 4}.txt", "content": text}}
                    ],
                }
            ),
            ScriptedResponse.from_json(
                {
                    "text": "reading it back",
                    "tool_calls": [{"id": f"r{n}", "name": "read_file", "arguments": {"path": f"notes/note-{n % 4}.txt"}}],
                }
            ),
            ScriptedResponse.from_json({"text": f"done with turn {n}, the note is saved"}),
        ]
    return out


async def session(ports: Ports, root: str, workspace: str, turns: int, compression: str) -> dict[str, Any]:
    """Create the session, run the turns, close; per-turn wall times and the event count."""
    started = time.perf_counter()
    await ports.fs.mkdir(f"{workspace}/notes", 0o755)
    model = ScriptModel(script(turns), provider="bench", model="script")
    tools = [ReadFileTool(ports.fs, workspace), WriteFileTool(ports.fs, workspace)]
    config = RuntimeConfig(root=root, compression=compression, system="You are the benchmark agent.")
    per_turn = []
    async with open_runtime(ports, config, model, tools) as rt:
        agent = await rt.create_agent(SESSION, cwd=workspace)
        for n in range(turns):
            start = time.perf_counter()
            outcome = await agent.run_turn(f"prompt {n}")
            per_turn.append(time.perf_counter() - start)
            if outcome.reason["kind"] != "completed" or outcome.steps != 3:
                raise RuntimeError(f"turn {n} ended {outcome.reason} after {outcome.steps} step(s)")
        events = len(agent.session.events)
        await rt.close_agent(agent)
    return {"turn": median(per_turn), "total": time.perf_counter() - started, "events": events}


def simulated(turns: int, compression: str) -> dict[str, Any]:
    root, workspace = "/sim/sessions", "/sim/workspace"
    disk = Disk()
    disk.mkdirs_durable(root)
    disk.mkdirs_durable(workspace)
    clock = new_clock()
    view = ProcessView(disk, 1, now_ns=lambda: int(clock.current_time() * 1e9))
    ports = Ports(fs=view, clock=SimClock(clock), ids=SimIds(random.Random(7)))
    result = trio.run(session, ports, root, workspace, turns, compression, clock=clock)
    result["bytes"] = len(disk.read_path(SessionPaths.of(root, workspace, SESSION, compression).log) or b"")
    return result


def production(turns: int, compression: str, where: str | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(dir=where) as tmp:
        root, workspace = os.path.join(tmp, "sessions"), os.path.join(tmp, "workspace")
        os.makedirs(root)
        os.makedirs(workspace)
        result = trio.run(session, production_ports(), root, workspace, turns, compression)
        result["bytes"] = os.path.getsize(SessionPaths.of(root, workspace, SESSION, compression).log)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30, help="turns per session (default 30)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating sim/production rounds (default 3)")
    parser.add_argument("--compression", choices=("zstd", "none"), default="zstd")
    parser.add_argument("--dir", default=None, help="parent of the production temp dir (default: the system temp dir)")
    args = parser.parse_args()

    sims, prods = [], []
    with capture_runtime_logs():
        for _ in range(args.rounds):
            sims.append(simulated(args.turns, args.compression))
            prods.append(production(args.turns, args.compression, args.dir))
    if {r["events"] for r in sims} != {r["events"] for r in prods}:
        raise SystemExit(f"the two sessions differ: {sims[0]['events']} vs {prods[0]['events']} events")
    where = args.dir or tempfile.gettempdir()
    sim_turn, prod_turn = median([r["turn"] for r in sims]), median([r["turn"] for r in prods])
    sim_total, prod_total = median([r["total"] for r in sims]), median([r["total"] for r in prods])
    print(
        f"{args.turns} turns x 3 steps (write_file, read_file, answer), {sims[0]['events']} events, compression={args.compression}, {args.rounds} rounds"
    )
    print_table(
        ["adapters", "ms / turn", "session s", "log bytes"],
        [
            ["simulated (SimFS ProcessView, SimClock, SimIds)", 1e3 * sim_turn, sim_total, sims[0]["bytes"]],
            [f"production (OsFileSystem on {where})", 1e3 * prod_turn, prod_total, prods[0]["bytes"]],
        ],
    )
    print(f"ratio production / simulated: {prod_turn / sim_turn:.2f}x per turn, {prod_total / sim_total:.2f}x per session")


if __name__ == "__main__":
    main()
