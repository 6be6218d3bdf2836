"""A held-out corpus of bad inputs for every ``dsh-sim`` subcommand that takes files or flags.

    python tools/probe_cli_heldout.py [--timeout 20] [--workers 2] [--only SUBSTRING] [--json OUT]

Written independently of ``benchmarks/probe_inputs.py`` (a second probe set its authors had
not seen).  Each case runs ``python -m dsh_sim ARGV`` in a fresh directory (its cwd, so a
default output such as ``scenarios/found`` or ``reports/`` would land there), under a
timeout and an address-space limit.  A case is **clean** when it

* exits 2 — or 0/1 when the input is actually valid (``ok`` lists the codes allowed),
* prints exactly one stderr line, starting ``dsh-sim:`` and naming the file or flag given,
* prints no ``Traceback``,
* finishes within the timeout, under the memory limit,
* leaves its inputs byte-identical with the same mtime, and writes nothing (when it exits 2).

Mutated scenarios are also checked for agreement: when ``replay`` runs one (exit 0/1),
``validate`` must call it valid — an invalid configuration is refused input, never a
violation.  The cases: scenario files (syntax, encodings, numbers, a wrong value at every JSON
path of several valid scenarios, strings with line breaks and control characters), session
logs for inspect/repair/migrate (zstd bombs, sparse giants, damaged frames, deep records,
links, FIFOs, devices), files that are not files, names with line breaks, and flags
(non-finite, negative, huge, conflicting; output paths that are files, directories, links,
FIFOs, devices or under a file).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import shutil
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASES = [
    "scenarios/starter/boundary-3-4-batch_pay.json",
    "scenarios/starter/cancel-during-tool-body.json",
]
MEMORY_LIMIT = 3 << 30
Setup = Callable[[str], None]


@dataclass
class Case:
    name: str
    argv: list[str]  # {d} is the case directory
    setup: Setup = lambda d: None
    ok: tuple[int, ...] = (2,)  # exit codes a clean run may give
    names: tuple[str, ...] = ()  # what the stderr line must mention (after {d} substitution); default: the first file argument
    inputs: tuple[str, ...] = ()  # extra paths (outside the case dir) that must stay unchanged
    agree: bool = False  # a mutated scenario: replay's verdict must agree with validate's
    one_line: bool = True


# ---------------------------------------------------------------- helpers


def write(path: str, data: bytes | str) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data.encode("utf-8") if isinstance(data, str) else data)


def raw(data: bytes | str, name: str = "s.json") -> Setup:
    return lambda d: write(os.path.join(d, name), data)


def load(base: str) -> dict[str, Any]:
    with open(os.path.join(ROOT, base), encoding="utf-8") as handle:
        obj: dict[str, Any] = json.load(handle)
    return obj


def scenario(obj: Any, name: str = "s.json", **dump: Any) -> Setup:
    text = json.dumps(obj, **dump)
    return raw(text, name)


def fifo(name: str) -> Setup:
    def setup(d: str) -> None:
        os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
        os.mkfifo(os.path.join(d, name))

    return setup


def symlink(target: str, name: str) -> Setup:
    def setup(d: str) -> None:
        os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
        os.symlink(target.format(d=d), os.path.join(d, name))

    return setup


def unix_socket(name: str) -> Setup:
    def setup(d: str) -> None:
        os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
        server = socket.socket(socket.AF_UNIX)
        server.bind(os.path.join(d, name))
        server.close()  # the socket file stays

    return setup


def both(*setups: Setup) -> Setup:
    def setup(d: str) -> None:
        for one in setups:
            one(d)

    return setup


def paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every JSON path of ``obj`` (keys and list indexes), the root excluded."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield (*prefix, key)
            yield from paths(value, (*prefix, key))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            yield (*prefix, index)
            yield from paths(value, (*prefix, index))


def replaced(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(obj)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


# ------------------------------------------------------------ scenario files


def syntax_cases() -> list[Case]:
    base = load(BASES[0])
    text = json.dumps(base)
    out = [
        ("bom", raw(b"\xef\xbb\xbf" + text.encode())),
        ("utf16", raw(text.encode("utf-16"))),
        ("utf32", raw(text.encode("utf-32"))),
        ("latin1-in-string", raw(text.replace('"name"', '"n\xe4me"').encode("latin-1"))),
        ("nul-byte-raw", raw(text[:20] + "\x00" + text[20:])),
        ("only-nuls", raw(b"\x00" * 4096)),
        ("only-whitespace", raw(" \n\t\r " * 100)),
        ("single-brace", raw("{")),
        ("trailing-comma", raw(text[:-1] + ",}")),
        ("two-documents", raw(text + text)),
        ("comment", raw("// c\n" + text)),
        ("single-quotes", raw(text.replace('"', "'"))),
        ("infinity-literal", raw(text.replace('"seed": ' + json.dumps(base["seed"]), '"seed": Infinity'))),
        ("neg-infinity-literal", raw(text.replace('"seed": ' + json.dumps(base["seed"]), '"seed": -Infinity'))),
        ("overflow-float-seed", raw(text.replace('"seed": ' + json.dumps(base["seed"]), '"seed": 1e400'))),
        ("overflow-float-horizon", raw(text.replace('"steps": [', '"steps": [{"op": "advance", "args": {"seconds": 1e999}}, ', 1))),
        ("negative-overflow-float", raw(text.replace('"steps": [', '"steps": [{"op": "advance", "args": {"seconds": -1e999}}, ', 1))),
        ("tiny-float", raw(text.replace('"steps": [', '"steps": [{"op": "advance", "args": {"seconds": 1e-400}}, ', 1))),
        ("int-5000-digits", raw(text.replace('"seed": ' + json.dumps(base["seed"]), '"seed": ' + "9" * 5000))),
        ("int-100k-digits", raw(text.replace('"seed": ' + json.dumps(base["seed"]), '"seed": ' + "7" * 100_000))),
        ("float-100k-digits", raw(text.replace('"seed": ' + json.dumps(base["seed"]), '"seed": 0.' + "1" * 100_000))),
        ("exp-huge", raw(text.replace('"seed": ' + json.dumps(base["seed"]), '"seed": 1e99999999999'))),
        ("negative-zero-seed", raw(text.replace('"seed": ' + json.dumps(base["seed"]), '"seed": -0'))),
        ("seed-float-integral", raw(text.replace('"seed": ' + json.dumps(base["seed"]), '"seed": 3.0'))),
        ("dup-keys", raw(text[:-1] + ', "seed": "again"}')),
        ("deep-objects-150", raw('{"a":' * 150 + "1" + "}" * 150)),
        ("deep-objects-200k", raw('{"a":' * 200_000 + "1" + "}" * 200_000)),
        (
            "deep-mixed-in-args",
            raw(text.replace('"steps": [', '"steps": [{"op": "advance", "args": ' + '[{"x":' * 3000 + "0" + "}]" * 3000 + "}, ", 1)),
        ),
        (
            "deep-match",
            raw(
                text.replace(
                    '"steps": [',
                    '"steps": [{"op": "arm", "args": {"rule": {"point": "fs.open", "action": "crash", "match": {"path": '
                    + "[" * 120
                    + "]" * 120
                    + "}}}}, ",
                    1,
                )
            ),
        ),
        ("wide-steps-1e5", raw(json.dumps({**base, "steps": [{"op": "flush", "args": {}}] * 100_000}))),
        ("long-string-20MB", raw(json.dumps({**base, "description": "x" * (20 << 20)}))),
        ("unicode-escape-surrogate", raw(text.replace('"format"', '"name": "\\ud800\\udfff\\ud800", "format"', 1))),
        ("rtl-override-op", raw(text.replace('"op": "boot"', '"op": "bo\u202eot"', 1))),
        ("zero-width-op", raw(text.replace('"op": "boot"', '"op": "bo\u200bot"', 1))),
        ("fullwidth-op", raw(text.replace('"op": "boot"', '"op": "\uff42\uff4f\uff4f\uff54"', 1))),
        ("newline-in-op", raw(text.replace('"op": "boot"', '"op": "boot\\nFAKE: second line"', 1))),
        ("cr-in-op", raw(text.replace('"op": "boot"', '"op": "boot\\rdsh-sim: fake"', 1))),
        ("ansi-in-op", raw(text.replace('"op": "boot"', '"op": "\\u001b[2Jboot"', 1))),
        ("nul-in-op", raw(text.replace('"op": "boot"', '"op": "boot\\u0000"', 1))),
        ("newline-in-arg-key", raw(text.replace('"steps": [', '"steps": [{"op": "advance", "args": {"sec\\nonds": 1}}, ', 1))),
        (
            "newline-in-point",
            raw(text.replace('"steps": [', '"steps": [{"op": "arm", "args": {"rule": {"point": "fs.open\\nx", "action": "crash"}}}, ', 1)),
        ),
        ("newline-in-invariant", raw(json.dumps({**base, "expect": {"outcome": "violation", "invariant": "seq\ndense"}}))),
        ("newline-in-mutant", raw(json.dumps({**base, "mutants": ["persist.\nx"]}))),
        ("newline-in-tool", raw(json.dumps({**base, "config": {"approval_tools": ["pa\ny"]}}))),
        ("huge-list-of-mutants", raw(json.dumps({**base, "mutants": ["persist.skip_fsync_on_append"] * 100_000}))),
        ("top-string", raw('"dsh-sim-scenario"')),
        ("top-number", raw("1")),
        ("top-null", raw("null")),
        ("top-true", raw("true")),
        ("format-wrong-case", raw(json.dumps({**base, "format": "DSH-SIM-SCENARIO"}))),
        ("version-0", raw(json.dumps({**base, "version": 0}))),
        ("version-2", raw(json.dumps({**base, "version": 2}))),
        ("version-bool", raw(json.dumps({**base, "version": True}))),
        ("version-float", raw(json.dumps({**base, "version": 1.0}))),
        ("version-string", raw(json.dumps({**base, "version": "1"}))),
        ("no-format", raw(json.dumps({k: v for k, v in base.items() if k != "format"}))),
        ("no-steps", raw(json.dumps({k: v for k, v in base.items() if k != "steps"}))),
        ("extra-top-key", raw(json.dumps({**base, "stpes": []}))),
        ("step-not-object", raw(json.dumps({**base, "steps": ["boot"]}))),
        ("step-extra-key", raw(json.dumps({**base, "steps": [{"op": "boot", "args": {}, "when": 1}]}))),
        ("step-no-op", raw(json.dumps({**base, "steps": [{"args": {}}]}))),
        (
            "crash-cut-garbage",
            raw(
                json.dumps(
                    {
                        **base,
                        "steps": [
                            {"op": "boot", "args": {}},
                            {"op": "crash_now", "args": {"kind": "power", "state": "cut", "cut": {"files": "x"}}},
                        ],
                    }
                )
            ),
        ),
        (
            "crash-cut-wrong-kind",
            raw(
                json.dumps(
                    {
                        **base,
                        "steps": [{"op": "boot", "args": {}}, {"op": "crash_now", "args": {"kind": "kill", "state": "cut", "cut": {}}}],
                    }
                )
            ),
        ),
        ("seed-v0-after-boot", raw(json.dumps({**base, "steps": [{"op": "boot", "args": {}}, {"op": "seed_v0", "args": {}}]}))),
        (
            "seed-v0-twice",
            raw(json.dumps({**base, "steps": [{"op": "seed_v0", "args": {}}, {"op": "seed_v0", "args": {}}, {"op": "boot", "args": {}}]})),
        ),
        (
            "seed-v0-inherited-ge-turns",
            raw(json.dumps({**base, "steps": [{"op": "seed_v0", "args": {"turns": 2, "inherited": 5}}, {"op": "boot", "args": {}}]})),
        ),
        ("prompt-on-storage", raw(json.dumps({**base, "machine": "storage"}))),
        ("duplicate-call-ids", raw(json.dumps(_dup_call_ids(base)))),
        ("workspace-relative", raw(json.dumps({**base, "config": {"workspace": "relative/ws"}}))),
        ("root-equals-workspace", raw(json.dumps({**base, "config": {"root": "/sim/x", "workspace": "/sim/x"}}))),
        ("session-id-slash", raw(json.dumps({**base, "config": {"session_id": "../../etc"}}))),
        ("session-id-empty", raw(json.dumps({**base, "config": {"session_id": ""}}))),
        ("session-id-nul", raw(json.dumps({**base, "config": {"session_id": "a\u0000b"}}))),
        ("root-not-absolute", raw(json.dumps({**base, "config": {"root": "sessions"}}))),
        ("root-is-slash", raw(json.dumps({**base, "config": {"root": "/"}}))),
        (
            "corrupt-path-relative",
            raw(json.dumps({**base, "fault_plan": [{"point": "fs.write", "action": "corrupt", "corrupt_path": "../../x"}]})),
        ),
        (
            "match-key-not-carried",
            raw(json.dumps({**base, "fault_plan": [{"point": "fs.write", "action": "crash", "match": {"call_id": "c1"}}]})),
        ),
        (
            "match-value-object",
            raw(json.dumps({**base, "fault_plan": [{"point": "fs.write", "action": "crash", "match": {"path": {"a": 1}}}]})),
        ),
        ("action-not-at-point", raw(json.dumps({**base, "fault_plan": [{"point": "fs.stat", "action": "error"}]}))),
        ("lifetime-zero", raw(json.dumps({**base, "fault_plan": [{"point": "fs.write", "action": "crash", "lifetime": 0}]}))),
        ("hit-2pow63", raw(json.dumps({**base, "fault_plan": [{"point": "fs.write", "action": "crash", "hit": 2**63}]}))),
        ("offset-2pow80", raw(json.dumps({**base, "fault_plan": [{"point": "fs.write", "action": "corrupt", "corrupt_offset": 2**80}]}))),
        ("fault-plan-object", raw(json.dumps({**base, "fault_plan": {"point": "fs.write"}}))),
        ("trace-digest-short", raw(json.dumps({**base, "trace_digest": "abc"}))),
        ("trace-digest-int", raw(json.dumps({**base, "trace_digest": 5}))),
        ("origin-deep-ok-101", raw(json.dumps({**base, "origin": json.loads("[" * 101 + "]" * 101)}))),
    ]
    # a variant may still be valid (1e-400 is 0.0, -0 is 0): then replay may run it, and
    # validate must agree (see run_case)
    cases = [Case(f"scenario-syntax/{name}/replay", ["replay", "{d}/s.json"], setup, ok=(0, 1, 2), agree=True) for name, setup in out]
    # the same files through the other readers (a sample: validate must not fail either)
    for name, setup in out[::3]:
        cases.append(Case(f"scenario-syntax/{name}/explore", ["explore", "{d}/s.json", "--bound", "1"], setup, ok=(0, 1, 2)))
    for name, setup in out[1::3]:
        cases.append(Case(f"scenario-syntax/{name}/validate", ["validate", "{d}/s.json"], setup, ok=(0, 1, 2)))
    for name, setup in out[2::6]:
        # outside a clone, run refuses for want of scenarios/starter once the file is valid
        cases.append(
            Case(
                f"scenario-syntax/{name}/run",
                ["run", "--budget", "0", "--scenarios", "{d}/s.json"],
                setup,
                names=("{d}/s.json", "scenarios/starter"),
            )
        )
    return cases


def _dup_call_ids(base: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(base)
    for step in obj["steps"]:
        if step["op"] == "prompt":
            for response in step["args"].get("responses", []):
                for call in response.get("tool_calls", []):
                    call["id"] = "same"
    return obj


BAD_VALUES: list[tuple[str, Any]] = [
    ("null", None),
    ("false", False),
    ("neg", -7),
    ("frac", 0.5),
    ("big", 2**70),
    ("str-nl", "a\nb"),
    ("empty-list", []),
    ("obj", {"z": 1}),
]


def path_cases() -> list[Case]:
    """A wrong value at every JSON path of valid scenarios: refused (2), or — when the file is
    still valid — replayed (0/1), and then ``validate`` must agree it is valid."""
    cases = []
    for base_path in BASES:
        base = load(base_path)
        base.pop("trace_digest", None)
        label = os.path.splitext(os.path.basename(base_path))[0]
        all_paths = [p for p in paths(base) if p[0] not in ("description", "origin", "name")]
        for index, path in enumerate(all_paths):
            tag, value = BAD_VALUES[index % len(BAD_VALUES)]
            where = ".".join(str(p) for p in path)
            cases.append(
                Case(
                    f"scenario-path/{label}/{where}={tag}",
                    ["replay", "{d}/s.json"],
                    scenario(replaced(base, path, value)),
                    ok=(0, 1, 2),
                    agree=True,
                )
            )
    return cases


# ---------------------------------------------------------------- session logs

DEMO_ROOT = "/tmp/dsh-probe-base"


def _demo_logs() -> dict[str, bytes]:
    """Two real session logs (zstd and raw JSONL) written by ``dsh-sim demo``."""
    logs = {}
    for compression in ("zstd", "none"):
        root = os.path.join(DEMO_ROOT, compression)
        if not os.path.isdir(root):
            subprocess.run(
                [sys.executable, "-m", "dsh_sim", "demo", "--root", root, "--compression", compression],
                cwd=ROOT,
                check=True,
                capture_output=True,
            )
        for directory, _, files in os.walk(root):
            for name in files:
                if name.startswith("session.v3"):
                    with open(os.path.join(directory, name), "rb") as handle:
                        logs[compression] = handle.read()
    return logs


def _zstd_frame(content: bytes, *, declared: int | None = None) -> bytes:
    """A checksummed zstd frame of ``content``; with ``declared``, its header claims that many
    decompressed bytes instead (a single-segment frame: the window is the claimed size)."""
    import zstandard

    frame = zstandard.ZstdCompressor(level=3, write_checksum=True, write_content_size=True).compress(content)
    if declared is None:
        return frame
    fhd = frame[4]
    assert fhd & 0x20 and not fhd & 0xC3, f"expected a single-segment frame with a 1-byte size, got {fhd:#x}"
    return frame[:4] + bytes([fhd | 0xC0]) + struct.pack("<Q", declared) + frame[6:]


def _bomb_stream(total: int) -> bytes:
    """A frame with no content size that decompresses to ``total`` zero bytes."""
    import zstandard

    compressor = zstandard.ZstdCompressor(level=19, write_content_size=False)
    chunk = b"\x00" * (1 << 20)
    out = compressor.compressobj()
    parts = [out.compress(chunk) for _ in range(total // len(chunk))]
    parts.append(out.flush())
    return b"".join(parts)


def log_cases() -> list[Case]:
    logs = _demo_logs()
    zlog, nlog = logs["zstd"], logs["none"]
    zname, nname = "session.v3.jsonl.zstd", "session.v3.jsonl"
    header = nlog.split(b"\n", 1)[0]
    out: list[tuple[str, Setup, str]] = [
        ("zstd-bomb-128MiB-no-size", raw(_bomb_stream(128 << 20), zname), zname),
        ("zstd-bomb-after-valid-prefix", raw(zlog + _bomb_stream(96 << 20), zname), zname),
        ("zstd-lying-size-2TiB", raw(_zstd_frame(b'{"a":1}\n', declared=2 << 40), zname), zname),
        ("zstd-many-tiny-frames", raw(zlog + _zstd_frame(b"\n") * 200_000, zname), zname),
        ("zstd-skippable-huge", raw(zlog + b"\x50\x2a\x4d\x18" + struct.pack("<I", 0xFFFFFFF0), zname), zname),
        ("zstd-skippable-first", raw(b"\x50\x2a\x4d\x18" + struct.pack("<I", 4) + b"abcd" + zlog, zname), zname),
        ("zstd-magic-only", raw(b"\x28\xb5\x2f\xfd", zname), zname),
        ("zstd-raw-json-inside", raw(nlog, zname), zname),
        ("raw-is-zstd", raw(zlog, nname), nname),
        ("zstd-truncated-header", raw(zlog[:6], zname), zname),
        ("zstd-flip-every-64", raw(bytes(b ^ 0xFF if i % 64 == 7 else b for i, b in enumerate(zlog)), zname), zname),
        ("sparse-1.5GiB", lambda d: _sparse(os.path.join(d, zname), 3 << 29), zname),
        ("sparse-600MiB-raw", lambda d: _sparse(os.path.join(d, nname), 600 << 20), nname),
        ("deep-record", raw(header + b"\n" + b'{"seq":0,"data":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n", nname), nname),
        (
            "deep-record-zstd",
            raw(_zstd_frame(header + b"\n") + _zstd_frame(b'{"seq":0,"data":' + b"[" * 50_000 + b"]" * 50_000 + b"}\n"), zname),
            zname,
        ),
        ("header-only-garbage", raw(b"\xff\xfe\x00garbage\n", nname), nname),
        ("header-wrong-types", raw(json.dumps({"type": "session", "version": "3", "id": 5, "createdAt": "x"}) + "\n", nname), nname),
        ("header-nan", raw(header.replace(b'"version":3', b'"version":NaN') + b"\n", nname), nname),
        ("header-huge-int", raw(header.replace(b'"version":3', b'"version":' + b"9" * 6000) + b"\n", nname), nname),
        ("events-seq-huge", raw(header + b'\n{"seq":' + b"9" * 5000 + b',"type":"x","data":{}}\n', nname), nname),
        ("events-bad-utf8", raw(header + b'\n{"seq":0,"type":"\xff\xfe","data":{}}\n', nname), nname),
        ("event-20MB-line", raw(header + b'\n{"seq":0,"type":"x","data":"' + b"y" * (20 << 20) + b'"}\n', nname), nname),
        ("empty", raw(b"", nname), nname),
        ("empty-zstd", raw(b"", zname), zname),
        ("only-newlines", raw(b"\n" * 10_000, nname), nname),
        ("nul-bytes", raw(b"\x00" * 65536, nname), nname),
        ("v0-name-v3-content", raw(nlog, "session.jsonl"), "session.jsonl"),
        ("v99-name", raw(nlog, "session.v99.jsonl"), "session.v99.jsonl"),
        ("v3-name-garbage-v0", raw(b'{"type":"session","version":0}\n{"bad"\n', "session.jsonl"), "session.jsonl"),
    ]
    cases = []
    for name, setup, file in out:
        for command in ("inspect", "repair", "migrate"):
            cases.append(
                Case(
                    f"log/{name}/{command}",
                    [command, f"{{d}}/root/p/s/{file}"],
                    _under("root/p/s", setup),
                    ok=(0, 2) if command == "inspect" else (2,),
                )
            )
    # logs that are not regular files or not where they say
    weird: list[tuple[str, Setup, str]] = [
        ("fifo-log", fifo("root/p/s/" + nname), f"root/p/s/{nname}"),
        ("fifo-in-session-dir", both(lambda d: os.makedirs(os.path.join(d, "root/p/s")), fifo("root/p/s/" + zname)), "root/p/s"),
        ("dir-named-log", lambda d: os.makedirs(os.path.join(d, "root/p/s", zname)), f"root/p/s/{zname}"),
        ("symlink-to-dev-zero", symlink("/dev/zero", "root/p/s/" + nname), f"root/p/s/{nname}"),
        ("symlink-loop", both(symlink("{d}/root/p/s/b", "root/p/s/a"), symlink("{d}/root/p/s/a", "root/p/s/b")), "root/p/s/a"),
        ("dangling-symlink", symlink("{d}/nowhere", "root/p/s/" + nname), f"root/p/s/{nname}"),
        ("socket-log", both(lambda d: os.makedirs(os.path.join(d, "root/p/s")), unix_socket("root/p/s/" + nname)), f"root/p/s/{nname}"),
        ("empty-root", lambda d: os.makedirs(os.path.join(d, "root")), "root"),
        ("trailing-slash-on-file", raw(nlog, "root/p/s/" + nname), f"root/p/s/{nname}/"),
        ("file-as-component", raw(nlog, "root/p/s/" + nname), f"root/p/s/{nname}/x"),
        ("name-too-long", lambda d: None, "x" * 5000),
        ("symlinked-session-dir", both(raw(nlog, "real/p/s/" + nname), symlink("{d}/real/p/s", "root/p/s")), f"root/p/s/{nname}"),
        ("symlinked-project-dir", both(raw(nlog, "real/p/s/" + nname), symlink("{d}/real/p", "root/p")), f"root/p/s/{nname}"),
        ("lock-is-symlink", both(raw(nlog, "root/p/s/" + nname), symlink("/etc/passwd", "root/p/s/session.lock")), f"root/p/s/{nname}"),
        ("lock-is-fifo", both(raw(nlog, "root/p/s/" + nname), fifo("root/p/s/session.lock")), f"root/p/s/{nname}"),
        (
            "lock-is-dir",
            both(raw(nlog, "root/p/s/" + nname), lambda d: os.makedirs(os.path.join(d, "root/p/s/session.lock"))),
            f"root/p/s/{nname}",
        ),
        (
            "hardlinked-log",
            both(
                raw(b"", "keep"),
                raw(nlog, "root/p/s/" + nname),
                lambda d: os.link(os.path.join(d, "root/p/s", nname), os.path.join(d, "other-name")),
            ),
            f"root/p/s/{nname}",
        ),
        ("proc-kmsg", lambda d: None, "/proc/kmsg"),
        ("proc-self-mem", lambda d: None, "/proc/self/mem"),
        ("dev-stdin", lambda d: None, "/dev/stdin"),
        ("dev-zero", lambda d: None, "/dev/zero"),
    ]
    for name, setup, target in weird:
        for command in ("inspect", "repair", "migrate"):
            arg = target if target.startswith("/") or target.startswith("x" * 10) else f"{{d}}/{target}"
            ok: tuple[int, ...] = (2,)
            if name in ("lock-is-symlink", "lock-is-fifo", "lock-is-dir", "hardlinked-log") and command == "inspect":
                ok = (0, 2)  # inspect reads the log only
            cases.append(Case(f"log-path/{name}/{command}", [command, arg], setup, ok=ok))
    return cases


def _under(prefix: str, setup: Setup) -> Setup:
    return lambda d: (os.makedirs(os.path.join(d, prefix), exist_ok=True), setup(os.path.join(d, prefix)))[1]


def _sparse(path: str, size: int) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(b'{"type":"session"}\n')
        handle.truncate(size)


# ------------------------------------------------------- files that are not files


def not_a_file_cases() -> list[Case]:
    targets: list[tuple[str, Setup, str]] = [
        ("fifo", fifo("s.json"), "{d}/s.json"),
        ("dir-empty", lambda d: os.makedirs(os.path.join(d, "s.json")), "{d}/s.json"),
        ("symlink-dev-zero", symlink("/dev/zero", "s.json"), "{d}/s.json"),
        ("symlink-dev-urandom", symlink("/dev/urandom", "s.json"), "{d}/s.json"),
        ("symlink-to-fifo", both(fifo("f"), symlink("{d}/f", "s.json")), "{d}/s.json"),
        ("dangling", symlink("{d}/missing", "s.json"), "{d}/s.json"),
        ("loop", both(symlink("{d}/b.json", "a.json"), symlink("{d}/a.json", "b.json")), "{d}/a.json"),
        ("socket", unix_socket("s.json"), "{d}/s.json"),
        ("dev-null", lambda d: None, "/dev/null"),
        ("dev-full", lambda d: None, "/dev/full"),
        ("proc-kmsg", lambda d: None, "/proc/kmsg"),
        ("proc-self-environ", lambda d: None, "/proc/self/environ"),
        ("sys-file", lambda d: None, "/sys/kernel/mm/transparent_hugepage/enabled"),
        ("name-newline", raw("{}", "a\nb.json"), "{d}/a\nb.json"),
        ("name-ansi", raw("{}", "\x1b[31mred.json"), "{d}/\x1b[31mred.json"),
        ("name-cr", raw("{}", "x\rdsh-sim: fake.json"), "{d}/x\rdsh-sim: fake.json"),
        (
            "name-bad-utf8",
            lambda d: write(os.path.join(d.encode(), b"\xff\xfe.json").decode("utf-8", "surrogateescape"), "{}"),
            "{d}/\udcff\udcfe.json",
        ),
        ("dir-of-fifos", both(lambda d: os.makedirs(os.path.join(d, "sd")), fifo("sd/a.json")), "{d}/sd"),
        ("dir-with-dir-json", lambda d: os.makedirs(os.path.join(d, "sd", "x.json")), "{d}/sd"),
        ("dir-with-link-out", both(lambda d: os.makedirs(os.path.join(d, "sd")), symlink("/etc/passwd", "sd/p.json")), "{d}/sd"),
    ]
    cases = []
    for name, setup, target in targets:
        for command in (
            ["replay"],
            ["validate"],
            ["explore"],
            ["run", "--budget", "0", "--scenarios"],
            ["report", "--out", "{d}/out", "--from"],
            ["demo", "--root", "{d}/demo", "--script"],
        ):
            ok: tuple[int, ...] = (2,)
            if command == ["validate"]:
                ok = (1, 2)
            cases.append(
                Case(f"not-a-file/{name}/{command[0]}", [*command, target], setup, ok=ok, names=(target, os.path.dirname(target) + "/"))
            )
    return cases


# -------------------------------------------------------------------- flags

NUMBERS = [
    "nan",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "1e309",
    "-1",
    "-0.0001",
    "1e999999",
    "0x10",
    "9" * 4400,
    "1e6000000",
    "1e",
    "0b1",
]


def flag_cases() -> list[Case]:
    cases = []
    s = os.path.join(ROOT, BASES[0])
    numeric = [
        (["fuzz", "--budget"], 1),
        (["fuzz", "--budget", "1", "--examples"], 1),
        (["fuzz", "--budget", "1", "--seed"], 1),
        (["run", "--budget"], 1),
        (["run", "--budget", "0", "--workers"], 1),
        (["run", "--budget", "0", "--bound"], 1),
        (["run", "--budget", "0", "--seed"], 1),
        (["explore", s, "--bound"], 1),
        (["mutants", "--budget"], 1),
        (["mutants", "--tool", "--report-only", "--max-children"], 1),
        (["mutants", "--tool", "--report-only", "--sample"], 1),
        (["mutants", "--tool", "--report-only", "--seed"], 1),
        (["dsh", "generate", "{d}/out", "--seed"], 1),
    ]
    for prefix, _ in numeric:
        for value in NUMBERS:
            label = f"flags/{' '.join(p for p in prefix if not p.startswith('/') and '{d}' not in p)}={value[:12]!r}"
            names = (prefix[-1], "scenarios/starter", "clone of the repository")
            cases.append(Case(label, [*prefix, value], names=names, inputs=(s,)))
    extremes = [
        ("fuzz-budget-8days", ["fuzz", "--budget", str(8 * 86400)], ("--budget",)),
        ("fuzz-examples-0", ["fuzz", "--examples", "0"], ("--examples",)),
        ("fuzz-seed-2pow64", ["fuzz", "--seed", str(2**64)], ("--seed",)),
        ("run-workers-65", ["run", "--workers", "65"], ("--workers",)),
        ("run-workers-0", ["run", "--workers", "0"], ("--workers",)),
        ("run-shard-3of2", ["run", "--shard", "3/2"], ("--shard",)),
        ("run-shard-0of0", ["run", "--shard", "0/0"], ("--shard",)),
        ("explore-bound-0", ["explore", s, "--bound", "0"], ("--bound",)),
        ("mutants-max-children-0", ["mutants", "--tool", "--report-only", "--max-children", "0"], ("--max-children",)),
        ("mutants-max-children-1e6", ["mutants", "--tool", "--report-only", "--max-children", "1000000"], ("--max-children",)),
        ("mutants-sample-neg", ["mutants", "--tool", "--sample", "-3"], ("--sample",)),
        ("mutants-only-unknown", ["mutants", "--only", "no.such.mutant", "--budget", "0"], ("no.such.mutant",)),
        ("fuzz-mutant-unknown", ["fuzz", "--budget", "0", "--mutant", "no.such.mutant"], ("no.such.mutant",)),
        ("fuzz-mutant-newline", ["fuzz", "--budget", "0", "--mutant", "a\nb"], ("--mutant", "a\\nb")),
        ("mutants-modules-unknown", ["mutants", "--tool", "--report-only", "--modules", "no/such.py"], ("no/such.py",)),
        ("mutants-triage-dev-zero", ["mutants", "--tool", "--report-only", "--triage", "/dev/zero"], ("/dev/zero",)),
        ("mutants-list-and-tool", ["mutants", "--list", "--tool"], ("--list",)),
        ("mutants-report-only-without-tool", ["mutants", "--report-only", "--budget", "0"], ("--report-only",)),
        ("mutants-workdir-file", ["mutants", "--tool", "--report-only", "--workdir", "/etc/passwd"], ("/etc/passwd",)),
        ("new-tool-unknown", ["new", "--tool", "rm_rf"], ("rm_rf",)),
        ("new-tool-newline", ["new", "--tool", "pay\nx"], ("--tool",)),
        ("new-name-newline", ["new", "--name", "a\nb", "--out", "{d}/n.json"], ("--name",)),
        ("new-boundary-bad", ["new", "--boundary", "9→9"], ("--boundary",)),
        ("demo-session-dotdot", ["demo", "--root", "{d}/r", "--session", ".."], ("--session",)),
        ("demo-session-slash", ["demo", "--root", "{d}/r", "--session", "a/b"], ("--session",)),
        ("demo-session-empty", ["demo", "--root", "{d}/r", "--session", ""], ("--session",)),
        ("demo-session-newline", ["demo", "--root", "{d}/r", "--session", "a\nb"], ("--session",)),
        ("demo-workspace-root", ["demo", "--root", "{d}/r", "--workspace", "/"], ("/",)),
        ("demo-workspace-etc", ["demo", "--root", "{d}/r", "--workspace", "/etc/dsh-probe"], ("/etc",)),
        ("demo-workspace-is-root", ["demo", "--root", "{d}/r", "--workspace", "{d}/r"], ("{d}/r",)),
        ("demo-root-proc", ["demo", "--root", "/proc/self/dsh"], ("/proc",)),
        ("demo-root-dev-null-child", ["demo", "--root", "/dev/null/x"], ("/dev/null",)),
        ("replay-update-and-determinism", ["replay", "--update-digest", "--check-determinism", "{d}/s.json"], ("--update-digest",)),
        ("dsh-diff-missing", ["dsh", "diff", "{d}/nothing"], ("{d}/nothing",)),
        ("dsh-home-file", ["dsh", "diff", "{d}/x", "--home", "/etc/passwd"], ("/etc/passwd",)),
        ("dsh-generate-into-file", ["dsh", "generate", "/etc/passwd"], ("/etc/passwd",)),
    ]
    base = load(BASES[0])
    for name, argv, named in extremes:
        setup = scenario(base) if "{d}/s.json" in argv else (lambda d: None)
        # the probe runs outside a clone: a refusal for want of one is a right refusal too
        names = (*named, "scenarios/starter", "clone of the repository", "DSH packages", "Node", "--tool")
        ok = (0,) if name in ("new-name-newline", "demo-session-dotdot", "demo-session-slash", "demo-session-newline") else (2,)
        cases.append(Case(f"flags/{name}", argv, setup, names=names, inputs=("/etc/passwd",), ok=ok))
    return cases


def output_cases() -> list[Case]:
    """Output paths that are files, directories, links, FIFOs, devices or under a file."""
    s = os.path.join(ROOT, BASES[0])
    kinds: list[tuple[str, Setup, str]] = [
        ("symlink-to-file", both(raw("keep", "victim"), symlink("{d}/victim", "o")), "{d}/o"),
        ("symlink-to-dir", both(lambda d: os.makedirs(os.path.join(d, "vdir")), symlink("{d}/vdir", "o")), "{d}/o"),
        ("dangling-symlink", symlink("{d}/nowhere/x", "o"), "{d}/o"),
        ("fifo", fifo("o"), "{d}/o"),
        ("dev-full", lambda d: None, "/dev/full"),
        ("dev-null", lambda d: None, "/dev/null"),
        ("under-a-file", raw("keep", "afile"), "{d}/afile/o"),
        ("proc", lambda d: None, "/proc/self/o"),
        ("sys", lambda d: None, "/sys/o"),
        ("socket", unix_socket("o"), "{d}/o"),
        ("newline-name", raw("keep", "a\nb"), "{d}/a\nb/o"),
    ]
    file_outputs = [
        (["fuzz", "--budget", "0", "--results"], False),
        (["explore", s, "--bound", "1", "--results"], False),
        (["replay", s, "--trace-out"], False),
        (["schema", "--out"], False),
        (["reference", "--out"], False),
        (["new", "--out"], False),
        (["mutants", "--budget", "0", "--only", "persist.skip_fsync_on_append", "--results"], False),
    ]
    dir_outputs = [
        (["fuzz", "--budget", "0", "--found-dir"], True),
        (["explore", s, "--bound", "1", "--found-dir"], True),
        (["report", "--from", s, "--out"], True),
        (["run", "--budget", "0", "--scenarios", s, "--out"], True),
        (["demo", "--root"], True),
        (["demo", "--root", "{d}/r", "--workspace"], True),
        (["dsh", "generate"], True),
    ]
    cases = []
    for prefix, _ in file_outputs + dir_outputs:
        for name, setup, target in kinds:
            label = f"output/{prefix[0]} {prefix[-1]}/{name}"
            ok: tuple[int, ...] = (2,)
            names = (target, os.path.dirname(target), "/proc/self", "scenarios/starter", "DSH packages", "Node")
            cases.append(Case(label, [*prefix, target], setup, ok=ok, inputs=(s,), names=names))
    # a symlink in a relative output path (cwd = case dir)
    for prefix, _ in dir_outputs[:4]:
        setup = both(lambda d: os.makedirs(os.path.join(d, "elsewhere")), symlink("{d}/elsewhere", "linkdir"))
        cases.append(
            Case(f"output/{prefix[0]} {prefix[-1]}/relative-through-link", [*prefix, "linkdir/sub"], setup, names=("linkdir",), inputs=(s,))
        )
    return cases


def all_cases() -> list[Case]:
    return syntax_cases() + path_cases() + log_cases() + not_a_file_cases() + flag_cases() + output_cases()


# ------------------------------------------------------------------- running


def snapshot(paths: list[str]) -> dict[str, tuple[str, int, float, bytes | str]]:
    """Kind, size, mtime and bytes (or link target) of every path below each given path."""
    seen: dict[str, tuple[str, int, float, bytes | str]] = {}
    for top in paths:
        stack = [top]
        while stack:
            path = stack.pop()
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISLNK(info.st_mode):
                seen[path] = ("link", 0, info.st_mtime, os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                seen[path] = ("dir", 0, 0.0, "")
                stack += [os.path.join(path, name) for name in os.listdir(path)]
            elif stat.S_ISREG(info.st_mode):
                if info.st_size > (64 << 20):
                    seen[path] = ("file", info.st_size, info.st_mtime, "(large)")
                else:
                    with open(path, "rb") as handle:
                        seen[path] = ("file", info.st_size, info.st_mtime, handle.read())
            else:
                seen[path] = ("special", 0, info.st_mtime, stat.filemode(info.st_mode))
    return seen


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    os.setsid()


@dataclass
class Row:
    case: str
    argv: list[str]
    code: int | None
    seconds: float
    stderr: str
    problems: list[str] = field(default_factory=list)


def run(argv: list[str], cwd: str, timeout: float) -> tuple[int | None, str, str, float]:
    env = {**os.environ, "PYTHONPATH": ROOT, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("COLUMNS", None)
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dsh_sim", *argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_limits,  # noqa: PLW1509 (the probe's threads only wait on children)
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, err = proc.communicate()
        code = None
    return code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), time.monotonic() - started


def run_case(case: Case, timeout: float) -> Row:
    d = tempfile.mkdtemp(prefix="dsh-heldout-")
    try:
        try:
            case.setup(d)
        except OSError as err:
            return Row(case.name, case.argv, None, 0.0, "", [f"probe setup failed: {err}"])
        argv = [a.replace("{d}", d) for a in case.argv]
        watched = [d, *case.inputs]
        before = snapshot(watched)
        code, out, err, seconds = run(argv, d, timeout)
        row = Row(case.name, argv, code, round(seconds, 2), err.strip()[-600:])
        if code is None:
            row.problems.append(f"hang (> {timeout:g} s)")
        elif code < 0:
            row.problems.append(f"killed by signal {-code} (memory limit?)")
        elif code not in case.ok:
            row.problems.append(f"exit {code}, expected {case.ok}")
        if "Traceback" in err or "Traceback" in out:
            row.problems.append("traceback")
        lines = err.splitlines()
        if code == 2 or (code is not None and code not in (0, 1)):
            if len(lines) != 1 and case.one_line:
                row.problems.append(f"{len(lines)} stderr lines")
            if not err.startswith("dsh-sim:"):
                row.problems.append("stderr does not start with 'dsh-sim:'")
            wanted = [n.replace("{d}", d) for n in case.names] or [_first_file(argv)]
            if wanted and not any(w and (w in err or repr(w)[1:-1] in err or _escaped(w) in err) for w in wanted):
                row.problems.append(f"stderr does not name {wanted[0]!r}")
            after = snapshot(watched)
            if after != before:
                changed = sorted(set(after) ^ set(before)) or sorted(k for k in after if after[k] != before.get(k))
                row.problems.append(f"inputs/outputs changed: {changed[:3]}")
        if case.agree and code in (0, 1):
            vcode, vout, _, _ = run(["validate", os.path.join(d, "s.json")], d, timeout)
            if vcode != 0:
                first_fail = next((line for line in vout.splitlines() if line.startswith("FAIL")), vout[:200])
                row.problems.append(f"replay ran it (exit {code}) but validate refuses it: {first_fail}")
            elif code == 1:
                # a valid variant of a passing scenario may change the digest; anything else is
                # a failure of a scenario validate accepted: an invalid configuration or a real bug
                problems = [line.strip() for line in out.splitlines() if line.startswith("      ")]
                if not problems or any("digest" not in line for line in problems):
                    row.problems.append("validate accepts it, replay fails it (review): " + "; ".join(problems)[:300])
        return row
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _escaped(text: str) -> str:
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _first_file(argv: list[str]) -> str:
    for arg in argv[1:]:
        if not arg.startswith("-") and ("/" in arg or arg.endswith(".json")):
            return arg
    return ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", default=None, help="run only cases whose name contains this")
    parser.add_argument("--json", default=None, help="write every row here")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    cases = [c for c in all_cases() if args.only is None or args.only in c.name]
    if args.list:
        for case in cases:
            print(case.name)
        print(f"{len(cases)} cases")
        return 0
    progress = open(args.json + ".partial", "w", encoding="utf-8") if args.json else None  # noqa: SIM115

    def one(case: Case) -> Row:
        row = run_case(case, args.timeout)
        if progress is not None:
            progress.write(json.dumps(row.__dict__) + "\n")
            progress.flush()
        return row

    with ThreadPoolExecutor(args.workers) as pool:
        rows = list(pool.map(one, cases))
    bad = [r for r in rows if r.problems]
    for row in bad:
        print(f"ESCAPE {row.case}: {'; '.join(row.problems)}\n    argv: {row.argv}\n    stderr: {row.stderr[:300]!r}")
    kinds = {
        "traceback": sum(any("traceback" in p for p in r.problems) for r in rows),
        "hang": sum(any(p.startswith("hang") for p in r.problems) for r in rows),
        "exit": sum(any(p.startswith("exit") or p.startswith("killed") for p in r.problems) for r in rows),
        "lines": sum(any("stderr" in p for p in r.problems) for r in rows),
        "modified": sum(any("changed" in p for p in r.problems) for r in rows),
        "disagree": sum(any("validate" in p for p in r.problems) for r in rows),
    }
    print(f"{len(rows)} cases: {len(rows) - len(bad)} clean, {len(bad)} not clean; " + ", ".join(f"{k} {v}" for k, v in kinds.items()))
    print(f"slowest: {max(rows, key=lambda r: r.seconds).case} {max(r.seconds for r in rows):.1f}s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump([r.__dict__ for r in rows], handle, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
