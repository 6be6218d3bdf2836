"""The differential corpus: logs written by the real DSH writer, then damaged.

Every log is first written by DSH 0.1.0-rc.8 itself (``create`` + one ``append`` per batch,
through the bridge on the real filesystem), so the bytes are exactly what DSH produces:
its header line/frame, its packed chunk rows, its frames.  Damage is then applied to a copy
(:mod:`dsh_sim.dsh.damage`): torn raw and zstd tails at each codec class, corrupt records
and frames, foreign header versions, unknown and legacy event types.  Real crashes come
from SIGKILLing a Node writer in the middle of an append.

Layout: ``OUT/<case>/<project dir>/<session dir>/session.jsonl[.zstd]`` — one root per case,
so ``dsh-sim dsh diff OUT`` reads every log.  ``seed`` picks sizes, turn counts and which
bytes to damage; ``held_out`` draws from other ranges, for a set not used while developing.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from collections.abc import Callable

from dsh_sim.dsh import damage, malformed
from dsh_sim.dsh.bridge import Bridge, DshError
from dsh_sim.dsh.install import Installation
from dsh_sim.dsh.shapes import SHAPES, Log, shape
from runtime.persistence.zstd_frames import compress_frame, scan_frames

SUFFIX = {"none": "session.jsonl", "zstd": "session.jsonl.zstd"}
PROJECT = "--work-proj--"


def write_with_dsh(bridge: Bridge, root: str, log: Log, compression: str) -> tuple[str, list[int]]:
    """Write ``log`` with DSH's own writer; the file and its size after every append."""
    key = f"gen:{root}"
    bridge.request("create", key=key, root=root, compression=compression, meta=log.meta()).unwrap()
    path = os.path.join(root, PROJECT, log.id, SUFFIX[compression])
    sizes = []
    for batch in log.batches:
        bridge.request("append", key=key, root=root, compression=compression, session=log.id, events=batch).unwrap()
        sizes.append(os.path.getsize(path))
    bridge.request("close", key=key).unwrap()
    return path, sizes


class Corpus:
    def __init__(self, bridge: Bridge, out: str, rng: random.Random) -> None:
        self.bridge = bridge
        self.out = out
        self.rng = rng
        self.written: list[str] = []

    def write(self, case: str, log: Log, compression: str) -> tuple[bytes, list[int]]:
        path, sizes = write_with_dsh(self.bridge, os.path.join(self.out, case), log, compression)
        self.written.append(path)
        with open(path, "rb") as handle:
            return handle.read(), sizes

    def variant(self, case: str, base: str, compression: str, session_id: str, data: bytes) -> None:
        """A damaged copy of a written log, at the same place under its own case root."""
        path = os.path.join(self.out, case, PROJECT, session_id, SUFFIX[compression])
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
        self.written.append(path)


def _cases(corpus: Corpus, compression: str, held_out: bool) -> None:
    rng = corpus.rng
    turns = rng.choice((1, 2, 3)) if held_out else 2
    for name in SHAPES:
        corpus.write(f"{compression}/{name}", shape(name, f"s-{name}", turns=turns), compression)
    # damage on an interrupted call and on a balanced log, the last append torn at every class
    for base in ("outcome-unknown", "balanced", "mixed"):
        sid = f"t-{base}"
        pad = rng.choice((0, 40)) if held_out else 0
        data, sizes = corpus.write(f"{compression}/base-{base}", shape(base, sid, turns=turns, pad=pad), compression)
        last_start = sizes[-2] if len(sizes) > 1 else 0
        for klass, cut in damage.torn_cuts(data, last_start).items():
            corpus.variant(f"{compression}/torn-{base}-{klass}", base, compression, sid, data[:cut])
        if compression == "zstd":
            _zstd_damage(corpus, sid, data, sizes, base)
        else:
            _raw_damage(corpus, sid, data, base)
    # a torn final frame that holds complete records (a multi-block frame cut mid-way)
    sid = "t-big"
    data, sizes = corpus.write(
        f"{compression}/base-big", shape("outcome-unknown", sid, turns=1, pad=rng.choice((300_000, 420_000))), compression
    )
    last_start = sizes[-3]  # the batch with the padded stream
    for fraction in (0.5, 0.9) if not held_out else (rng.uniform(0.3, 0.95),):
        cut = last_start + int((sizes[-2] - last_start) * fraction)
        corpus.variant(f"{compression}/torn-big-{int(fraction * 100)}", "big", compression, sid, data[:cut])
    _header_cases(corpus, compression, turns)
    _vocabulary_cases(corpus, compression)
    _malformed_cases(corpus, compression)


def _raw_damage(corpus: Corpus, sid: str, data: bytes, base: str) -> None:
    lines = data.split(b"\n")
    n = len(lines) - 1  # last element is empty after the final newline
    garbage = b'{"type":"turn/start","seq":'
    corpus.variant(f"none/corrupt-record-early-{base}", base, "none", sid, damage.replace_line(data, 2, garbage))
    corpus.variant(f"none/corrupt-record-last-{base}", base, "none", sid, damage.replace_line(data, n - 1, b"\x00\x01garbage"))
    corpus.variant(f"none/seq-gap-early-{base}", base, "none", sid, damage.replace_line(data, 2, None))
    corpus.variant(f"none/seq-gap-last-{base}", base, "none", sid, damage.replace_line(data, n - 1, None))
    last_turn = max(i for i, line in enumerate(lines) if b'"type":"turn/start"' in line)
    corpus.variant(f"none/corrupt-record-open-turn-{base}", base, "none", sid, damage.replace_line(data, last_turn + 1, b"{broken"))
    corpus.variant(f"none/seq-gap-open-turn-{base}", base, "none", sid, damage.replace_line(data, last_turn + 1, None))
    corpus.variant(f"none/partial-fragment-{base}", base, "none", sid, data + b'{"type":"assistant/chunk","seq":99,"ti')


def _zstd_damage(corpus: Corpus, sid: str, data: bytes, sizes: list[int], base: str) -> None:
    frames = scan_frames(data).frames
    mid_start, mid_end = frames[len(frames) // 2]
    rng = corpus.rng
    corpus.variant(f"zstd/corrupt-frame-mid-{base}", base, "zstd", sid, damage.flip_byte(data, rng.randrange(mid_start + 6, mid_end)))
    corpus.variant(f"zstd/corrupt-frame-checksum-last-{base}", base, "zstd", sid, damage.flip_byte(data, len(data) - 2))
    corpus.variant(f"zstd/corrupt-header-frame-{base}", base, "zstd", sid, damage.flip_byte(data, frames[0][1] - 2))
    edits: dict[str, Callable[[bytes], bytes]] = {
        "garbage-line-in-frame": lambda p: p + b"not json\n",
        "garbage-line-then-turn-end": lambda p: b"not json\n" + p,
        "no-final-newline-in-frame": lambda p: p.rstrip(b"\n"),
        "seq-gap-in-frame": lambda p: b"\n".join(p.split(b"\n")[1:]),
    }
    for name, edit in edits.items():
        corpus.variant(f"zstd/{name}-{base}", base, "zstd", sid, damage.edit_last_frame(data, edit))
    corpus.variant(f"zstd/skippable-frame-{base}", base, "zstd", sid, data + b"\x50\x2a\x4d\x18\x04\x00\x00\x00abcd")
    corpus.variant(f"zstd/garbage-after-frames-{base}", base, "zstd", sid, data + b"\x00\x00\x00\x00\x00")


def _header_cases(corpus: Corpus, compression: str, turns: int) -> None:
    sid = "h-base"
    data, _ = corpus.write(f"{compression}/base-header", shape("interrupted", sid, turns=turns), compression)
    header_changes: dict[str, dict[str, object]] = {
        "version-99": {"version": 99},
        "version-minus-1": {"version": -1},
        "version-3": {"version": 3},
        "retired-fields": {"sandboxMode": "read-only"},
        "no-delegation-depth": {"delegationDepth": None},
        "relative-cwd": {"cwd": "work/proj"},
        "other-id": {"id": "someone-else"},
    }
    for name, changes in header_changes.items():
        corpus.variant(f"{compression}/header-{name}", "header", compression, sid, damage.rewrite_header(data, compression, **changes))
    body = data.split(b"\n", 1)[1] if compression == "none" else data[scan_frames(data).frames[0][1] :]
    not_json = b"{not json\n"
    corpus.variant(
        f"{compression}/header-not-json",
        "header",
        compression,
        sid,
        (not_json if compression == "none" else compress_frame(not_json)) + body,
    )
    corpus.variant(f"{compression}/header-empty-file", "header", compression, sid, b"")


def _malformed_cases(corpus: Corpus, compression: str) -> None:
    """Every header field and packed-row member given every kind of value (:mod:`.malformed`)."""
    sid = "m-base"
    data, _ = corpus.write(f"{compression}/base-malformed", malformed.packed_log(sid), compression)
    for name, field, value in malformed.header_variants():
        corpus.variant(
            f"{compression}/header-{name}", "malformed", compression, sid, malformed.rewrite_header(data, compression, field, value)
        )
    for name, edit in malformed.row_variants():
        for which, where in enumerate(("committed", "open")):
            changed = malformed.edit_row(data, compression, which, edit)
            corpus.variant(f"{compression}/row-{where}-{name}", "malformed", compression, sid, changed)
    bases = {"mixed": shape("mixed", "s-mixed", turns=1), "balanced": shape("balanced", "s-balanced", turns=1)}
    bases["second-step"] = malformed.second_step_log("s-second-step")
    for base, log in bases.items():
        for name, variant in malformed.structure_variants(log):
            case = f"{compression}/structure-{base}-{name}"
            try:
                corpus.write(case, variant, compression)
            except DshError:  # DSH's writer refuses to append it: nothing of it is read
                corpus.bridge.request("close", key=f"gen:{os.path.join(corpus.out, case)}")
                shutil.rmtree(os.path.join(corpus.out, case), ignore_errors=True)
    for kind in malformed.EVENT_TARGETS:
        target = "" if kind == "assistant/message" else f"{kind.split('/')[0]}-"
        for name, edit in malformed.event_variants():
            for which, where in enumerate(("committed", "open")):
                changed = malformed.edit_event(data, compression, kind, which, edit)
                corpus.variant(f"{compression}/event-{target}{where}-{name}", "malformed", compression, sid, changed)


def _vocabulary_cases(corpus: Corpus, compression: str) -> None:
    for name, extra in {"unknown-type": {}, "unknown-type-ignorable": {"ignorable": True}}.items():
        log = shape("balanced", f"v-{name}", turns=1)
        log.add("future/event", {"x": 1}, **extra)
        log.cut()
        corpus.write(f"{compression}/{name}", log, compression)
    # text that is no Unicode scalar value: lone surrogates, which JSON.stringify escapes and every
    # lossless reader must hand back as written (a user message and a streamed answer)
    log = Log("v-lone-surrogates")
    log.balanced_turn("a\ud800b \udc00 \udbff", None)
    log.start_turn("\udfff\ud800 after")
    log.cut()
    log.answer("x\udc00y\ud800zz\udbffw", deltas=True)  # packed: three deltas
    log.cut()
    corpus.write(f"{compression}/lone-surrogates", log, compression)
    sid = "v-legacy"
    data, _ = corpus.write(f"{compression}/base-legacy", shape("balanced", sid, turns=1), compression)
    n = len(shape("balanced", sid, turns=1).events)
    line = json.dumps({"type": "request/header-delta", "seq": n, "time": 1, "data": {}}).encode() + b"\n"
    corpus.variant(
        f"{compression}/legacy-header-delta", "legacy", compression, sid, data + (line if compression == "none" else compress_frame(line))
    )


def _kill_mid_append(path: str, before: int, extra: float) -> None:
    """Wait until the in-flight append has put its first bytes down (Node writes 512 KiB at a
    time), then a little longer; the caller SIGKILLs the writer right after."""
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and os.path.getsize(path) == before:
        pass
    time.sleep(extra)


def sigkill_crashes(install: Installation, out: str, rng: random.Random, count: int) -> list[str]:
    """Real crashes: a Node process running DSH's writer is SIGKILLed in the middle of appends."""
    written = []
    for n in range(count):
        compression = ("none", "zstd")[n % 2]
        root = os.path.join(out, compression, f"sigkill-{n}")
        log = shape("outcome-unknown", f"k-{n}", turns=rng.choice((3, 5)), pad=rng.choice((3_000_000, 6_000_000)))
        bridge = Bridge(install)
        try:
            key = "w"
            bridge.request("create", key=key, root=root, compression=compression, meta=log.meta()).unwrap()
            # the batch holding the padded stream is several 512 KiB writes long: the kill lands in it
            stop = max(range(1, len(log.batches)), key=lambda i: len(json.dumps(log.batches[i])))
            for batch in log.batches[:stop]:
                bridge.request("append", key=key, root=root, compression=compression, session=log.id, events=batch).unwrap()
            path = os.path.join(root, PROJECT, log.id, SUFFIX[compression])
            before = os.path.getsize(path)
            bridge.send("append", key=key, root=root, compression=compression, session=log.id, events=log.batches[stop])
            _kill_mid_append(path, before, rng.uniform(0.0, 0.002))
        finally:
            bridge.kill()
        path = os.path.join(root, PROJECT, log.id, SUFFIX[compression])
        if os.path.exists(path):
            written.append(path)
        else:  # killed before the first publication: nothing to read
            shutil.rmtree(root, ignore_errors=True)
    return written


def generate_corpus(install: Installation, out: str, *, seed: int = 1, held_out: bool = False, sigkills: int = 4) -> list[str]:
    if os.path.exists(out) and os.listdir(out):
        from dsh_sim.errors import InputError

        raise InputError(f"{out}: exists and is not empty; generate into a new directory")
    rng = random.Random(f"dsh-corpus:{seed}:{held_out}")
    with Bridge(install) as bridge:
        corpus = Corpus(bridge, out, rng)
        for compression in ("none", "zstd"):
            _cases(corpus, compression, held_out)
    return corpus.written + sigkill_crashes(install, out, rng, sigkills)
