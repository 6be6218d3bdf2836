"""Directory layout: projectKey, encodeSegment and generation names (spec §3.2, §10.4)."""

from __future__ import annotations

import os

import pytest

from runtime.persistence.layout import (
    SessionPaths,
    encode_segment,
    generation_filename,
    parse_generation_filename,
    project_key,
)
from tests.support.persistence import backend, meta, one_turn_log, run


@pytest.mark.parametrize(
    "cwd,key",
    [
        (None, "_no-cwd"),
        ("/", "--root--"),
        ("///", "--root--"),
        ("/home/user/proj", "--home-user-proj--"),
        ("/a//b\\\\c::d", "--a-b-c-d--"),
        ("C:\\Users\\me", "--C-Users-me--"),
        ("/a/:\\/b", "--a-b--"),
        ("/x/.hidden/a_b-c.d", "--x-.hidden-a_b-c.d--"),
        ("/home/~user", "--home-~007Euser--"),
        ("/p/é", "--p-~00E9--"),
        ("/p/a b", "--p-a~0020b--"),
        ("/p/😀", "--p-~D83D~DE00--"),  # astral: two UTF-16 code units
        ("/p/中文", "--p-~4E2D~6587--"),
        ("/-lead", "--lead--"),
    ],
)
def test_project_key(cwd: str | None, key: str) -> None:
    assert project_key(cwd) == key


def test_project_key_truncates_the_slug_to_251_characters() -> None:
    key = project_key("/" + "a" * 400)
    assert key == "--" + "a" * 251 + "--"
    assert len(key) == 255
    # truncation counts escaped characters, like the reference (it may cut an escape)
    key = project_key("/" + "é" * 100)
    assert len(key) == 255 and key == "--" + "~00E9" * 50 + "~--"


@pytest.mark.parametrize(
    "segment,encoded",
    [
        ("s1", "s1"),
        ("A-z_0.9", "A-z_0.9"),
        (".", "~002E"),
        ("..", "~002E~002E"),
        ("...", "..."),
        ("a/b", "a~002Fb"),
        ("a\\b", "a~005Cb"),
        ("a:b", "a~003Ab"),
        ("~", "~007E"),
        ("~002E", "~007E002E"),
        ("é", "~00E9"),
        ("😀", "~D83D~DE00"),
        ("\ud800", "~D800"),  # lone surrogate still encodes
        ("../../etc/pwn", "..~002F..~002Fetc~002Fpwn"),
        (" ", "~0020"),
        ("\x00", "~0000"),
    ],
)
def test_encode_segment(segment: str, encoded: str) -> None:
    assert encode_segment(segment) == encoded
    assert "/" not in encoded and encoded not in (".", "..")


def test_encode_segment_empty_is_an_error() -> None:
    with pytest.raises(ValueError, match="cannot encode an empty path segment"):
        encode_segment("")


def test_encode_segment_is_injective_on_tricky_ids() -> None:
    ids = [".", "..", "~002E", "~002E~002E", "a.b", "a~002Eb", "😀", "\ud83d\ude00", "~D83D~DE00", "a/b", "a~002Fb"]
    encoded = [encode_segment(i) for i in ids]
    # "😀" and its surrogate-pair spelling are the same UTF-16 string, so they must agree
    assert encoded[6] == encoded[7]
    distinct = {e for i, e in zip(ids, encoded) if i != "\ud83d\ude00"}
    assert len(distinct) == len(ids) - 1


@pytest.mark.parametrize(
    "name,parsed",
    [
        ("session.jsonl", (0, "none")),
        ("session.jsonl.zstd", (0, "zstd")),
        ("session.v3.jsonl.zstd", (3, "zstd")),
        ("session.v12.jsonl", (12, "none")),
        ("session.v0.jsonl", None),
        ("session.v03.jsonl", None),
        ("session.V3.jsonl", None),
        ("session.v3.jsonl.zstd.0123456789ab.tmp", None),
        ("session.lock", None),
    ],
)
def test_generation_filenames(name: str, parsed: tuple[int, str] | None) -> None:
    assert parse_generation_filename(name) == parsed
    if parsed is not None:
        assert generation_filename(*parsed) == name


def test_session_paths() -> None:
    paths = SessionPaths.of("/r", "/work", "s1", "zstd")
    assert paths.log == "/r/--work--/s1/session.v3.jsonl.zstd"
    assert paths.lock == "/r/--work--/s1/session.lock"
    assert SessionPaths.of("/r", None, "s1", "none").log == "/r/_no-cwd/s1/session.v3.jsonl"
    assert paths.temp_for("0123456789ab") == "/r/--work--/s1/session.v3.jsonl.zstd.0123456789ab.tmp"


def test_path_traversal_id_stays_under_root(tmp_path) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "root"

    async def main() -> None:
        b = backend(root, "none")
        handle = await b.create(meta("../../etc/pwn", "/work"))
        await handle.append(one_turn_log())
        await handle.close()
        reader = await b.open("../../etc/pwn", "read")
        assert len(await reader.read()) == 6

    run(main)
    found = [os.path.join(d, f) for d, _, files in os.walk(tmp_path) for f in files]
    assert found and all(path.startswith(str(root) + os.sep) for path in found)
    assert os.listdir(root / "--work--") == ["..~002F..~002Fetc~002Fpwn"]
