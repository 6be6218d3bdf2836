"""The literal pool kept on disk is the pool a fresh parse gives, iteration order included,
and its key sees every part the pool depends on."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis.internal.constants_ast import Constants, _constants_from_source

from dsh_sim.drivers import constants, constants_cache


def _fresh(sources: list[tuple[str, bytes]]) -> Constants:
    pool = Constants()
    for _, data in sources:
        pool |= _constants_from_source(data, limit=True)
    return pool


def _same(a: Constants, b: Constants) -> bool:
    """Equal, and every set iterates in the same order (Hypothesis picks by position)."""
    return a == b and all(list(getattr(a, kind)) == list(getattr(b, kind)) for kind in constants_cache.KINDS)


@pytest.fixture
def cache(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("DSH_SIM_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.mark.slow
def test_the_cached_pool_is_the_pool_of_a_fresh_parse(cache) -> None:  # type: ignore[no-untyped-def]
    sources = constants.project_sources()
    assert len(sources) > 100
    fresh = _fresh(sources)
    computed = constants_cache.pool(sources)  # a miss: parsed, then stored
    assert len(list(cache.iterdir())) == 1
    reloaded = constants_cache.pool(sources)  # a hit
    assert _same(computed, fresh) and _same(reloaded, fresh)


def test_a_stale_or_damaged_cache_is_not_used(cache) -> None:  # type: ignore[no-untyped-def]
    sources = [("pkg/a.py", b"x = 70001\ny = 'seven'\nz = 2.5\nw = b'ab'\n"), ("pkg/b.py", b"q = -30001\n")]
    path = os.path.join(cache, f"constants-{constants_cache.key(sources)}.json")
    constants_cache.pool(sources)
    with open(path, encoding="utf-8") as handle:
        stored = json.load(handle)
    stored["files"][0]["integers"] = [80001]  # what a wrong cache would hand back
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(stored, handle)
    assert constants_cache.pool(sources).integers == {80001, -30001}  # the cache is trusted under its key ...
    changed = [("pkg/a.py", b"x = 90001\ny = 'seven'\nz = 2.5\nw = b'ab'\n"), sources[1]]
    assert constants_cache.pool(changed).integers == {90001, -30001}  # ... and an edited file is a new key
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("{not json")
    assert _same(constants_cache.pool(sources), _fresh(sources))  # damaged: parsed again


def test_the_key_sees_every_part(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import hypothesis

    sources = [("pkg/a.py", b"x = 7\n"), ("pkg/b.py", b"y = 8\n")]
    base = constants_cache.key(sources)
    assert constants_cache.key([("pkg/a.py", b"x = 8\n"), sources[1]]) != base  # a file's bytes
    assert constants_cache.key([("pkg/c.py", b"x = 7\n"), sources[1]]) != base  # a file's path
    assert constants_cache.key(sources[::-1]) != base  # the order of the union
    assert constants_cache.key(sources[:1]) != base  # a file more or less
    monkeypatch.setattr(hypothesis, "__version__", "0.0.0")
    assert constants_cache.key(sources) != base  # Hypothesis' visitor decides what a literal is
    monkeypatch.undo()
    monkeypatch.setattr(constants_cache.sys, "version_info", (2, 7, 0))
    assert constants_cache.key(sources) != base  # the parser


def test_an_unwritable_cache_still_gives_the_pool(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("DSH_SIM_CACHE_DIR", str(blocker / "sub"))
    sources = [("pkg/a.py", b"x = 7\n")]
    assert _same(constants_cache.pool(sources), _fresh(sources))


def test_only_the_newest_cache_files_are_kept(cache) -> None:  # type: ignore[no-untyped-def]
    names = []
    for n in range(constants_cache.KEEP + 3):
        sources = [("pkg/a.py", f"x = {70001 + n}\n".encode())]
        constants_cache.pool(sources)
        names.append(f"constants-{constants_cache.key(sources)}.json")
        os.utime(cache / names[-1], (1_000_000 + n, 1_000_000 + n))  # each file older than the next
    assert sorted(p.name for p in cache.iterdir()) == sorted(names[-constants_cache.KEEP :])


def test_strings_holding_surrogates_come_back_as_they_were_parsed(cache) -> None:  # type: ignore[no-untyped-def]
    """JSON reads an escaped surrogate pair held as two code points back as one: the cached pool
    differed from a fresh parse once the sources held such a literal (the edge values do)."""
    sources = [("pkg/a.py", b"pair = '\\ud83d\\ude00!'\nlone = 'a\\udc00b'\nplain = 'caf\\xe9 ok'\n")]
    computed = constants_cache.pool(sources)
    reloaded = constants_cache.pool(sources)
    assert {"\ud83d\ude00!", "a\udc00b"} <= computed.strings
    assert _same(computed, _fresh(sources)) and _same(reloaded, _fresh(sources))
