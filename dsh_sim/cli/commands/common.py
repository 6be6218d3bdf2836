"""Shared CLI plumbing: one-line errors, JSON output, exit codes."""

from __future__ import annotations

import json
import sys
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


def emit_json_lines(obj: dict[str, Any], *, listed: str) -> None:
    """``obj`` as indented JSON whose list ``listed`` holds one compact item per line.

    For documents with one long list (a session log's events): each item is encoded by the C
    encoder (``json.dumps`` without ``indent``; the indenting encoder is pure Python) and the
    text leaves in chunks of about a megabyte, not in millions of small writes.  The same JSON
    value as :func:`emit_json`; only the whitespace differs.
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
        if key == listed and isinstance(value, list) and value:
            put("[")
            for position, item in enumerate(value):
                put(("," if position else "") + "\n    " + json.dumps(item, ensure_ascii=False))
            put("\n  ]")
        else:
            put(json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n  "))
    put("\n}\n")
    sys.stdout.write("".join(out))
