"""v0 → v3: the event migration, and publication of the successor generation (spec §10.4, §10.6).

The backend cases port the reference's multi-edge publication tests: a read open migrates in
memory and publishes nothing; a write open publishes ``session.v3.jsonl[.zstd]`` beside the
source and ``session.lock``; source drift between preparation and publication is refused and
retried by re-preparing; an identical winner is accepted and different bytes are refused.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any

import pytest

from runtime.adapters.os_fs import OsFileSystem
from runtime.adapters.system import SystemClock, SystemIds
from runtime.persistence.backend import JsonlBackend
from runtime.persistence.errors import (
    GenerationSourceChangedError,
    GenerationTargetConflictError,
    SessionFormatUnsupportedError,
    SessionPersistenceCorruptionError,
)
from runtime.persistence.layout import SessionPaths, generation_filename
from runtime.persistence.log_format import decode_log
from runtime.persistence.migration import SYSTEM_PLUGIN, MigrationRefused, migrate_v0
from runtime.persistence.publication import (
    encode_migrated,
    inline_verifier,
    thread_verifier,
)
from runtime.persistence.v0_format import V0Header, V0Log, decode_v0
from runtime.persistence.v0_records import V0Event
from runtime.ports import Ports
from runtime.session.events import Event
from tests.runtime.test_v0_format import BATCH_3, BATCHES, HEADER, plain, reference_file
from tests.support.persistence import FaultFS, read_bytes, run

STAGE = re.compile(r"session\.migration\.[0-9a-f]{16}\.jsonl(\.zstd)?\.tmp")


@pytest.fixture(params=["zstd", "none"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


# -- the event migration ------------------------------------------------------------------------


def v0(*events: tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], dict[str, Any]], seed_length: int | None = None) -> V0Log:
    """A decoded v0 log from (type, data[, envelope extras]) triples, seqs and times dense."""
    out = []
    for seq, spec in enumerate(events):
        extra = spec[2] if len(spec) > 2 else {}  # type: ignore[misc]
        sources = extra.get("sourceEventSeqs")
        out.append(
            V0Event(
                spec[0],
                seq,
                100 + seq,
                spec[1],
                extra.get("ignorable", False),
                extra.get("surfaceOp"),
                tuple(sources) if sources is not None else None,
            )
        )
    return V0Log(V0Header("m", 1, cwd="/w", seed_length=seed_length), tuple(out), None)


def kinds(events: tuple[Event, ...]) -> list[str]:
    return [e.type for e in events]


def user(text: str = "hi", mid: str = "u") -> dict[str, Any]:
    return {"id": mid, "role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": "user"}}


def chunk(turn: int = 1, step: int = 1, text: str = "x") -> tuple[str, dict[str, Any]]:
    return ("assistant/chunk", {"turn": turn, "step": step, "chunk": {"type": "text-delta", "index": 0, "text": text}})


def assistant(sources: list[int], turn: int = 1, step: int = 1) -> tuple[str, dict[str, Any], dict[str, Any]]:
    message = {
        "id": f"a{sources}",
        "role": "assistant",
        "content": [{"type": "text", "text": "x"}],
        "source": {"kind": "model", "provider": "p", "model": "m"},
    }
    return ("assistant/message", {"turn": turn, "step": step, "message": message}, {"surfaceOp": "append", "sourceEventSeqs": sources})


APPEND = {"surfaceOp": "append"}
START = [("turn/start", {"turn": 1}), ("step/start", {"turn": 1, "step": 1})]


def test_reference_fixture_migrates_chunks_into_the_stream_and_renumbers() -> None:
    migrated = migrate_v0(decode_v0(reference_file("none"), "none"))
    assert kinds(migrated.events) == [
        "turn/start",
        "step/start",
        "system/message",
        "user/message",
        "request/header",
        "request/context",
        "assistant/message",
        "tool/call",
        "tool/result",
        "step/end",
        "turn/end",
    ]
    assert [e.seq for e in migrated.events] == list(range(11)) and migrated.source_events == 23
    system = migrated.events[2]
    assert system.surface_op == "append" and system.time == 11
    assert system.data["message"]["content"] == [{"type": "text", "text": "You are terse."}]
    assert system.data["message"]["source"] == {"kind": "plugin", "plugin": SYSTEM_PLUGIN}
    assert "system" not in migrated.events[4].data["header"]
    message = migrated.events[6]
    assert message.source_event_seqs is None and message.time == 34
    assert len(message.data["stream"]) == 13
    assert message.data["stream"][0] == {
        "type": "chunk",
        "time": 20,
        "chunk": {"type": "block-start", "index": 0, "blockType": "reasoning"},
    }
    assert [r["time"] for r in message.data["stream"]][1:4] == [21, 22, 21]
    assert migrated.events[8].source_event_seqs == (7,)  # tool/result → its tool/call, renumbered
    assert migrated.header.to_record() == {
        "type": "session",
        "version": 3,
        "id": "legacy",
        "createdAt": 1000,
        "cwd": "/work",
        "isSeeded": False,
        "delegationDepth": 0,
    }


def test_replace_spans_and_payload_references_are_remapped() -> None:
    log = v0(
        *START,
        ("user/message", user(), APPEND),
        chunk(),
        chunk(),
        chunk(),
        assistant([3, 4, 5]),
        ("user/message", user("summary", "s"), {"surfaceOp": {"op": "replace", "start": 2, "end": 6}, "sourceEventSeqs": [2, 6]}),
        ("compaction/summary", {"shadowedRange": {"start": 2, "end": 6}, "shadowedSeqs": [2, 6]}),
        ("command/done", {"sourceEventSeq": 6}),
        ("session/title", {"title": "t", "messageSeqs": [2, 7]}),
        ("tool/code-dispatch-start", {"id": 1}),
    )
    events = migrate_v0(log).events
    assert kinds(events) == [
        "turn/start",
        "step/start",
        "user/message",
        "assistant/message",
        "user/message",
        "compaction/summary",
        "command/done",
        "session/title",
        "tool/ptc-dispatch-start",
    ]
    assert events[4].surface_op == {"op": "replace", "startSeq": 2, "endSeq": 3}
    assert events[4].source_event_seqs == (2, 3)
    assert events[5].data == {"shadowedRange": {"start": 2, "end": 3}, "shadowedSeqs": [2, 3]}
    assert events[6].data == {"sourceEventSeq": 3}
    assert events[7].data["messageSeqs"] == [2, 4]


def test_unclaimed_chunks_become_an_attempt_at_the_last_chunk() -> None:
    log = v0(*START, ("user/message", user(), APPEND), chunk(text="a"), ("llm/retry", {"attempt": 1}), chunk(text="b"), chunk(text="c"))
    events = migrate_v0(log).events
    assert kinds(events) == ["turn/start", "step/start", "user/message", "assistant/attempt", "llm/retry", "assistant/attempt"]
    assert [r["chunk"]["text"] for r in events[5].data["stream"]] == ["b", "c"]
    assert events[5].time == 106 and events[5].data["turn"] == 1


def test_system_prompt_changes_replace_the_head() -> None:
    log = v0(
        *START,
        ("user/message", user(), APPEND),
        ("request/header", {"header": {"config": {}, "system": "one"}, "reason": "initial"}),
        ("step/end", {"turn": 1, "step": 1}),
        ("step/start", {"turn": 1, "step": 2}),
        ("request/header", {"header": {"config": {}, "system": "two"}, "reason": "change"}),
        ("request/header", {"header": {"config": {}}, "reason": "change"}),
    )
    events = migrate_v0(log).events
    assert kinds(events) == [
        "turn/start",
        "step/start",
        "system/message",
        "user/message",
        "request/header",
        "step/end",
        "step/start",
        "system/message",
        "request/header",
        "system/message",
        "request/header",
    ]
    assert events[7].surface_op == {"op": "replace", "startSeq": 2, "endSeq": 2} and events[7].source_event_seqs == (2,)
    assert events[7].data["message"]["content"][0]["text"] == "two" and events[7].data["step"] == 2
    assert events[9].surface_op == {"op": "replace", "startSeq": 7, "endSeq": 7} and events[9].data["message"]["content"] == []
    ids = {e.data["message"]["id"] for e in events if e.type == "system/message"}
    assert len(ids) == 3 and all(i.startswith("v0-to-v3-system-") for i in ids)
    assert migrate_v0(log).events == events  # deterministic, ids included


def test_no_prompt_no_system_event_and_legacy_members() -> None:
    log = v0(
        ("turn/start", {"turn": 1, "trigger": "user"}),
        ("agent-preset/selected", {"agentPreset": "code"}),
        ("user/message", {**user(), "source": {"kind": "plugin", "plugin": "tools-code-mode"}}, APPEND),
    )
    events = migrate_v0(log).events
    assert kinds(events) == ["turn/start", "agent-preset/selected", "user/message"]
    assert events[0].data == {"turn": 1} and events[1].data == {"agentPreset": "ptc"}
    assert events[2].data["source"] == {"kind": "plugin", "plugin": "tools-ptc"}


def test_seed_length_tags_the_inherited_end_seed_or_inserts_one() -> None:
    inherited = [
        *START,
        chunk(),
        chunk(),
        assistant([2, 3]),
        ("step/end", {"turn": 1, "step": 1}),
        ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
    ]
    tagged = migrate_v0(v0(*inherited, ("session/end-seed", {}), ("turn/start", {"turn": 2}), seed_length=7))
    assert tagged.header.is_seeded
    assert kinds(tagged.events)[5:] == ["session/end-seed", "turn/start"] and tagged.events[5].data == {"inherited": True}
    inserted = migrate_v0(v0(*inherited, ("turn/start", {"turn": 2}), seed_length=7))
    assert kinds(inserted.events)[5:] == ["session/end-seed", "turn/start"] and inserted.events[5].time == 106
    at_end = migrate_v0(v0(*inherited, seed_length=7))
    assert kinds(at_end.events)[-1] == "session/end-seed" and len(at_end.events) == 6
    assert not migrate_v0(v0(*inherited, seed_length=0)).header.is_seeded


@pytest.mark.parametrize(
    "events,seed,match",
    [
        ([("turn/start", {"turn": 1}), ("user/message", user())], None, "user/message at seq 1 has no surfaceOp"),
        ([*START, chunk(), ("tool/result", {"message": {}}, {"surfaceOp": "append", "sourceEventSeqs": [2]})], None, "refers to seq 2"),
        (
            [*START, ("tool/result", {"message": {}}, {"surfaceOp": "append", "sourceEventSeqs": [3]}), ("turn/end", {})],
            None,
            "refers to seq 3",
        ),
        ([("mode/set", {})], None, "unsupported legacy mode/set event at seq 0"),
        ([("future/thing", {}, {"ignorable": True})], None, "marked ignorable but is not part of the v0 vocabulary"),
        ([("turn/start", {"turn": 1}), ("request/header", {"header": {"system": "s"}, "reason": "initial"})], None, "outside an open step"),
        (
            [("user/message", user(), APPEND), *START, ("request/header", {"header": {"system": "s"}, "reason": "initial"})],
            None,
            "precedes the first step/start",
        ),
        ([*START, ("request/header", {"header": {}, "reason": "fallback"})], None, 'unsupported legacy request/header reason "fallback"'),
        ([*START, ("request/header-delta", {})], None, "request/header-delta"),
        ([*START, chunk(), assistant([2])], 3, "splits an assistant attempt"),
        ([*START], 5, "seedLength 5 exceeds the 2 stored events"),
        (
            [
                *START,
                ("step/end", {"turn": 1, "step": 1}),
                ("assistant/message", {"turn": 1, "step": 1}, {"surfaceOp": "append", "sourceEventSeqs": [2]}),
            ],
            None,
            "cites seq 2, which is not an unclaimed earlier assistant/chunk",
        ),
        (
            [*START, ("tool/result", {"error": {"code": "X"}, "message": {"content": [{"isError": False}]}}, APPEND)],
            None,
            "non-error tool result",
        ),
        ([*START, ("user/message", user(), {"surfaceOp": {"op": "replace", "startSeq": 0, "endSeq": 0}})], None, "not the v0 spelling"),
        ([("turn/start", {"turn": 1}, APPEND)], None, "log-only but carries surface metadata"),
    ],
)
def test_refusals(events: list[Any], seed: int | None, match: str) -> None:
    with pytest.raises(MigrationRefused, match=match):
        migrate_v0(v0(*events, seed_length=seed))


# -- publication through the backend ---------------------------------------------------------------


class HookProbe:
    """Records named points; runs one-shot hooks (the test's racing writers) at them."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.hooks: dict[str, list[Callable[[dict[str, Any]], None]]] = {}

    def on(self, point: str, hook: Callable[[dict[str, Any]], None]) -> None:
        self.hooks.setdefault(point, []).append(hook)

    async def at(self, point: str, **details: Any) -> None:
        self.seen.append(point)
        if self.hooks.get(point):
            self.hooks[point].pop(0)(details)


def backend(root: str, mode: str, probe: HookProbe | None = None, fs: Any = None, verifier: Any = None) -> JsonlBackend:
    ports = Ports(fs=fs or OsFileSystem(), clock=SystemClock(), ids=SystemIds(), probe=probe or HookProbe())
    return JsonlBackend(root, ports, compression=mode, verifier=verifier)


@pytest.fixture
def root(tmp_path: Any) -> str:
    return str(tmp_path / "root")


def session_dir(root: str, mode: str) -> str:
    return SessionPaths.of(root, "/work", "legacy", mode).session_dir


def write_source(root: str, mode: str, data: bytes | None = None) -> str:
    os.makedirs(session_dir(root, mode), exist_ok=True)
    path = os.path.join(session_dir(root, mode), generation_filename(0, mode))
    with open(path, "wb") as f:
        f.write(reference_file(mode) if data is None else data)
    return path


def target_of(root: str, mode: str) -> str:
    return os.path.join(session_dir(root, mode), generation_filename(3, mode))


def expected_v3(source: bytes, mode: str) -> bytes:
    return encode_migrated(migrate_v0(decode_v0(source, mode)), mode)


def records(events: list[Event]) -> list[dict[str, Any]]:
    return [e.to_record() for e in events]


def test_read_open_stat_and_list_migrate_in_memory_and_publish_nothing(root: str, mode: str) -> None:
    async def main() -> None:
        source = write_source(root, mode)
        before = read_bytes(source)
        b = backend(root, mode)
        reader = await b.open("legacy", "read")
        events = await reader.read()
        assert records(events) == records(list(migrate_v0(decode_v0(before, mode)).events))
        stat = await b.stat("legacy")
        assert (stat.event_count, stat.path, stat.torn_bytes, stat.header.version) == (11, source, 0, 3)
        (listed,) = await b.list()
        assert listed.header == stat.header and listed.path == source
        assert os.listdir(session_dir(root, mode)) == [generation_filename(0, mode)]
        assert read_bytes(source) == before

    run(main)


def test_write_open_publishes_v3_beside_the_source_and_the_lock(root: str, mode: str) -> None:
    async def main() -> None:
        source = write_source(root, mode)
        before, inode = read_bytes(source), os.stat(source).st_ino
        probe = HookProbe()
        writer = await backend(root, mode, probe).open("legacy", "write")
        assert sorted(os.listdir(session_dir(root, mode))) == sorted(
            [generation_filename(0, mode), generation_filename(3, mode), "session.lock"]
        )
        assert [p for p in probe.seen if p.startswith("persist.migration")] == [
            "persist.migration.prepared",
            "persist.migration.staged",
            "persist.migration.verified",
            "persist.migration.published",
        ]
        assert read_bytes(source) == before and os.stat(source).st_ino == inode
        target = read_bytes(target_of(root, mode))
        assert target == expected_v3(before, mode)
        if mode == "zstd":
            assert target.count(b"\x28\xb5\x2f\xfd") >= 2 and decode_log(target, mode).torn is None
        else:
            assert target.startswith(b'{"type":"session","version":3,')
        assert writer.next_seq == 11 and writer.paths.log == target_of(root, mode)
        migrated = await writer.read()
        await writer.append([Event("todo/write", 11, 50, {"n": 1})])
        await writer.close()
        fresh = backend(root, mode)
        reader = await fresh.open("legacy", "read")
        assert records(await reader.read()) == records(migrated) + [Event("todo/write", 11, 50, {"n": 1}).to_record()]
        assert (await fresh.stat("legacy")).path == target_of(root, mode)
        assert read_bytes(source) == before
        again = await fresh.open("legacy", "write")  # native v3 now: no second migration
        assert again.next_seq == 12
        await again.close()

    run(main)


def test_source_drift_is_refused_and_retried_by_re_preparing(root: str, mode: str) -> None:
    async def main() -> None:
        source = write_source(root, mode, reference_file(mode, BATCHES[:2]))
        tail = reference_file(mode, [BATCH_3])[len(reference_file(mode, [])) :]  # BATCH_3 as the next batch

        def drift(details: dict[str, Any]) -> None:
            with open(source, "ab") as f:
                f.write(tail)

        probe = HookProbe()
        probe.on("persist.migration.verified", drift)
        writer = await backend(root, mode, probe).open("legacy", "write")
        assert probe.seen.count("persist.migration.prepared") == 2
        events = await writer.read()
        assert [e.type for e in events][-3:] == ["tool/result", "step/end", "turn/end"]  # the new tail (source seq 22)
        assert read_bytes(target_of(root, mode)) == expected_v3(read_bytes(source), mode)
        await writer.close()

    run(main)


def test_persistent_source_drift_rejects_the_write_open_and_publishes_nothing(root: str, mode: str) -> None:
    async def main() -> None:
        source = write_source(root, mode, reference_file(mode, BATCHES[:2]))

        def touch(details: dict[str, Any]) -> None:  # an older runtime still writing: identity drifts
            os.utime(source, ns=(1, os.stat(source).st_mtime_ns + 1_000_000))

        probe = HookProbe()
        probe.on("persist.migration.verified", touch)
        probe.on("persist.migration.verified", touch)
        b = backend(root, mode, probe)
        with pytest.raises(
            GenerationSourceChangedError, match=re.escape(f'historical session generation changed during migration: "{source}"')
        ):
            await b.open("legacy", "write")
        assert sorted(os.listdir(session_dir(root, mode))) == sorted([generation_filename(0, mode), "session.lock"])
        writer = await b.open("legacy", "write")  # the claim and the lock were released
        await writer.close()

    run(main)


def test_identical_winner_is_accepted(root: str, mode: str) -> None:
    async def main() -> None:
        source = write_source(root, mode)
        winner = expected_v3(read_bytes(source), mode)

        def race(details: dict[str, Any]) -> None:
            with open(target_of(root, mode), "wb") as f:
                f.write(winner)

        probe = HookProbe()
        probe.on("persist.migration.verified", race)
        writer = await backend(root, mode, probe).open("legacy", "write")
        assert "persist.migration.published" in probe.seen
        assert read_bytes(target_of(root, mode)) == winner
        assert not any(STAGE.fullmatch(n) for n in os.listdir(session_dir(root, mode)))
        assert writer.next_seq == 11
        await writer.close()

    run(main)


def test_different_winner_bytes_are_refused(root: str, mode: str) -> None:
    async def main() -> None:
        source = write_source(root, mode)
        before = read_bytes(source)
        other = expected_v3(reference_file(mode, BATCHES[:1]), mode)

        def race(details: dict[str, Any]) -> None:
            with open(target_of(root, mode), "wb") as f:
                f.write(other)

        probe = HookProbe()
        probe.on("persist.migration.verified", race)
        with pytest.raises(GenerationTargetConflictError, match="target bytes differ from the migrated generation"):
            await backend(root, mode, probe).open("legacy", "write")
        assert read_bytes(target_of(root, mode)) == other and read_bytes(source) == before
        assert not any(STAGE.fullmatch(n) for n in os.listdir(session_dir(root, mode)))

    run(main)


def test_unsupported_source_refuses_every_open_and_publishes_nothing(root: str, mode: str) -> None:
    async def main() -> None:
        batch = [
            '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}',
            '{"type":"request/header","seq":1,"time":2,"data":{"header":{"system":"s"},"reason":"initial"}}',
        ]
        source = write_source(root, mode, reference_file(mode, [batch]))
        b = backend(root, mode)
        for access in ("read", "write", "write"):
            with pytest.raises(SessionFormatUnsupportedError, match="outside an open step") as err:
                await b.open("legacy", access)  # type: ignore[arg-type]
            assert str(err.value).endswith(f"; source v0 artifact remains unchanged (raw log: {source})")
        with pytest.raises(SessionFormatUnsupportedError, match="outside an open step"):
            await b.stat("legacy")
        assert not os.path.exists(target_of(root, mode))
        assert set(os.listdir(session_dir(root, mode))) <= {generation_filename(0, mode), "session.lock"}

    run(main)


@pytest.mark.parametrize(
    "version,error,match",
    [
        (3, SessionPersistenceCorruptionError, "filename identifies v0, but its header identifies v3"),
        (7, SessionFormatUnsupportedError, "uses log format v7, but this harness reads only v3"),
    ],
)
def test_header_version_must_match_the_filename(root: str, mode: str, version: int, error: type, match: str) -> None:
    async def main() -> None:
        header = json.loads(HEADER)
        header["version"] = version
        if version == 3:
            header["isSeeded"] = False
        write_source(root, mode, reference_file(mode, BATCHES, json.dumps(header, separators=(",", ":"))))
        b = backend(root, mode)
        for access in ("read", "write"):
            with pytest.raises(error, match=match):
                await b.open("legacy", access)  # type: ignore[arg-type]
        assert not os.path.exists(target_of(root, mode))

    run(main)


def test_torn_source_publishes_its_valid_prefix_and_keeps_its_bytes(root: str, mode: str) -> None:
    async def main() -> None:
        full = reference_file(mode)
        torn = full[:-2] if mode == "zstd" else full[:-5]  # zstd: cut inside the checksum
        source = write_source(root, mode, torn)
        stat = await backend(root, mode).stat("legacy")
        assert stat.torn_bytes and stat.torn_bytes > 0
        writer = await backend(root, mode).open("legacy", "write")
        published = read_bytes(target_of(root, mode))
        assert decode_log(published, mode).torn is None
        assert writer.torn_tail is None
        kinds_ = [e.type for e in await writer.read()]
        assert kinds_[-1] == ("turn/end" if mode == "zstd" else "step/end")  # zstd recovers the torn frame's records
        assert read_bytes(source) == torn
        await writer.close()

    run(main)


def test_publication_order_and_stage_name(root: str, mode: str) -> None:
    async def main() -> None:
        write_source(root, mode)
        fs = FaultFS()
        writer = await backend(root, mode, fs=fs).open("legacy", "write")
        stages = [arg for op, arg in fs.calls if op == "open" and STAGE.fullmatch(os.path.basename(str(arg)))]
        assert len(set(stages)) == 1  # opened to write, then again to read it back for verification
        stage = stages[0]
        first = fs.calls.index(("open", stage))
        steps = [op for op, arg in fs.calls[first:] if op in ("write", "fsync", "link", "fsync_dir", "unlink")]
        assert steps[:5] == ["write", "fsync", "link", "fsync_dir", "unlink"]
        assert ("link", stage) in fs.calls and ("unlink", stage) in fs.calls
        assert not os.path.exists(stage)
        await writer.close()

    run(main)


def test_verification_runs_through_the_injected_verifier(root: str, mode: str) -> None:
    async def main() -> None:
        write_source(root, mode)
        assert backend(root, mode).verifier is thread_verifier
        calls: list[str] = []

        async def recording(fn: Callable[..., Any], *args: Any) -> Any:
            calls.append(fn.__name__)
            return await inline_verifier(fn, *args)

        writer = await backend(root, mode, verifier=recording).open("legacy", "write")
        assert calls == ["verify_generation"]
        await writer.close()

    run(main)


def test_failed_verification_publishes_nothing(root: str, mode: str) -> None:
    async def main() -> None:
        source = write_source(root, mode)

        async def damaged(fn: Callable[..., Any], data: bytes, *args: Any) -> Any:
            return fn(data[:-3], *args)  # what a short read-back would look like

        with pytest.raises(SessionPersistenceCorruptionError, match="staged session generation|torn physical tail|events, expected"):
            await backend(root, mode, verifier=damaged).open("legacy", "write")
        assert sorted(os.listdir(session_dir(root, mode))) == sorted([os.path.basename(source), "session.lock"])

    run(main)


def test_highest_canonical_generation_wins_and_stale_stages_are_removed(root: str, mode: str) -> None:
    async def main() -> None:
        source = write_source(root, mode)
        writer = await backend(root, mode).open("legacy", "write")
        await writer.close()
        stale = os.path.join(session_dir(root, mode), "session.migration.0123456789abcdef.jsonl.tmp")
        with open(stale, "wb") as f:
            f.write(b"half")
        with open(source, "ab") as f:  # the v0 source is evidence now: changes to it are ignored
            f.write(plain(['{"type":"turn/start","seq":23,"time":1,"data":{"turn":2}}']) if mode == "none" else b"")
        b = backend(root, mode)
        assert (await b.stat("legacy")).event_count == 11
        writer = await b.open("legacy", "write")
        assert not os.path.exists(stale)
        await writer.close()

    run(main)


def test_v3_file_name_with_a_v0_header_is_refused(root: str, mode: str) -> None:
    async def main() -> None:
        os.makedirs(session_dir(root, mode))
        with open(target_of(root, mode), "wb") as f:
            f.write(reference_file(mode))
        with pytest.raises(SessionPersistenceCorruptionError, match="filename identifies v3, but its header identifies v0"):
            await backend(root, mode).open("legacy", "read")

    run(main)


def test_resume_repairs_a_migrated_open_turn_in_the_new_generation(root: str, mode: str) -> None:
    from runtime.agent.resume import repair_and_seed

    async def main() -> None:
        source = write_source(root, mode, reference_file(mode, BATCHES[:2]))  # crashed after tool/call
        before = read_bytes(source)
        writer = await backend(root, mode).open("legacy", "write")
        report = await repair_and_seed(writer)
        await writer.close()
        assert [e.type for e in report.closers] == ["tool/result", "step/end", "turn/end"]
        assert report.verdicts == {"c1": "TOOL_OUTCOME_UNKNOWN"}
        assert report.closers[0].source_event_seqs == (7,)  # the renumbered tool/call
        events = decode_log(read_bytes(target_of(root, mode)), mode).events
        assert len(events) == 11 and events[-1].data["reason"] == {"kind": "interrupted"}
        assert read_bytes(source) == before

    run(main)


def test_cli_inspect_reports_the_migration_and_migrate_publishes(root: str, mode: str, capsys: pytest.CaptureFixture[str]) -> None:
    import types

    from dsh_sim.cli.commands import migrate as migrate_cmd
    from dsh_sim.errors import InputError
    from dsh_sim.sessionlogs.inspect import inspect_historical, inspect_path

    source = write_source(root, mode, reference_file(mode, BATCHES[:2]))
    report = inspect_path(session_dir(root, mode))
    assert report["format"] == {"version": 0, "compression": mode, "bytes": len(read_bytes(source))}
    assert report["migration"]["from"] == 0 and report["migration"]["to"] == 3
    assert "a write open would migrate this log to session.v3" in report["migration"]["note"]
    assert "nothing was written" in report["migration"]["note"]
    assert len(report["events"]) == 8 and report["header"]["version"] == 3
    assert [e["type"] for e in report["closers"]] == ["tool/result", "step/end", "turn/end"]
    assert not os.path.exists(target_of(root, mode))
    assert migrate_cmd.main(types.SimpleNamespace(path=source, json=True)) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["published"] == target_of(root, mode) and out["events"] == 8 and out["source_events"] == 20
    assert inspect_path(session_dir(root, mode))["migration"] is None  # now native v3
    assert migrate_cmd.main(types.SimpleNamespace(path=session_dir(root, mode), json=False)) == 0
    assert "nothing to migrate" in capsys.readouterr().out
    with open(source, "wb") as f:
        f.write(b'{"type":"session","version":0,"id":"legacy","createdAt":1,"cwd":"rel"}\n')
    with pytest.raises(InputError, match=f"^{re.escape(source)}: refused: cannot migrate from v0: .*not absolute"):
        inspect_historical(source, 0, "none", read_bytes(source))


def test_a_replacement_that_does_not_cite_what_it_shadows_is_refused() -> None:
    log = v0(
        *START,
        ("user/message", user(), APPEND),
        ("user/message", user("b", "b"), APPEND),
        ("user/message", user("s", "s"), {"surfaceOp": {"op": "replace", "start": 2, "end": 3}, "sourceEventSeqs": [2]}),
    )
    with pytest.raises(MigrationRefused, match="does not cite every node it shadows"):
        migrate_v0(log)
