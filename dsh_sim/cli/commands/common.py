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
