"""Shared CLI plumbing: one-line errors, JSON output, exit codes."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

from dsh_sim.errors import InputError

EXIT_OK = 0
EXIT_VIOLATION = 1  # a check failed (invariant, expectation, missing coverage)
EXIT_USAGE = 2  # bad input: unreadable file, refused log, invalid scenario


class CliError(InputError):
    """One clear line for the user, and an exit code (bad input: 2)."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    raise CliError(message, code)


def emit_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


CHUNK = 1 << 20  # characters written at once by emit_json_lines


def _item_encoder() -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=False)`` for acyclic JSON values, with the C encoder
    built once (``json.dumps`` builds one per call, which costs more than a small item)."""
    try:
        from _json import make_encoder
    except ImportError:  # pragma: no cover - an interpreter without CPython's accelerator
        return lambda value: json.dumps(value, ensure_ascii=False)
    encode = make_encoder(None, json.JSONEncoder().default, json.encoder.encode_basestring, None, ": ", ", ", False, False, False)
    return lambda value: "".join(encode(value, 0))


encode_item = _item_encoder()


class Encoded:
    """A list whose items are already JSON texts, one per line of a text file (a spool the
    items were written to as they were read): :func:`emit_json_lines` copies them through."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = lines


def emit_json_lines(obj: dict[str, Any], *, listed: str) -> None:
    """``obj`` as indented JSON whose list ``listed`` holds one compact item per line.

    For documents with one long list (a session log's events): each item is encoded by the C
    encoder (``json.dumps`` without ``indent``; the indenting encoder is pure Python) and the
    text leaves in chunks of about a megabyte, not in millions of small writes.  The same JSON
    value as :func:`emit_json`; only the whitespace differs.  ``obj[listed]`` may be
    :class:`Encoded` (items encoded before, e.g. spooled to a file while a log streamed by).
    """
    out: list[str] = []
    size = 0

    def put(text: str) -> None:
        nonlocal size
        out.append(text)
        size += len(text)
        if size >= CHUNK:
            sys.stdout.write("".join(out))
            out.clear()
            size = 0

    put("{")
    for index, (key, value) in enumerate(obj.items()):
        put(("," if index else "") + "\n  " + json.dumps(key, ensure_ascii=False) + ": ")
        if key == listed and isinstance(value, Encoded):
            texts: Iterable[str] = (line.rstrip("\n") for line in value.lines)
        elif key == listed and isinstance(value, list):
            texts = map(encode_item, value)
        else:
            put(json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n  "))
            continue
        position = 0
        for position, text in enumerate(texts, 1):
            put(("[" if position == 1 else ",") + "\n    " + text)
        put("\n  ]" if position else "[]")
    put("\n}\n")
    sys.stdout.write("".join(out))
