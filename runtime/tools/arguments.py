"""Checks of arguments shared by the runtime's own tools.

The log holds any JSON text, lone surrogates included (spec §1.1), so a model's arguments can
carry text that has no UTF-8: no file can hold it and no OS can take it as a path or an argv
entry (Python would raise deep inside a system call, or pass a ``\\udc80``-style code point on
as a raw byte).  The tools refuse such text up front, the same way on every filesystem.
"""

from __future__ import annotations

from runtime.tools.results import HarnessError


def utf8_text(text: str, what: str) -> bytes:
    """``text`` as UTF-8, or :class:`HarnessError` ``INVALID_ARGUMENTS`` naming ``what``."""
    try:
        return text.encode()
    except UnicodeEncodeError as err:
        raise HarnessError(
            f"{what} is not UTF-8 text: a lone surrogate at index {err.start}", name="InvalidArguments", code="INVALID_ARGUMENTS"
        ) from None
