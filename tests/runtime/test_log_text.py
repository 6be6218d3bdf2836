"""The runtime's log records keep an error's text, never the error (``runtime/log_text.py``).

A record holding the exception held its traceback and every frame behind it: under a handler
that keeps records (pytest's log capture, a memory handler) a fuzz run's failed background
writes kept seven whole simulations alive (``tests/test_fuzz_memory.py``).
"""

from __future__ import annotations

import logging

import pytest

from runtime.log_text import error_text
from runtime.session.session import Session


class Clock:
    def now_ms(self) -> int:
        return 1_760_000_000_000


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


def test_the_text_is_what_percent_s_prints() -> None:
    err = OSError(5, "Input/output error")
    record = logging.LogRecord("dsh", logging.WARNING, __file__, 1, "%s", (err,), None)
    assert error_text(err) == record.getMessage() == "[Errno 5] Input/output error"


def test_an_exception_whose_str_raises_is_named_instead_of_escaping() -> None:
    assert error_text(Unprintable()) == "<exception str() failed>"


def test_a_throwing_listener_is_logged_by_its_text(caplog: pytest.LogCaptureFixture) -> None:
    session = Session("s", Clock())

    def listener(event: object) -> None:
        raise ValueError("observer broke")

    session.subscribe(listener)
    with caplog.at_level(logging.WARNING, logger="dsh.session"):
        session.append("todo/write", {"items": []})
    assert [r.getMessage() for r in caplog.records] == ["session/event listener threw: observer broke"]
    assert not [a for r in caplog.records for a in r.args or () if isinstance(a, BaseException)]
