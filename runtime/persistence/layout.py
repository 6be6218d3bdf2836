"""Where a session lives on disk (spec §3.2, §10.4).

``<root>/<projectDir>/<encodedId>/session.v3.jsonl.zstd`` — ``projectDir`` comes from the
header's ``cwd`` through :func:`project_key`; ``encodedId`` from :func:`encode_segment`.
Both encodings work on UTF-16 code units like the reference runtime, so the same id maps to
the same directory in both implementations, and ``encode_segment`` is injective: no id can
name ``.``, ``..`` or a path separator, so no id escapes the root.  Both are pure and called on
every open, locate and publication of the same few ids, so their results are cached.
"""

from __future__ import annotations

import functools
import re

import attrs

from runtime.session.vocabulary import SESSION_FORMAT_VERSION

_SAFE = re.compile(r"[A-Za-z0-9._-]")
NO_CWD_DIR = "_no-cwd"
LOCK_FILENAME = "session.lock"
MAX_SEGMENT_BYTES = 255


def _utf16_units(text: str) -> list[int]:
    units: list[int] = []
    for ch in text:
        code = ord(ch)
        if code > 0xFFFF:
            code -= 0x10000
            units.extend((0xD800 | (code >> 10), 0xDC00 | (code & 0x3FF)))
        else:
            units.append(code)
    return units


def _escape(unit: int) -> str:
    ch = chr(unit)
    if unit < 0x80 and _SAFE.fullmatch(ch):
        return ch
    return f"~{unit:04X}"


@functools.lru_cache(maxsize=256)
def encode_segment(segment: str) -> str:
    """Injective encoding of an id into one path segment."""
    if segment == "":
        raise ValueError("cannot encode an empty path segment")
    if segment == ".":
        return "~002E"
    if segment == "..":
        return "~002E~002E"
    encoded = "".join(_escape(unit) for unit in _utf16_units(segment))
    if len(encoded.encode()) > MAX_SEGMENT_BYTES:
        raise ValueError(f"session id encodes to {len(encoded)} bytes, more than one path segment allows")
    return encoded


@functools.lru_cache(maxsize=256)
def project_key(cwd: str | None) -> str:
    """The project directory name for a header ``cwd`` (spec §3.2)."""
    if cwd is None:
        return NO_CWD_DIR
    out: list[str] = []
    in_separator_run = False
    for unit in _utf16_units(cwd):
        if unit in (0x2F, 0x5C, 0x3A):  # '/', '\\', ':'
            if not in_separator_run:
                out.append("-")
            in_separator_run = True
            continue
        in_separator_run = False
        out.append(_escape(unit))
    slug = "".join(out).lstrip("-")
    if not slug:
        slug = "root"
    return f"--{slug[:251]}--"


def generation_filename(version: int, compression: str) -> str:
    """Canonical file name of a generation: v0 ``session.jsonl``, vN ``session.vN.jsonl``."""
    stem = "session.jsonl" if version == 0 else f"session.v{version}.jsonl"
    return stem + (".zstd" if compression == "zstd" else "")


_GENERATION = re.compile(r"session(?:\.v([1-9][0-9]*))?\.jsonl(\.zstd)?")


def parse_generation_filename(name: str) -> tuple[int, str] | None:
    """``(version, compression)`` for a canonical generation name, else ``None``."""
    match = _GENERATION.fullmatch(name)
    if match is None:
        return None
    return (int(match.group(1)) if match.group(1) else 0, "zstd" if match.group(2) else "none")


def stage_path(session_dir: str, token: str, compression: str) -> str:
    """Temp name of a migrated generation being published: ``session.migration.<hex><suffix>.tmp``.

    Not canonical (never selected as a generation); a write open removes leftovers.
    """
    suffix = ".jsonl.zstd" if compression == "zstd" else ".jsonl"
    return f"{session_dir}/session.migration.{token}{suffix}.tmp"


@attrs.frozen
class SessionPaths:
    root: str
    project_dir: str
    session_dir: str
    log: str
    lock: str

    @classmethod
    def of(cls, root: str, cwd: str | None, session_id: str, compression: str) -> SessionPaths:
        project_dir = f"{root}/{project_key(cwd)}"
        session_dir = f"{project_dir}/{encode_segment(session_id)}"
        return cls(
            root=root,
            project_dir=project_dir,
            session_dir=session_dir,
            log=f"{session_dir}/{generation_filename(SESSION_FORMAT_VERSION, compression)}",
            lock=f"{session_dir}/{LOCK_FILENAME}",
        )

    def temp_for(self, token: str) -> str:
        return f"{self.log}.{token}.tmp"
