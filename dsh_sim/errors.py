"""The one error every part of dsh-sim raises for bad input.

Bad input — an unreadable or refused file, an invalid scenario, a flag out of range — is one
line naming the file (or flag) and what is wrong; the command line prints it and exits 2,
with no traceback.  Library code raises :class:`InputError`; it never prints or exits.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class InputError(Exception):
    """One clear line for the user: the input named in it cannot be used, and why."""


class FieldError(ValueError):
    """A value class refused one of its fields: ``field`` names it, so a loader can point at
    the exact JSON path (``$.steps[3].args.rule.match``) instead of the whole object."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def did_you_mean(word: object, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``choices``, or ``""``."""
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def one_of(word: object, choices: Iterable[str], what: str) -> str:
    """The refusal of ``word`` as a ``what``: the known names, or the closest one."""
    names = list(choices)
    hint = did_you_mean(word, names)
    if hint:
        return f"unknown {what} {word!r}{hint}"
    shown = ", ".join(names) if len(names) <= 12 else ", ".join(names[:12]) + ", ..."
    return f"unknown {what} {word!r}; known: {shown}"
