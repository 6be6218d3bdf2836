"""Probe the command line with several hundred bad inputs; count tracebacks, hangs, exit codes
and modified inputs.

    python benchmarks/probe_inputs.py [--timeout 20] [--workers 2] [--json OUT]

Each case runs ``python -m dsh_sim ...`` in a fresh directory (its cwd, so default outputs
such as ``scenarios/found`` or ``reports/`` would land there) with a timeout.  A case is
*clean* when it exits 2, prints exactly one stderr line starting ``dsh-sim:``, no
traceback, within the timeout, and leaves every file of its directory byte-identical with
nothing added.  The cases: scenario files broken every way the format allows (syntax,
nesting, each key and each step arg with wrong types and out-of-range values, unknown
names), session logs (damaged, bombs, FIFOs, devices, directories, names that lie), and
flags (NaN, infinities, negatives, output paths that are files or directories).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE = os.path.join(ROOT, "scenarios", "starter", "boundary-2-3-pay.json")
STORAGE = os.path.join(ROOT, "scenarios", "starter", "fsync-fail-on-append.json")
BAD_VALUES: list[Any] = ["x", -1, 1e308, True, None, [], {}, "NaN", 10**30]
Case = tuple[str, list[str], Callable[[str], None]]  # name, argv (with {d} = the case dir), setup


def _write(path: str, data: bytes | str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data.encode() if isinstance(data, str) else data)


def _scenario(edit: Callable[[dict[str, Any]], None], base: str = BASE) -> Callable[[str], None]:
    def setup(d: str) -> None:
        with open(base, encoding="utf-8") as handle:
            obj = json.load(handle)
        edit(obj)
        _write(os.path.join(d, "s.json"), json.dumps(obj))

    return setup


def _raw(text: bytes | str, name: str = "s.json") -> Callable[[str], None]:
    return lambda d: _write(os.path.join(d, name), text)


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(obj: dict[str, Any]) -> None:
        target = obj
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


def _del(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda obj: obj.pop(key, None)


def scenario_cases() -> list[tuple[str, Callable[[str], None]]]:
    out: list[tuple[str, Callable[[str], None]]] = [
        ("empty", _raw("")),
        ("not-json", _raw("{not json")),
        ("nan-literal", _raw('{"format": "dsh-sim-scenario", "version": 1, "seed": NaN, "steps": []}')),
        ("not-utf8", _raw(b"\xff\xfe{}")),
        ("array", _raw("[]")),
        ("deep-array", _raw("[" * 100_000 + "]" * 100_000)),
        ("deep-in-steps", _raw('{"format": "dsh-sim-scenario", "version": 1, "seed": 1, "steps": [' + "[" * 50_000 + "]" * 50_000 + "]}")),
        ("deep-in-origin", _scenario(_set(["origin"], json.loads("[" * 500 + "]" * 500)))),
        ("huge", _raw('{"format": "dsh-sim-scenario", "version": 1, "seed": 1, "steps": [], "description": "' + "x" * (17 << 20) + '"}')),
        ("format", _scenario(_set(["format"], "other"))),
        ("version-new", _scenario(_set(["version"], 9))),
        ("unknown-top-key", _scenario(_set(["stpes"], []))),
        ("unknown-op", _scenario(_set(["steps", 0, "op"], "bot"))),
        ("unknown-arg", _scenario(_set(["steps", 0, "args"], {"secs": 1}))),
        ("advance-secs", _scenario(lambda o: o["steps"].append({"op": "advance", "args": {"secs": 1}}))),
        ("advance-huge", _scenario(lambda o: o["steps"].append({"op": "advance", "args": {"seconds": 1e308}}))),
        ("append-1e8", _scenario(lambda o: o["steps"].append({"op": "append", "args": {"count": 1e8}}), STORAGE)),
        ("append-int-1e8", _scenario(lambda o: o["steps"].append({"op": "append", "args": {"count": 100_000_000}}), STORAGE)),
        ("seed-v0-1e7", _scenario(lambda o: o["steps"].insert(0, {"op": "seed_v0", "args": {"turns": 10_000_000}}), STORAGE)),
        ("point-typo", _scenario(_set(["steps", 1, "args", "rule", "point"], "world.respnd"))),
        ("match-key", _scenario(_set(["steps", 1, "args", "rule", "match"], {"calid": "c1"}))),
        ("match-call", _scenario(_set(["steps", 1, "args", "rule", "match"], {"root_call_id": "c9"}))),
        ("crash-kind", _scenario(_set(["steps", 1, "args", "rule", "crash"], {"kind": "powr"}))),
        ("crash-state", _scenario(_set(["steps", 1, "args", "rule", "crash"], {"kind": "power", "state": "half"}))),
        (
            "crash-cut-garbage",
            _scenario(_set(["steps", 1, "args", "rule", "crash"], {"kind": "power", "state": "cut", "cut": {"files": [1]}})),
        ),
        ("action", _scenario(_set(["steps", 1, "args", "rule", "action"], "explode"))),
        ("action-not-here", _scenario(_set(["steps", 1, "args", "rule", "action"], "fsync_fail"))),
        ("tool-typo", _scenario(_set(["steps", 2, "args", "responses", 0, "tool_calls", 1, "name"], "pya"))),
        ("invariant-typo", _scenario(_set(["expect"], {"outcome": "violation", "invariant": "verdict_sound"}))),
        ("mutant", _scenario(_set(["mutants"], ["nope"]))),
        ("lifetime-99", _scenario(_set(["steps", 1, "args", "rule", "lifetime"], 99))),
        ("agent-op-on-storage", _scenario(lambda o: o["steps"].append({"op": "prompt", "args": {}}), STORAGE)),
        (
            "world-point-on-storage",
            _scenario(lambda o: o["steps"].append({"op": "arm", "args": {"rule": {"point": "world.respond", "action": "crash"}}}), STORAGE),
        ),
        ("duplicate-call-id", _scenario(_set(["steps", 2, "args", "responses", 0, "tool_calls", 1, "id"], "c0"))),
        ("approval-typo", _scenario(_set(["steps", 2, "args", "approvals"], ["allowed_once"]))),
    ]
    for key in ("name", "description", "machine", "seed", "config", "fault_plan", "steps", "expect", "trace_digest", "mutants", "origin"):
        for value in BAD_VALUES:
            valid = (("trace_digest", None), ("name", None), ("name", "x"), ("name", "NaN"), ("description", "x"), ("description", "NaN"))
            if (key, value) in valid or (key in ("fault_plan", "mutants", "steps") and value == []) or (key, value) == ("expect", {}):
                continue  # valid
            if key in ("config", "origin") and value == {}:
                continue
            out.append((f"top-{key}-{json.dumps(value)[:12]}", _scenario(_set([key], value))))
    for key in (
        "compression",
        "checkpoint_policy",
        "approval_policy",
        "sandbox_mode",
        "session_id",
        "root",
        "max_parallel_tool_calls",
        "chunk_delay",
        "approval_tools",
    ):
        for value in ("lzma", -1, 1e308, [], 0):
            if (key, value) in (("checkpoint_policy", 0), ("session_id", "lzma"), ("chunk_delay", 0)) or (
                key == "approval_tools" and value == []
            ):
                continue
            out.append((f"config-{key}-{json.dumps(value)[:12]}", _scenario(_set(["config"], {key: value}))))
    ops = {
        "advance": ("seconds",),
        "cancel": ("settle",),
        "append": ("count", "size"),
        "seed_v0": ("turns", "notes", "torn"),
        "prompt": ("text", "responses", "approvals", "horizon"),
        "set_approval_policy": ("policy",),
        "set_sandbox_mode": ("mode",),
        "crash_now": ("kind", "state", "torn_fraction"),
    }
    for op, fields in ops.items():
        base = STORAGE if op in ("append", "seed_v0") else BASE
        for field in fields:
            for value in ("zz", -5, 1e308, [1]):
                if (field, value) in (("text", "zz"),):
                    continue
                out.append(
                    (
                        f"arg-{op}-{field}-{json.dumps(value)[:8]}",
                        _scenario(lambda o, op=op, f=field, v=value: o["steps"].append({"op": op, "args": {f: v}}), base),
                    )
                )
    for field in ("point", "action", "hit", "times", "lifetime", "match", "errno", "delay", "corrupt_offset"):
        for value in ("zz", -5, 1e308, [1]):
            if (field, value) == ("corrupt_offset", -5):
                continue  # valid: from the end
            out.append((f"rule-{field}-{json.dumps(value)[:8]}", _scenario(_set(["steps", 1, "args", "rule", field], value))))
    return out


def _fifo(name: str) -> Callable[[str], None]:
    return lambda d: os.mkfifo(os.path.join(d, name))


def _zstd_bomb(d: str) -> None:
    import zstandard

    header = zstandard.ZstdCompressor(write_checksum=True).compress(b'{"type":"session","version":3,"id":"s","createdAt":0}\n')
    rle = ((128 * 1024) << 3 | 1 << 1).to_bytes(3, "little") + b"a"
    last = ((128 * 1024) << 3 | 1 << 1 | 1).to_bytes(3, "little") + b"a"
    frame = (0xFD2FB528).to_bytes(4, "little") + bytes([0x00, 0x70]) + rle * 16_383 + last
    _write(os.path.join(d, "session.v3.jsonl.zstd"), header + frame)


def _log(data: bytes, name: str = "session.v3.jsonl") -> Callable[[str], None]:
    return lambda d: _write(os.path.join(d, name), data)


HEADER = b'{"type":"session","version":3,"id":"s","createdAt":0}\n'


def _session(*records: bytes) -> Callable[[str], None]:
    """A log where the runtime keeps session ``s`` of a root (its identity holds), so the
    refusal under test is the log's own and not the header's."""

    def setup(d: str) -> None:
        os.makedirs(os.path.join(d, "_no-cwd", "s"))
        _write(os.path.join(d, "_no-cwd", "s", "session.v3.jsonl"), VALID_HEADER + b"".join(records))

    return setup


VALID_HEADER = b'{"type":"session","version":3,"id":"s","createdAt":0,"isSeeded":false,"delegationDepth":0}\n'
START = b'{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}\n'
STEP = b'{"type":"step/start","seq":1,"time":0,"data":{"turn":1,"step":1}}\n'


def log_cases() -> list[tuple[str, list[str], Callable[[str], None]]]:
    nothing: Callable[[str], None] = lambda d: None  # noqa: E731
    logs: list[tuple[str, str, Callable[[str], None]]] = [
        ("empty", "{d}/session.v3.jsonl", _log(b"")),
        ("garbage", "{d}/session.v3.jsonl", _log(b"garbage\x00\xff")),
        ("garbage-zstd", "{d}/session.v3.jsonl.zstd", _log(b"garbage", "session.v3.jsonl.zstd")),
        ("zstd-magic-only", "{d}/session.v3.jsonl.zstd", _log(b"\x28\xb5\x2f\xfd", "session.v3.jsonl.zstd")),
        ("zstd-bomb", "{d}/session.v3.jsonl.zstd", _zstd_bomb),
        (
            "deep-record",
            "{d}/session.v3.jsonl",
            _log(HEADER + b'{"type":"turn/start","seq":0,"time":0,"data":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"),
        ),
        (
            "deep-record-900",
            "{d}/session.v3.jsonl",
            _log(HEADER + b'{"type":"turn/start","seq":0,"time":0,"data":{"turn":1,"x":' + b"[" * 900 + b"]" * 900 + b"}}\n"),
        ),
        ("deep-header", "{d}/session.v3.jsonl", _log(b'{"type":"session","x":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n")),
        ("header-not-object", "{d}/session.v3.jsonl", _log(b"[1,2]\n")),
        ("v0-garbage", "{d}/session.jsonl", _log(b"garbage\n", "session.jsonl")),
        ("v0-empty", "{d}/session.jsonl", _log(b"", "session.jsonl")),
        ("v9", "{d}/session.v9.jsonl", _log(HEADER, "session.v9.jsonl")),
        ("fifo", "{d}/session.v3.jsonl", _fifo("session.v3.jsonl")),
        ("fifo-plain-name", "{d}/log", _fifo("log")),
        ("dev-zero", "/dev/zero", nothing),
        ("dev-null", "/dev/null", nothing),
        ("dir-named-log", "{d}/session.v3.jsonl", lambda d: os.mkdir(os.path.join(d, "session.v3.jsonl"))),
        ("empty-dir", "{d}", nothing),
        ("missing", "{d}/nope", nothing),
        ("symlink-loop", "{d}/loop", lambda d: os.symlink(os.path.join(d, "loop"), os.path.join(d, "loop"))),
        ("binary-file", "{d}/x.bin", _log(os.urandom(4096), "x.bin")),
        # an open turn whose events repair must read, in shapes it cannot (once a KeyError)
        ("open-turn-without-turn", "{d}", _session(b'{"type":"turn/start","seq":0,"time":0,"data":{}}\n')),
        ("open-turn-data-list", "{d}", _session(b'{"type":"turn/start","seq":0,"time":0,"data":[1]}\n')),
        (
            "open-assistant-content-not-list",
            "{d}",
            _session(
                START,
                STEP,
                b'{"type":"assistant/message","seq":2,"time":0,"surfaceOp":"append","data":{"step":1,"message":{"content":7}}}\n',
            ),
        ),
        (
            "open-tool-call-id-unhashable",
            "{d}",
            _session(
                START,
                STEP,
                b'{"type":"assistant/message","seq":2,"time":0,"surfaceOp":"append","data":{"step":1,"message":{"content":[{"type":"tool-call","id":{"a":1}}]}}}\n',
            ),
        ),
    ]
    out = []
    for command in ("inspect", "repair", "migrate"):
        for name, path, setup in logs:
            out.append((f"{command}-{name}", [command, path], setup))
        out.append((f"{command}-json-{logs[1][0]}", [command, logs[1][1], "--json"], logs[1][2]))
    return out


def flag_cases() -> list[Case]:
    good = BASE
    scenario = lambda d: _write(os.path.join(d, "s.json"), open(good, encoding="utf-8").read())  # noqa: E731, SIM115
    file_ = lambda d: _write(os.path.join(d, "afile"), "x")  # noqa: E731
    mkdir = lambda d: os.mkdir(os.path.join(d, "adir"))  # noqa: E731
    nothing: Callable[[str], None] = lambda d: None  # noqa: E731
    out: list[Case] = []
    for value in ("nan", "inf", "-inf", "-1", "abc", "1e309"):
        out.append((f"fuzz-budget-{value}", ["fuzz", "--budget", value], nothing))
        out.append((f"run-budget-{value}", ["run", "--budget", value], nothing))
        out.append((f"mutants-budget-{value}", ["mutants", "--budget", value], nothing))
    for value in ("-1", "0", "abc", "1.5", "True"):
        out.append((f"explore-bound-{value}", ["explore", "{d}/s.json", "--bound", value], scenario))
        out.append((f"run-workers-{value}", ["run", "--workers", value], nothing))
        out.append((f"fuzz-examples-{value}", ["fuzz", "--examples", value], nothing))
        out.append((f"fuzz-seed-{value}", ["fuzz", "--seed", value, "--examples", "1"], nothing)) if value not in ("0",) else None
    out += [
        ("fuzz-results-dir", ["fuzz", "--examples", "1", "--results", "{d}/adir"], mkdir),
        ("fuzz-results-in-file", ["fuzz", "--examples", "1", "--results", "{d}/afile/x.json"], file_),
        ("fuzz-found-dir-file", ["fuzz", "--examples", "1", "--found-dir", "{d}/afile"], file_),
        ("fuzz-mutant", ["fuzz", "--mutant", "nope", "--examples", "1"], nothing),
        ("fuzz-machine", ["fuzz", "--machine", "nope"], nothing),
        ("explore-results-dir", ["explore", "{d}/s.json", "--results", "{d}/adir"], lambda d: (scenario(d), mkdir(d))),
        ("explore-found-dir-file", ["explore", "{d}/s.json", "--found-dir", "{d}/afile"], lambda d: (scenario(d), file_(d))),
        ("explore-model", ["explore", "{d}/s.json", "--model", "nope"], scenario),
        ("replay-trace-out-dir", ["replay", "{d}/s.json", "--trace-out", "{d}/adir"], lambda d: (scenario(d), mkdir(d))),
        ("replay-trace-out-in-file", ["replay", "{d}/s.json", "--trace-out", "{d}/afile/t"], lambda d: (scenario(d), file_(d))),
        ("replay-missing", ["replay", "{d}/nope.json"], nothing),
        ("replay-empty-dir", ["replay", "{d}"], nothing),
        ("replay-fifo", ["replay", "{d}/f.json"], _fifo("f.json")),
        ("replay-dev-zero", ["replay", "/dev/zero"], nothing),
        ("validate-fifo", ["validate", "{d}/f.json"], _fifo("f.json")),
        ("report-out-file", ["report", "--out", "{d}/afile", "--from", "{d}/afile"], file_),
        ("report-from-garbage", ["report", "--out", "{d}/r", "--from", "{d}/afile"], file_),
        ("report-from-empty-dir", ["report", "--out", "{d}/r", "--from", "{d}/adir"], mkdir),
        ("report-from-missing", ["report", "--out", "{d}/r", "--from", "{d}/nope"], nothing),
        ("run-out-file", ["run", "--out", "{d}/afile", "--budget", "1"], file_),
        (
            "run-invalid-corpus-file",
            ["run", "--scenarios", "{d}/sc", "--budget", "1", "--out", "{d}/r"],
            lambda d: _write(os.path.join(d, "sc", "bad.json"), "{}"),
        ),
        ("run-from-garbage", ["run", "--from", "{d}/afile", "--budget", "1", "--out", "{d}/r"], file_),
        ("mutants-only", ["mutants", "--only", "nope"], nothing),
        ("mutants-results-dir", ["mutants", "--only", "persist.skip_fsync_on_append", "--results", "{d}/adir"], mkdir),
        ("demo-script-not-script", ["demo", "--root", "{d}/root", "--script", "{d}/afile"], file_),
        ("demo-script-json-list", ["demo", "--root", "{d}/root", "--script", "{d}/s.json"], _raw("[1, 2]")),
        ("demo-script-scenario", ["demo", "--root", "{d}/root", "--script", "{d}/s.json"], scenario),
        ("demo-script-dir", ["demo", "--root", "{d}/root", "--script", "{d}/adir"], mkdir),
        ("demo-root-file", ["demo", "--root", "{d}/afile"], file_),
        ("demo-session-empty", ["demo", "--root", "{d}/root", "--session", ""], nothing),
        ("new-tool", ["new", "--tool", "pya"], nothing),
        ("new-out-exists", ["new", "--out", "{d}/afile"], file_),
        ("new-out-dir", ["new", "--out", "{d}/adir"], mkdir),
        ("schema-out-dir", ["schema", "--out", "{d}/adir"], mkdir),
        ("unknown-command", ["frobnicate"], nothing),
        ("unknown-flag", ["replay", "--frob", "{d}/s.json"], scenario),
    ]
    return out


def cases() -> list[Case]:
    out: list[Case] = []
    for index, (name, setup) in enumerate(scenario_cases()):
        out.append((f"replay-scenario-{name}", ["replay", "{d}/s.json"], setup))
        if index < 40:  # the hand-picked cases go to explore too (it refuses at the same load)
            out.append((f"explore-scenario-{name}", ["explore", "{d}/s.json"], setup))
    out += log_cases() + flag_cases()
    return out


def snapshot(d: str) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, files in os.walk(d):
        for name in dirnames:
            out[os.path.relpath(os.path.join(dirpath, name), d)] = "dir"
        for name in files:
            path = os.path.join(dirpath, name)
            if os.path.islink(path) or not os.path.isfile(path):
                out[os.path.relpath(path, d)] = "special"
                continue
            with open(path, "rb") as handle:
                out[os.path.relpath(path, d)] = hashlib.sha256(handle.read()).hexdigest()
    return out


def run_case(case: Case, timeout: float, python: str, env: dict[str, str]) -> dict[str, Any]:
    name, argv, setup = case
    d = tempfile.mkdtemp(prefix="probe-")
    try:
        setup(d)
        before = snapshot(d)
        args = [a.replace("{d}", d) for a in argv]
        try:
            done = subprocess.run([python, "-m", "dsh_sim", *args], cwd=d, env=env, capture_output=True, timeout=timeout, check=False)
            code, err, hang = done.returncode, done.stderr.decode(errors="replace"), False
        except subprocess.TimeoutExpired as exc:
            code, err, hang = None, (exc.stderr or b"").decode(errors="replace"), True
        after = snapshot(d)
        lines = [line for line in err.splitlines() if line.strip()]
        return {
            "case": name,
            "argv": argv,
            "exit": code,
            "hang": hang,
            "traceback": "Traceback (most recent call last)" in err,
            "one_line": len(lines) == 1 and lines[0].startswith("dsh-sim"),
            "modified": before != after,
            "stderr": err.strip().splitlines()[-1][:200] if err.strip() else "",
        }
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", default=None, help="write every case's row here")
    parser.add_argument("--only", default=None, help="only cases whose name contains this")
    parser.add_argument("--pythonpath", default=None, help="import dsh_sim from here (e.g. an older checkout, for before/after figures)")
    args = parser.parse_args()
    all_cases = [c for c in cases() if args.only is None or args.only in c[0]]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    if args.pythonpath:
        env["PYTHONPATH"] = os.path.abspath(args.pythonpath)
    with ThreadPoolExecutor(args.workers) as pool:
        rows = list(pool.map(lambda c: run_case(c, args.timeout, sys.executable, env), all_cases))
    clean = [r for r in rows if r["exit"] == 2 and r["one_line"] and not r["traceback"] and not r["modified"] and not r["hang"]]
    figures = {
        "cases": len(rows),
        "clean_refusals": len(clean),
        "tracebacks": sum(r["traceback"] for r in rows),
        "hangs": sum(r["hang"] for r in rows),
        "exit_not_2": sum(r["exit"] != 2 for r in rows if not r["hang"]),
        "not_one_line": sum(not r["one_line"] for r in rows if not r["hang"]),
        "modified_or_written": sum(r["modified"] for r in rows),
    }
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"figures": figures, "rows": rows}, handle, indent=1)
    for row in rows:
        if row not in clean:
            print(
                f"{row['case']}: exit {row['exit']}{' HANG' if row['hang'] else ''}{' TRACEBACK' if row['traceback'] else ''}"
                f"{' MODIFIED' if row['modified'] else ''}  {row['stderr']}"
            )
    print(json.dumps(figures))
    return 0 if len(clean) == len(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
