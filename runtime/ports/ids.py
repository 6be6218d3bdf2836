"""The id/randomness port: every identifier the runtime mints comes from here."""

from __future__ import annotations

from typing import Protocol


class Ids(Protocol):
    def uuid(self) -> str:
        """A fresh RFC 4122 version-4 style id string."""
        ...

    def token_hex(self, nbytes: int) -> str:
        """``2 * nbytes`` lowercase hex characters (temporary file names)."""
        ...
