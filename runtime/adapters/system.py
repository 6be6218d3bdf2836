"""Wall clock and random ids for production use."""

from __future__ import annotations

import secrets
import time
import uuid


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class SystemIds:
    def uuid(self) -> str:
        return str(uuid.uuid4())

    def token_hex(self, nbytes: int) -> str:
        return secrets.token_hex(nbytes)
