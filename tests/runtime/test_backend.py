"""The JSONL + zstd backend over real temporary directories and the production adapter.

Ports the reference contract (spec §8.2, §10.6 handle contract) and the JSONL/zstd backend
cases (spec §8.5) that apply to the v3 handle-era runtime.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from typing import Any

import pytest
import trio

from runtime.persistence.backend import UNMATERIALIZED, JsonlBackend
from runtime.persistence.errors import (
    AppendRollbackError,
    LayoutError,
    SessionAlreadyExistsError,
    SessionAlreadyOwnedError,
    SessionFormatUnsupportedError,
    SessionHandleClosedError,
    SessionPersistenceCorruptionError,
    SessionPersistenceNotFoundError,
    SessionReadOnlyError,
    UnsafeSessionPathError,
)
from runtime.persistence.header import SessionHeader
from runtime.persistence.log_format import (
    decode_log,
    encode_batch,
    encode_header,
    header_line,
)
from runtime.persistence.zstd_frames import compress_frame, frame_layouts, scan_frames
from runtime.session.events import Event
from runtime.session.repair import interrupted_turn_closers
from tests.support.persistence import (
    COMPRESSIONS,
    FaultFS,
    append_bytes,
    backend,
    big_chunk_line,
    frame_count,
    header_record,
    line,
    lines,
    log_path,
    meta,
    one_turn_log,
    open_turn,
    read_bytes,
    run,
    second_turn,
    seqs,
    with_header,
)


@pytest.fixture(params=COMPRESSIONS)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def root(tmp_path: Any) -> str:
    return str(tmp_path / "root")


async def stored(b: JsonlBackend, session_id: str, events: list[Event], cwd: str | None = None) -> None:
    handle = await b.create(meta(session_id, cwd))
    await handle.append(events)
    await handle.close()


async def read_all(b: JsonlBackend, session_id: str) -> list[Event]:
    reader = await b.open(session_id, "read")
    try:
        return await reader.read()
    finally:
        await reader.close()


def corrupt_tail(path: str, mode: str) -> None:
    """A crash mid-write after the committed log (the contract's ``corruptTail``)."""
    if mode == "none":
        append_bytes(path, b'{"type":"turn/start","seq":6,"ti')
    else:
        frame = compress_frame(big_chunk_line(6))
        append_bytes(path, frame[: len(frame) // 3])


# -- the handle contract ------------------------------------------------------------------------


def test_round_trip_through_one_write_handle(root: str, mode: str) -> None:
    async def main() -> None:
        b = backend(root, mode)
        log = one_turn_log()
        handle = await b.create(meta("round-trip", "/work"))
        assert handle.access == "write" and handle.session_id == "round-trip"
        await handle.append(log)
        await handle.append([])
        assert await handle.read() == log
        assert await handle.read(3) == log[3:]
        assert await handle.read(0, 2) == log[:2]
        assert await handle.read(1, 3) == log[1:4]
        assert await handle.read(6) == [] and await handle.read(106) == []
        await handle.flush()
        await handle.close()
        fresh = backend(root, mode)
        reader = await fresh.open("round-trip", "read")
        assert reader.header == meta("round-trip", "/work")
        assert await reader.read() == log
        assert (await fresh.stat("round-trip")).event_count == 6

    run(main)


@pytest.mark.parametrize("args", [(-1,), (1.5,), (0, -1), (0, 1.5), (True,)])
def test_read_rejects_bad_offsets_and_lengths(root: str, args: tuple[Any, ...]) -> None:
    async def main() -> None:
        handle = await backend(root).create(meta("read-args"))
        with pytest.raises(ValueError, match="non-negative safe integer"):
            await handle.read(*args)
        await handle.close()

    run(main)


def test_lazy_materialization(root: str, mode: str) -> None:
    async def main() -> None:
        b = backend(root, mode)
        handle = await b.create(meta("lazy", "/work"))
        assert not os.path.exists(root)
        assert await handle.read() == []
        # visible to its own backend before materialization (spec §10.2) ...
        pending = await b.stat("lazy")
        assert pending.revision == UNMATERIALIZED and pending.header == meta("lazy", "/work")
        assert [s.header.id for s in await b.list()] == ["lazy"]
        assert await read_all(b, "lazy") == []
        # ... but not to another instance
        with pytest.raises(SessionPersistenceNotFoundError):
            await backend(root, mode).open("lazy", "read")
        await handle.append(one_turn_log())
        path = log_path(root, "lazy", mode, "/work")
        assert os.path.isfile(path)
        assert [s.header.id for s in await backend(root, mode).list()] == ["lazy"]
        await handle.close()

    run(main)


def test_create_then_close_without_append_leaves_nothing(root: str, mode: str) -> None:
    async def main() -> None:
        b = backend(root, mode)
        handle = await b.create(meta("never-was"))
        reader = await b.open("never-was", "read")
        await handle.close()
        assert not os.path.exists(root)
        assert await b.list() == []
        with pytest.raises(SessionPersistenceNotFoundError):
            await b.stat("never-was")
        with pytest.raises(SessionPersistenceNotFoundError):
            await b.open("never-was", "read")
        with pytest.raises(SessionPersistenceNotFoundError):
            await reader.read()
        again = await b.create(meta("never-was"))  # the id is free again
        await again.close()

    run(main)


def test_flush_of_an_empty_created_session_publishes_its_header(root: str, mode: str) -> None:
    async def main() -> None:
        b = backend(root, mode)
        handle = await b.create(meta("durable-empty", "/work"))
        await handle.flush()
        await handle.close()
        data = read_bytes(log_path(root, "durable-empty", mode, "/work"))
        assert data == encode_header(meta("durable-empty", "/work"), mode)
        fresh = backend(root, mode)
        assert [s.header for s in await fresh.list()] == [meta("durable-empty", "/work")]
        assert await read_all(fresh, "durable-empty") == []
        writer = await fresh.open("durable-empty", "write")
        await writer.append(one_turn_log())
        await writer.close()
        assert await read_all(fresh, "durable-empty") == one_turn_log()

    run(main)


def test_freshness_across_handles(root: str) -> None:
    async def main() -> None:
        b = backend(root)
        writer = await b.create(meta("fresh"))
        early = await b.open("fresh", "read")  # opened while unmaterialized
        await writer.append(one_turn_log())
        before = await b.open("fresh", "read")
        assert await before.read() == one_turn_log()
        await writer.append(second_turn())
        assert seqs(await before.read()) == list(range(8))
        assert seqs(await early.read()) == list(range(8))
        assert seqs(await read_all(b, "fresh")) == list(range(8))
        await writer.close()

    run(main)


def test_backend_flush_materializes_active_handles_and_skips_closed_ones(root: str) -> None:
    async def main() -> None:
        b = backend(root)
        active = await b.create(meta("flush-all"))
        abandoned = await b.create(meta("flush-all-closing"))
        await abandoned.close()
        await b.flush()
        fresh = backend(root)
        assert (await fresh.stat("flush-all")).event_count == 0
        with pytest.raises(SessionPersistenceNotFoundError):
            await fresh.stat("flush-all-closing")
        await active.close()
        await b.aclose()

    run(main)


def test_zstd_first_publication_is_two_frames_and_appends_add_one(root: str) -> None:
    async def main() -> None:
        handle = await backend(root).create(meta("s1", "/proj"))
        await handle.append(one_turn_log())
        path = log_path(root, "s1", "zstd", "/proj")
        first = read_bytes(path)
        assert first[:4] == bytes([0x28, 0xB5, 0x2F, 0xFD])
        assert frame_count(first) == 2
        assert os.listdir(os.path.dirname(path)) == ["session.lock", "session.v3.jsonl.zstd"]
        assert first == encode_header(meta("s1", "/proj"), "zstd") + encode_batch(one_turn_log(), "zstd")
        await handle.append(second_turn())
        after = read_bytes(path)
        assert after.startswith(first) and frame_count(after) == 3
        assert after[len(first) :] == encode_batch(second_turn(), "zstd")
        plaintext = b"".join(
            __import__("zstandard").ZstdDecompressor().decompressobj().decompress(after[s:e]) for s, e in scan_frames(after).frames
        )
        assert plaintext == header_line(meta("s1", "/proj")) + lines(one_turn_log() + second_turn())
        await handle.close()

    run(main)


def test_raw_file_is_the_logical_jsonl_text(root: str) -> None:
    async def main() -> None:
        await stored(backend(root, "none"), "s1", one_turn_log())
        data = read_bytes(log_path(root, "s1", "none"))
        assert data == header_line(meta("s1")) + lines(one_turn_log())

    run(main)


def test_lone_surrogates_are_written_as_json_stringify_writes_them_and_read_back(root: str, mode: str) -> None:
    """Spec §1.1 refuses no lone surrogate: JSON.stringify escapes it (lower-case hex) and
    JSON.parse reads it back, so the log holds the escape and the reader the very string."""
    data = {"turn": 1, "\udc00k": ["a\ud800b", "\udbff", "\udfff\ud800", "é😀"]}
    events = [Event("turn/start", 0, 1, data)]

    async def main() -> None:
        await stored(backend(root, mode), "lone", events)
        assert await read_all(backend(root, mode), "lone") == events
        if mode == "none":
            written = read_bytes(log_path(root, "lone", "none")).splitlines()[1]
            assert written == (
                b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1,"\\udc00k":'
                b'["a\\ud800b","\\udbff","\\udfff\\ud800","\xc3\xa9\xf0\x9f\x98\x80"]}}'
            )

    run(main)


def test_append_contiguity_names_the_expected_seq(root: str, mode: str) -> None:
    async def main() -> None:
        handle = await backend(root, mode).create(meta("contiguity"))
        await handle.append(one_turn_log())
        with pytest.raises(ValueError, match='append seq mismatch for "contiguity": expected 6 at index 0, got 0'):
            await handle.append(one_turn_log())
        gapped = [Event("turn/start", 6, 9, {"turn": 2}), Event("turn/end", 8, 10, {"turn": 2, "reason": {"kind": "completed"}})]
        with pytest.raises(ValueError, match="expected 7 at index 1, got 8"):
            await handle.append(gapped)
        assert seqs(await handle.read()) == list(range(6))
        assert handle.next_seq == 6
        await handle.close()

    run(main)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -0.0, 2**53, (1,), {1}, object(), len, {"k": {2: 1}}, "\ud83d\ude00"])
def test_append_rejects_non_lossless_data_and_stores_nothing(root: str, mode: str, bad: Any) -> None:
    async def main() -> None:
        handle = await backend(root, mode).create(meta("non-json"))
        with pytest.raises(TypeError, match="losslessly JSON-serializable"):
            await handle.append([Event("turn/start", 0, 1, {"turn": 1, "extra": bad})])
        assert not os.path.exists(root)  # nothing materialized
        await handle.append(one_turn_log())
        with pytest.raises(TypeError, match="losslessly JSON-serializable"):
            await handle.append([Event("turn/start", 6, 1, {"turn": 2, "extra": bad})])
        assert await handle.read() == one_turn_log()
        await handle.close()

    run(main)


@pytest.mark.parametrize(
    "event,match",
    [
        (Event("request/header-delta", 6, 1, {}), "request/header-delta"),
        (Event("turn/start", 6, 1, {"turn": 2}, surface_op="append"), "log-only"),
        (Event("user/message", 6, 1, {}), "requires surfaceOp"),
        (Event("turn/start", 6, 1.5, {"turn": 2}), "time"),  # type: ignore[arg-type]
    ],
)
def test_append_refuses_events_its_own_reader_would_refuse(root: str, event: Event, match: str) -> None:
    async def main() -> None:
        handle = await backend(root).create(meta("envelope"))
        await handle.append(one_turn_log())
        with pytest.raises(ValueError, match=match):
            await handle.append([event])
        await handle.append(second_turn())
        assert seqs(await read_all(backend(root), "envelope")) == list(range(8))
        await handle.close()

    run(main)


def test_appended_batch_is_a_private_copy(root: str) -> None:
    async def main() -> None:
        handle = await backend(root).create(meta("copy"))
        data = {"turn": 1}
        await handle.append([Event("turn/start", 0, 1, data)])
        data["turn"] = 99
        assert (await handle.read())[0].data == {"turn": 1}
        await handle.close()

    run(main)


def test_create_validates_created_at_without_reserving_the_id(root: str) -> None:
    async def main() -> None:
        b = backend(root)
        with pytest.raises(ValueError, match="session metadata createdAt must be a non-negative safe integer"):
            await b.create(SessionHeader("frac", 1.5))  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="createdAt"):
            await b.create(SessionHeader("frac", -1))
        handle = await b.create(SessionHeader("frac", 1000))
        await handle.close()

    run(main)


def test_duplicate_create_in_memory_and_on_disk(root: str, mode: str) -> None:
    async def main() -> None:
        b = backend(root, mode)
        first = await b.create(meta("dup", "/work"))
        with pytest.raises(SessionAlreadyExistsError, match='^session "dup" already exists in this backend$'):
            await b.create(meta("dup", "/work"))
        await first.append(one_turn_log())
        await first.close()
        on_disk = 'session "dup" already has a persisted log on disk; load/resume it instead of creating'
        with pytest.raises(SessionAlreadyExistsError, match=f"^{on_disk}$"):
            await backend(root, mode).create(meta("dup", "/work"))
        with pytest.raises(SessionAlreadyExistsError, match="already has a persisted log on disk"):
            await backend(root, mode).create(meta("dup", "/elsewhere"))  # under another cwd

    run(main)


def test_open_absent_is_not_found_for_both_accesses(root: str) -> None:
    async def main() -> None:
        b = backend(root)
        for access in ("read", "write"):
            with pytest.raises(SessionPersistenceNotFoundError, match='^session "absent" not found$'):
                await b.open("absent", access)  # type: ignore[arg-type]
        await stored(b, "present", one_turn_log())
        with pytest.raises(SessionPersistenceNotFoundError):
            await b.open("absent", "write")  # project dir exists, session dir does not
        with pytest.raises(ValueError, match="access"):
            await b.open("present", "append")  # type: ignore[arg-type]

    run(main)


def test_single_write_owner_per_id_released_by_close(root: str, mode: str) -> None:
    async def main() -> None:
        b = backend(root, mode)
        creator = await b.create(meta("owned"))
        owned = 'session "owned" is already owned by an active write handle'
        with pytest.raises(SessionAlreadyOwnedError, match=owned):
            await b.open("owned", "write")
        await creator.append(one_turn_log())
        with pytest.raises(SessionAlreadyOwnedError):
            await b.open("owned", "write")
        await creator.close()
        writer = await b.open("owned", "write")
        assert writer.next_seq == 6
        await writer.append(second_turn())
        assert seqs(await writer.read()) == list(range(8))
        await writer.close()
        async with await b.open("owned", "write") as scoped:  # async with releases
            assert scoped.next_seq == 8
        await (await b.open("owned", "write")).close()

    run(main)


def test_read_handle_refuses_append_and_flush(root: str) -> None:
    async def main() -> None:
        b = backend(root)
        await stored(b, "read-only", one_turn_log())
        reader = await b.open("read-only", "read")
        assert reader.access == "read"
        with pytest.raises(SessionReadOnlyError):
            await reader.append(second_turn())
        with pytest.raises(SessionReadOnlyError):
            await reader.flush()
        assert await reader.read() == one_turn_log()

    run(main)


def test_closed_handle_operations_are_refused_and_close_is_idempotent(root: str) -> None:
    async def main() -> None:
        b = backend(root)
        handle = await b.create(meta("closed"))
        await handle.append(one_turn_log())
        await handle.close()
        await handle.close()
        with pytest.raises(SessionHandleClosedError, match="^read on a closed handle$"):
            await handle.read()
        with pytest.raises(SessionHandleClosedError, match="^append on a closed handle$"):
            await handle.append(second_turn())
        with pytest.raises(SessionHandleClosedError, match="^flush on a closed handle$"):
            await handle.flush()
        reader = await b.open("closed", "read")
        await reader.close()
        with pytest.raises(SessionHandleClosedError):
            await reader.read()

    run(main)


def test_stat_and_list_revisions_agree_and_change_after_append(root: str, mode: str) -> None:
    async def main() -> None:
        b = backend(root, mode)
        writer = await b.create(meta("revisions", "/work"))
        await writer.append(one_turn_log())
        first = await b.stat("revisions")
        assert (await b.stat("revisions")).revision == first.revision
        (listed,) = await b.list()
        assert listed.revision == first.revision and listed.header == first.header == meta("revisions", "/work")
        assert listed.size_bytes == first.size_bytes == os.path.getsize(first.path)
        await writer.append(second_turn())
        changed = await b.stat("revisions")
        assert changed.revision != first.revision and changed.event_count == 8
        assert (await b.list())[0].revision == changed.revision
        await writer.close()

    run(main)


# -- refusals ---------------------------------------------------------------------------------


def test_unknown_stored_type_refuses_read_and_write_open(root: str, mode: str) -> None:
    async def main() -> None:
        b = backend(root, mode)
        handle = await b.create(meta("foreign"))
        await handle.append(one_turn_log())
        await handle.append([Event("mystery/event", 6, 7, {"payload": True})])  # append side is permissive
        await handle.close()
        path = log_path(root, "foreign", mode)
        expected = (
            'session "foreign" contains event type "mystery/event" (seq 6) unknown to this harness and not marked '
            f"ignorable; refusing to interpret the log — it was likely written by a newer harness (raw log: {path})"
        )
        for _ in range(2):  # the failed write open released its claim: same refusal again
            with pytest.raises(SessionFormatUnsupportedError) as err:
                await b.open("foreign", "write")
            assert str(err.value) == expected
        with pytest.raises(SessionFormatUnsupportedError, match="mystery/event"):
            await b.open("foreign", "read")

    run(main)


def test_ignorable_unknown_type_loads(root: str, mode: str) -> None:
    async def main() -> None:
        b = backend(root, mode)
        future = Event("future/event", 6, 7, {"x": 1}, ignorable=True)
        await stored(b, "ignorable", one_turn_log() + [future])
        events = await read_all(backend(root, mode), "ignorable")
        assert events[-1] == future and len(events) == 7

    run(main)


@pytest.mark.parametrize(
    "version,match",
    [
        (
            99,
            r'^session "v" uses log format v99, but this harness reads only v3: the log was written by a newer harness — upgrade the harness to open it',
        ),
        (4, "written by a newer harness.*upgrade the harness"),
        (2, r"^session \"v\" uses log format v2, older than the supported v3, and this build ships no upgrade path for it"),
        (-1, "older than the supported v3.*no upgrade path"),
    ],
)
def test_header_version_refusals(root: str, mode: str, version: int, match: str) -> None:
    async def main() -> None:
        b = backend(root, mode)
        await stored(b, "v", one_turn_log())
        path = log_path(root, "v", mode)
        data = read_bytes(path)
        record = header_record(data, mode)
        record["version"] = version
        with open(path, "wb") as f:
            f.write(with_header(data, mode, record))
        for access in ("read", "write"):
            with pytest.raises(SessionFormatUnsupportedError, match=match) as err:
                await backend(root, mode).open("v", access)  # type: ignore[arg-type]
            assert str(err.value).endswith(f"(raw log: {path})")

    run(main)


@pytest.mark.parametrize("filename,match", [("session.v99.jsonl", "newer harness"), ("session.v2.jsonl", "no upgrade path")])
def test_generation_file_name_version_refusals(root: str, mode: str, filename: str, match: str) -> None:
    async def main() -> None:
        b = backend(root, mode)
        await stored(b, "gen", one_turn_log())
        path = log_path(root, "gen", mode)
        name = filename + (".zstd" if mode == "zstd" else "")
        os.rename(path, os.path.join(os.path.dirname(path), name))
        with pytest.raises(SessionFormatUnsupportedError, match=match):
            await backend(root, mode).open("gen", "read")

    run(main)


def test_mismatched_header_id_is_refused_before_any_repair(root: str, mode: str) -> None:
    async def main() -> None:
        b = backend(root, mode)
        await stored(b, "alpha", one_turn_log() + open_turn())
        await stored(b, "beta", one_turn_log() + open_turn())
        path = log_path(root, "beta", mode)
        data = read_bytes(path)
        record = header_record(data, mode)
        record["id"] = "alpha"
        forged = with_header(data, mode, record)
        with open(path, "wb") as f:
            f.write(forged)
        corrupt_tail(path, mode)
        before = read_bytes(path)
        fresh = backend(root, mode)
        for access in ("write", "read"):
            with pytest.raises(
                SessionPersistenceCorruptionError,
                match=f'corrupt session log "{path}": requested id "beta" does not match header id "alpha"',
            ):
                await fresh.open("beta", access)  # type: ignore[arg-type]
        assert read_bytes(path) == before
        alpha_before = read_bytes(log_path(root, "alpha", mode))
        assert seqs(await read_all(fresh, "alpha")) == list(range(8))
        assert read_bytes(log_path(root, "alpha", mode)) == alpha_before
        record["id"], record["cwd"] = "beta", "/elsewhere"
        with open(path, "wb") as f:
            f.write(with_header(data, mode, record))
        with pytest.raises(SessionPersistenceCorruptionError, match='header id "beta" and cwd identify'):
            await fresh.open("beta", "write")

    run(main)


# -- torn tails -------------------------------------------------------------------------------


def test_torn_tail_is_never_served_and_durably_truncated_by_the_write_path(root: str, mode: str) -> None:
    async def main() -> None:
        await stored(backend(root, mode), "torn", one_turn_log())
        path = log_path(root, "torn", mode)
        committed = read_bytes(path)
        corrupt_tail(path, mode)
        b = backend(root, mode)
        assert await read_all(b, "torn") == one_turn_log()
        assert (await b.stat("torn")).torn_bytes == os.path.getsize(path) - len(committed)
        writer = await b.open("torn", "write")
        assert writer.torn_tail is not None and writer.torn_tail.truncate_to == len(committed)
        await writer.append(second_turn())
        assert writer.torn_tail is None
        assert seqs(await writer.read()) == list(range(8))
        await writer.close()
        data = read_bytes(path)
        assert data == committed + encode_batch(second_turn(), mode)
        assert seqs(await read_all(backend(root, mode), "torn")) == list(range(8))

    run(main)


def test_a_write_open_reads_the_log_once_and_hands_what_it_decoded_to_the_repair(root: str, mode: str) -> None:
    """A resume reads its log once: the bytes a write open makes durable are the ones it
    decodes, and the repair's read right after open is served from that decode (it read the
    whole file three times: to rewrite it, to decode it, and again for the repair)."""

    async def main() -> None:
        await stored(backend(root, mode), "once", one_turn_log())
        path = log_path(root, "once", mode)
        append_bytes(path, lines(open_turn()) if mode == "none" else compress_frame(lines(open_turn())))
        corrupt_tail(path, mode)
        fs = FaultFS()
        writer = await backend(root, mode, fs).open("once", "write")
        opened = writer.read_opened()
        assert [arg for op, arg in fs.calls if op == "open" and arg == path] == [path, path]  # read it, write it back
        assert opened == await writer.read() and seqs(opened) == list(range(8))  # what a read serves
        with pytest.raises(RuntimeError, match="only once"):
            writer.read_opened()
        await writer.append(interrupted_turn_closers(opened))
        assert seqs(await writer.read()) == list(range(10))
        await writer.close()
        fresh = await backend(root, mode).open("once", "write")
        await fresh.append([e.with_seq(e.seq + 4) for e in second_turn()])
        with pytest.raises(RuntimeError, match="only once"):  # what it decoded is no longer the log
            fresh.read_opened()
        await fresh.close()

    run(main)


def test_a_write_open_refuses_a_log_with_a_second_name(root: str, mode: str) -> None:
    """The stat a write open judges the log's links by is the rewritten file's own."""

    async def main() -> None:
        await stored(backend(root, mode), "linked", one_turn_log())
        path = log_path(root, "linked", mode)
        os.link(path, os.path.join(root, "elsewhere"))
        with pytest.raises(UnsafeSessionPathError, match="hard links; another name"):
            await backend(root, mode).open("linked", "write")

    run(main)


def test_raw_crash_fragment_then_resume_repair(root: str) -> None:
    async def main() -> None:
        await stored(backend(root, "none"), "crash", one_turn_log())
        path = log_path(root, "crash", "none")
        committed = read_bytes(path)
        append_bytes(path, lines(open_turn()) + b'{"type":"assistant/chunk","seq":8,"ti')
        b = backend(root, "none")
        writer = await b.open("crash", "write")
        events = await writer.read()
        assert seqs(events) == list(range(8))
        closers = interrupted_turn_closers(events)
        await writer.append(closers)
        repaired = await read_all(b, "crash")
        assert seqs(repaired) == list(range(10))
        assert [e.type for e in repaired[-4:]] == ["turn/start", "step/start", "step/end", "turn/end"]
        assert repaired[-1].data["reason"] == {"kind": "interrupted"}
        assert b"assistant/chunk" not in read_bytes(path)
        assert read_bytes(path).startswith(committed)  # committed events never rewritten
        await writer.append([e.with_seq(e.seq + 4) for e in second_turn()])
        await writer.close()
        assert seqs(await read_all(backend(root, "none"), "crash")) == list(range(12))
        assert interrupted_turn_closers(await read_all(b, "crash")) == []

    run(main)


def test_zstd_torn_frame_records_are_recovered_and_re_encoded(root: str) -> None:
    async def main() -> None:
        await stored(backend(root), "zt", one_turn_log())
        path = log_path(root, "zt", "zstd")
        committed = read_bytes(path)
        frame = compress_frame(lines(open_turn()) + big_chunk_line(8))
        append_bytes(path, frame[: frame_layouts(frame)[0].blocks[0][1] + 5])
        b = backend(root)
        assert seqs(await read_all(b, "zt")) == list(range(8))
        writer = await b.open("zt", "write")
        assert writer.torn_tail is not None and list(writer.torn_tail.recovered) == open_turn()
        assert writer.next_seq == 8
        events = await writer.read()
        closers = interrupted_turn_closers(events)
        assert [c.type for c in closers] == ["step/end", "turn/end"] and seqs(closers) == [8, 9]
        await writer.append(closers)
        await writer.close()
        data = read_bytes(path)
        assert data.startswith(committed)
        scan = scan_frames(data)
        assert scan.torn_start is None and len(scan.frames) == 4  # header, batch, recovered, closers
        assert data[len(committed) :] == encode_batch(open_turn(), "zstd") + encode_batch(closers, "zstd")
        assert list(decode_log(data, "zstd").events) == events + closers
        assert seqs(await read_all(backend(root), "zt")) == list(range(10))

    run(main)


def test_zstd_torn_only_in_checksum_recovers_the_records(root: str) -> None:
    async def main() -> None:
        await stored(backend(root), "ck", one_turn_log())
        path = log_path(root, "ck", "zstd")
        append_bytes(path, encode_batch(second_turn(), "zstd")[:-1])
        b = backend(root)
        assert seqs(await read_all(b, "ck")) == list(range(8))
        writer = await b.open("ck", "write")
        await writer.append([Event("turn/start", 8, 11, {"turn": 3})])
        await writer.close()
        scan = scan_frames(read_bytes(path))
        assert scan.torn_start is None and len(scan.frames) == 4
        assert seqs(await read_all(backend(root), "ck")) == list(range(9))

    run(main)


def test_zstd_frame_torn_in_its_header_is_dropped_byte_for_byte(root: str) -> None:
    async def main() -> None:
        await stored(backend(root), "hd", one_turn_log())
        path = log_path(root, "hd", "zstd")
        committed = read_bytes(path)
        append_bytes(path, b"\x28\xb5")
        b = backend(root)
        assert await read_all(b, "hd") == one_turn_log()
        writer = await b.open("hd", "write")
        assert writer.torn_tail is not None and writer.torn_tail.recovered == ()
        await writer.append(second_turn())
        await writer.close()
        assert read_bytes(path) == committed + encode_batch(second_turn(), "zstd")

    run(main)


def test_zstd_complete_frame_with_a_torn_record_is_refused(root: str) -> None:
    async def main() -> None:
        await stored(backend(root), "tr", one_turn_log())
        path = log_path(root, "tr", "zstd")
        append_bytes(path, compress_frame(b'{"type":"turn/start"'))
        before = read_bytes(path)
        for access in ("read", "write"):
            with pytest.raises(SessionPersistenceCorruptionError, match="complete frame contains a torn JSONL record"):
                await backend(root).open("tr", access)  # type: ignore[arg-type]
        assert read_bytes(path) == before

    run(main)


def test_checksum_flipped_event_frame_is_refused_but_listed(root: str) -> None:
    async def main() -> None:
        b = backend(root)
        big_header = SessionHeader("ck-flip", 1000, cwd="/work", agent_preset=os.urandom(60_000).hex())
        handle = await b.create(big_header)
        await handle.append(one_turn_log())
        await handle.close()
        path = log_path(root, "ck-flip", "zstd", "/work")
        data = bytearray(read_bytes(path))
        header_end = frame_layouts(bytes(data))[0].end
        assert header_end > 3 * 8192  # the header frame spans several read chunks
        data[-1] ^= 0x01
        with open(path, "wb") as f:
            f.write(bytes(data))
        fresh = backend(root)
        (listed,) = await fresh.list()
        assert listed.header == big_header and listed.event_count is None
        for access in ("read", "write"):
            with pytest.raises(SessionPersistenceCorruptionError, match=rf"frame at byte {header_end} failed validation"):
                await fresh.open("ck-flip", access)  # type: ignore[arg-type]
        with pytest.raises(SessionPersistenceCorruptionError, match="failed validation"):
            await fresh.stat("ck-flip")

    run(main)


def test_list_skips_files_without_a_complete_header(root: str, mode: str) -> None:
    async def main() -> None:
        b = backend(root, mode)
        await stored(b, "good", one_turn_log())
        for name, content in (("empty", b""), ("magic", b"\x28\xb5\x2f\xfd"), ("partial", encode_header(meta("partial"), mode)[:-2])):
            session_dir = os.path.join(root, "_no-cwd", name)
            os.makedirs(session_dir)
            with open(os.path.join(session_dir, log_path(root, name, mode).rsplit("/", 1)[1]), "wb") as f:
                f.write(content)
        assert [s.header.id for s in await backend(root, mode).list()] == ["good"]

    run(main)


# -- raw committed-region damage --------------------------------------------------------------


def _raw_session(root: str, body: bytes) -> str:
    path = log_path(root, "raw", "none")
    os.makedirs(os.path.dirname(path))
    with open(path, "wb") as f:
        f.write(header_line(meta("raw")) + body)
    return path


def test_raw_corrupt_line_followed_by_non_turn_end_lines_keeps_the_prefix(root: str) -> None:
    async def main() -> None:
        log = one_turn_log()
        _raw_session(root, lines(log) + b"{garbage\n" + line(second_turn()[0].with_seq(7)))
        b = backend(root, "none")
        assert await read_all(b, "raw") == log
        writer = await b.open("raw", "write")
        await writer.append(second_turn())
        await writer.close()
        assert seqs(await read_all(backend(root, "none"), "raw")) == list(range(8))

    run(main)


def test_raw_corrupt_line_before_a_later_turn_end_is_refused(root: str) -> None:
    async def main() -> None:
        log = one_turn_log()
        _raw_session(root, lines(log[:3]) + b"{garbage\n" + lines(log[3:]))
        with pytest.raises(SessionPersistenceCorruptionError, match="unparsable committed event at line 5"):
            await backend(root, "none").open("raw", "read")

    run(main)


def test_raw_turn_end_at_a_gapped_seq_is_refused(root: str) -> None:
    async def main() -> None:
        log = one_turn_log()
        _raw_session(root, lines(log[:4]) + line(log[5].with_seq(5)))
        with pytest.raises(SessionPersistenceCorruptionError, match="seq gap in committed region"):
            await backend(root, "none").open("raw", "write")

    run(main)


# -- layout refusals --------------------------------------------------------------------------


def test_opposite_encoding_artifact_is_refused(root: str, mode: str) -> None:
    other = "none" if mode == "zstd" else "zstd"

    async def main() -> None:
        await stored(backend(root, other), "opp", one_turn_log())
        b = backend(root, mode)
        with pytest.raises(
            LayoutError, match=f'uses .jsonl{".zstd" if other == "zstd" else ""}, but this backend is configured for compression "{mode}"'
        ):
            await b.open("opp", "read")
        with pytest.raises(LayoutError, match="select the matching compression mode"):
            await b.list()
        # an opposite artifact that appears after create refuses materialization
        handle = await b.create(meta("late", "/work"))
        await stored(backend(root, other), "late-other", one_turn_log())
        os.makedirs(os.path.dirname(log_path(root, "late", mode, "/work")))
        shutil.copy(log_path(root, "late-other", other), os.path.dirname(log_path(root, "late", mode, "/work")))
        with pytest.raises(LayoutError, match="use a separate root"):
            await handle.append(one_turn_log())
        await handle.close()

    run(main)


def test_flat_layout_is_refused(root: str, mode: str) -> None:
    async def main() -> None:
        b = backend(root, mode)
        await stored(b, "ok", one_turn_log())
        flat = os.path.join(root, "_no-cwd", "flat.jsonl" + (".zstd" if mode == "zstd" else ""))
        with open(flat, "wb") as f:
            f.write(encode_header(meta("flat"), mode))
        with pytest.raises(LayoutError, match="unsupported flat-file layout"):
            await b.open("flat", "read")
        with pytest.raises(LayoutError, match="unsupported flat-file layout"):
            await b.list()

    run(main)


def test_duplicate_id_across_project_dirs_is_refused(root: str, mode: str) -> None:
    async def main() -> None:
        b = backend(root, mode)
        await stored(b, "twin", one_turn_log(), cwd="/a")
        shutil.copytree(os.path.join(root, "--a--", "twin"), os.path.join(root, "--b--", "twin"))
        with pytest.raises(LayoutError, match='^duplicate JSONL session id "twin" appears in multiple project directories$'):
            await b.open("twin", "read")

    run(main)


def test_stray_files_in_root_and_stale_temps_are_harmless(root: str) -> None:
    async def main() -> None:
        b = backend(root)
        await stored(b, "s", one_turn_log())
        with open(os.path.join(root, "README"), "w") as f:
            f.write("not a project")
        session_dir = os.path.dirname(log_path(root, "s", "zstd"))
        stale = os.path.join(session_dir, "session.v3.jsonl.zstd.0123456789ab.tmp")
        with open(stale, "wb") as f:
            f.write(b"half")
        assert await read_all(b, "s") == one_turn_log()
        assert [s.header.id for s in await b.list()] == ["s"]
        writer = await b.open("s", "write")  # the lock holder clears crashed publications
        assert not os.path.exists(stale)
        await writer.close()

    run(main)


# -- durability sequences and fault injection ---------------------------------------------------


def test_first_publication_order(root: str) -> None:
    async def main() -> None:
        fs = FaultFS()
        handle = await backend(root, "zstd", fs).create(meta("order", "/work"))
        fs.calls.clear()
        await handle.append(one_turn_log())
        session_dir = os.path.dirname(log_path(root, "order", "zstd", "/work"))
        steps = [(op, arg) for op, arg in fs.calls if op in ("mkdir", "fsync_dir", "link", "fsync", "unlink", "flock")]
        # first, every ancestor of the root is fsynced into its parent (ours, beyond spec §3.6:
        # an ancestor a killed run created would otherwise live only in the page cache)
        ancestors = []
        node = os.path.dirname(root)
        while os.path.dirname(node) != node:
            ancestors.append(node)
            node = os.path.dirname(node)
        assert steps[: len(ancestors)] == [("fsync_dir", os.path.dirname(a)) for a in reversed(ancestors)]
        steps = steps[len(ancestors) :]
        names = [op for op, _ in steps]
        assert names[:6] == ["mkdir", "fsync_dir", "mkdir", "fsync_dir", "mkdir", "fsync_dir"]
        assert [arg for _, arg in steps[:6]] == [
            root,
            os.path.dirname(root),
            os.path.dirname(session_dir),
            root,
            session_dir,
            os.path.dirname(session_dir),
        ]
        assert names[6:] == ["flock", "fsync", "link", "fsync_dir", "unlink"]
        assert steps[-2] == ("fsync_dir", session_dir)
        await handle.close()

    run(main)


def test_failed_materialization_leaves_nothing_and_retries(root: str, mode: str) -> None:
    async def main() -> None:
        fs = FaultFS()
        b = backend(root, mode, fs)
        handle = await b.create(meta("retry"))
        fs.fail_fsync = {1}
        with pytest.raises(OSError, match="simulated fsync ENOSPC"):
            await handle.append(one_turn_log())
        session_dir = os.path.dirname(log_path(root, "retry", mode))
        assert sorted(os.listdir(session_dir)) == ["session.lock"]  # no log, no temp
        await handle.append(one_turn_log())
        assert await read_all(backend(root, mode), "retry") == one_turn_log()
        await handle.close()

    run(main)


def test_failed_directory_fsync_after_link_is_undone_and_retried(root: str) -> None:
    async def main() -> None:
        fs = FaultFS()
        handle = await backend(root, "zstd", fs).create(meta("dirsync"))
        session_dir = os.path.dirname(log_path(root, "dirsync", "zstd"))

        def fail_after_link(path: str) -> None:
            if path == session_dir and any(op == "link" for op, _ in fs.calls):
                del fs.hooks["fsync_dir"]
                raise OSError(errno.EIO, "simulated dir fsync EIO")

        fs.hooks["fsync_dir"] = fail_after_link
        with pytest.raises(OSError, match="dir fsync EIO"):
            await handle.append(one_turn_log())
        assert sorted(os.listdir(session_dir)) == ["session.lock"]
        await handle.append(one_turn_log())
        assert await handle.read() == one_turn_log()
        await handle.close()

    run(main)


def test_failed_append_is_rolled_back_and_retried(root: str, mode: str) -> None:
    async def main() -> None:
        fs = FaultFS()
        b = backend(root, mode, fs)
        handle = await b.create(meta("rollback"))
        await handle.append(one_turn_log())
        path = log_path(root, "rollback", mode)
        size = os.path.getsize(path)
        fs.fail_fsync = {fs.fsyncs + 1}
        with pytest.raises(OSError, match="simulated fsync ENOSPC") as err:
            await handle.append(second_turn())
        assert err.value.errno == errno.ENOSPC
        assert os.path.getsize(path) == size
        assert handle.next_seq == 6
        await handle.append(second_turn())
        assert seqs(await read_all(backend(root, mode), "rollback")) == list(range(8))
        await handle.close()

    run(main)


def test_failed_rollback_reports_both_errors_and_the_handle_heals(root: str, mode: str) -> None:
    async def main() -> None:
        fs = FaultFS()
        b = backend(root, mode, fs)
        handle = await b.create(meta("rb2"))
        await handle.append(one_turn_log())
        path = log_path(root, "rb2", mode)
        committed = read_bytes(path)
        fs.fail_fsync = {fs.fsyncs + 1}
        fs.fail_ftruncate = 1
        with pytest.raises(AppendRollbackError) as err:
            await handle.append(second_turn())
        group = err.value
        assert isinstance(group, ExceptionGroup)
        assert f'failed to roll back append to "{path}"' in str(group)
        original, rollback = group.exceptions
        assert isinstance(original, OSError) and "simulated fsync ENOSPC" in str(original)
        assert isinstance(rollback, OSError) and "simulated rollback EIO" in str(rollback)
        assert len(read_bytes(path)) > len(committed)  # the failed batch is still there
        await handle.append(second_turn())  # heals to the committed length first
        data = read_bytes(path)
        assert data == committed + encode_batch(second_turn(), mode)
        events = await read_all(backend(root, mode), "rb2")
        assert seqs(events) == list(range(8))
        await handle.close()

    run(main)


def test_torn_tail_truncation_failure_is_retried_on_the_next_mutation(root: str) -> None:
    async def main() -> None:
        await stored(backend(root), "tt", one_turn_log())
        path = log_path(root, "tt", "zstd")
        committed = read_bytes(path)
        append_bytes(path, encode_batch(second_turn(), "zstd")[:-1])
        fs = FaultFS()
        writer = await backend(root, "zstd", fs).open("tt", "write")
        fs.fail_fsync = {fs.fsyncs + 2}  # the re-append of the recovered records fails
        with pytest.raises(OSError, match="ENOSPC"):
            await writer.append([Event("turn/start", 8, 11, {"turn": 3})])
        assert writer.torn_tail is not None and writer.next_seq == 8
        await writer.append([Event("turn/start", 8, 11, {"turn": 3})])
        await writer.close()
        data = read_bytes(path)
        assert data == committed + encode_batch(second_turn(), "zstd") + encode_batch([Event("turn/start", 8, 11, {"turn": 3})], "zstd")

    run(main)


def test_records_json_matches_the_reference_line_format(root: str) -> None:
    async def main() -> None:
        await stored(backend(root, "none"), "fmt", one_turn_log())
        text = read_bytes(log_path(root, "fmt", "none")).decode()
        rows = [json.loads(r) for r in text.splitlines()]
        assert list(rows[1]) == ["type", "seq", "time", "data"]
        assert list(rows[2]) == ["type", "seq", "time", "data", "surfaceOp"]

    run(main)


def test_concurrent_duplicate_creates_have_one_winner(root: str) -> None:
    async def main() -> None:
        b = backend(root)
        outcomes: list[object] = []

        async def attempt() -> None:
            try:
                outcomes.append(await b.create(meta("dup-race")))
            except SessionAlreadyExistsError as err:
                outcomes.append(err)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(attempt)
            nursery.start_soon(attempt)
        winners = [o for o in outcomes if not isinstance(o, Exception)]
        assert len(winners) == 1 and len(outcomes) == 2
        await winners[0].close()  # type: ignore[attr-defined]

    run(main)


def test_a_read_handle_never_goes_backwards(root: str, mode: str) -> None:
    async def main() -> None:
        b = backend(root, mode)
        await stored(b, "shrink", one_turn_log())
        writer = await b.open("shrink", "write")
        await writer.append(second_turn())
        await writer.close()
        reader = await b.open("shrink", "read")
        assert len(await reader.read()) == 8
        path = log_path(root, "shrink", mode)
        os.truncate(path, os.path.getsize(path) - len(encode_batch(second_turn(), mode)))
        with pytest.raises(SessionPersistenceCorruptionError, match="stored log shrank below a previously observed prefix"):
            await reader.read()

    run(main)


@pytest.mark.parametrize(
    "field",
    [{"session_id": "s\ud83d\ude00"}, {"session_id": "s", "cwd": "/w\ud83d\ude00"}, {"session_id": "s", "agent_preset": "p\udbff\udfff"}],
    ids=["id", "cwd", "agentPreset"],
)
def test_a_header_holding_a_split_surrogate_pair_is_refused(root: str, field: dict[str, Any]) -> None:
    """Such a pair would read back as one astral character: a session created so could never
    be opened again (its id no longer matches).  Lone surrogates in the header are fine."""
    header = SessionHeader(id=field["session_id"], created_at=1000, cwd=field.get("cwd"), agent_preset=field.get("agent_preset"))

    async def main() -> None:
        with pytest.raises(ValueError, match="session metadata: session header .* holds a surrogate pair as two code points"):
            await backend(root, "none").create(header)
        assert not os.path.exists(root)
        lone = SessionHeader(id="s\ud800", created_at=1000, cwd="/w\udc00", agent_preset="p\udbff")
        await stored(backend(root, "none"), lone.id, one_turn_log(), cwd=lone.cwd)
        assert await read_all(backend(root, "none"), lone.id) == one_turn_log()

    run(main)


def test_an_event_type_holding_a_split_surrogate_pair_is_refused(root: str) -> None:
    async def main() -> None:
        handle = await backend(root, "none").create(meta("types"))
        with pytest.raises(ValueError, match="invalid event: event type holds a surrogate pair as two code points"):
            await handle.append([Event("x/\ud83d\ude00", 0, 1, {}, ignorable=True)])
        await handle.append([Event("x/\ud800", 0, 1, {}, ignorable=True)])  # a lone one reads back as it is
        assert [e.type for e in await handle.read()] == ["x/\ud800"]
        await handle.close()

    run(main)
