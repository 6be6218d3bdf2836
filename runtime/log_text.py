"""The text a log record keeps of an error.

A record whose arguments hold the exception holds its traceback, and with it every frame the
error passed through (a failed write's handle, backend and runtime), for as long as any
handler keeps the record: a memory handler, an application's ring of recent records, a test's
log capture.  So the runtime logs :func:`error_text` — what ``%s`` would have printed, taken
now — and never the exception itself.
"""

from __future__ import annotations


def error_text(err: BaseException) -> str:
    """``str(err)``; an exception whose ``__str__`` itself raises is named as the traceback
    module names it, instead of escaping from the code that only wanted to log it."""
    try:
        return str(err)
    except Exception:
        return "<exception str() failed>"
