"""The comparisons of the reader differential: one method per runtime read entry point.

Each method calls the runtime, compares what it returned or raised with the expected
:class:`~dsh_sim.evidence.oracles.read_outcome.ReadOutcome` exactly, and records a mismatch
(case, entry point, what differs).  Error texts are compared where the spec gives them: the
format's refusals (§3.4, §3.7) inside ``stored session "<id>" failed validation: …`` (§3.7),
``<op> on a closed handle`` and ``stored log shrank below a previously observed prefix``
(§10.2), and the range refusal the spec words for ``readFrom`` (§3.8), for the handle's
``offset`` and ``length``.
"""

from __future__ import annotations

import errno
from collections.abc import Awaitable
from typing import Any

from dsh_sim.adapters.simfs import ProcessView
from dsh_sim.evidence.oracles.read_outcome import CORRUPT, UNSUPPORTED, ReadOutcome
from runtime.persistence.backend import JsonlBackend
from runtime.persistence.errors import (
    SessionFormatUnsupportedError,
    SessionPersistenceCorruptionError,
    SessionReadOnlyError,
    UnsafeSessionPathError,
)
from runtime.persistence.handles import ReadHandle
from runtime.session.lossless import MAX_SAFE_INTEGER

BAD_RANGES: tuple[tuple[Any, Any], ...] = ((-1, None), (2**53, None), (1.5, None), ("1", None), (0, -1), (0, 2**53), (0, 2.0), (True, None))
ERRORS = {CORRUPT: SessionPersistenceCorruptionError, UNSUPPORTED: SessionFormatUnsupportedError}


def _records(events: Any) -> list[dict[str, Any]]:
    return [e.to_record() for e in events]


def _described(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"


def _range_text(name: str, value: Any) -> str | None:
    """The refusal of an invalid read argument (§3.8's ``readFrom`` wording), None if valid."""
    if value is None and name == "length":
        return None
    if type(value) is int and 0 <= value <= MAX_SAFE_INTEGER:
        return None
    return f"read {name} must be a non-negative safe integer, got {value!r}"


class Checks:
    def __init__(self) -> None:
        self.mismatches: list[str] = []
        self.count = 0
        self.case = self.session_id = self.path = ""

    def bind(self, case: str, session_id: str, path: str) -> None:
        self.case, self.session_id, self.path = case, session_id, path

    def _fail(self, entry: str, message: str) -> None:
        self.mismatches.append(f"{self.case}: {entry}: {message}")

    def _refusal_problem(self, err: BaseException, expected: ReadOutcome) -> str | None:
        want = ERRORS[expected.refusal or CORRUPT]
        if type(err) is not want:
            return f"raised {_described(err)}; the spec refuses with {want.__name__}" + (f" ({expected.text})" if expected.text else "")
        if expected.text is not None:
            if expected.refusal == UNSUPPORTED:  # §3.9: the session named, the raw log appended
                text = f'session "{self.session_id}" {expected.text} (raw log: {self.path})'
            else:
                text = f'stored session "{self.session_id}" failed validation: {expected.text} (raw log: {self.path})'
            if str(err) != text:
                return f"refused with {str(err)!r}; the spec's text is {text!r}"
        return None

    def _outcome(self, entry: str, err: BaseException | None, expected: ReadOutcome) -> bool:
        """Whether the call's success or failure is the expected one (mismatch recorded if not)."""
        self.count += 1
        if expected.refusal is None:
            if err is not None:
                self._fail(entry, f"raised {_described(err)}; the spec reads {len(expected.records)} records")
            return err is None
        if err is None:
            self._fail(entry, f"read the log; the spec refuses it ({expected.refusal}: {expected.text})")
        else:
            problem = self._refusal_problem(err, expected)
            if problem:
                self._fail(entry, problem)
        return False

    def _same(self, entry: str, what: str, got: Any, want: Any) -> None:
        self.count += 1
        if got != want:
            self._fail(entry, f"{what} {got!r}; the spec says {want!r}")

    async def _call(self, call: Awaitable[Any]) -> tuple[Any, BaseException | None]:
        try:
            return await call, None
        except Exception as err:  # compared with what the spec expects
            return None, err

    async def stat(self, backend: JsonlBackend, expected: ReadOutcome, size: int) -> None:
        stat, err = await self._call(backend.stat(self.session_id))
        if self._outcome("stat", err, expected):
            self._same("stat", "header", stat.header.to_record(), expected.header)
            self._same("stat", "event_count", stat.event_count, len(expected.records))
            self._same("stat", "torn_bytes", stat.torn_bytes, 0 if expected.torn_start is None else size - expected.torn_start)
            self._same("stat", "size_bytes", stat.size_bytes, size)

    async def listing(self, backend: JsonlBackend, expected: ReadOutcome | None) -> None:
        listed, err = await self._call(backend.list())
        if expected is None:
            self._same("list", "sessions", (None if err is None else _described(err), [s.header.id for s in listed or ()]), (None, []))
        elif self._outcome("list", err, expected):
            self._same("list", "headers", [s.header.to_record() for s in listed], [expected.header])

    async def open_read(self, backend: JsonlBackend, expected: ReadOutcome) -> ReadHandle | None:
        handle, err = await self._call(backend.open(self.session_id, "read"))
        if not self._outcome("open(read)", err, expected):
            return None
        self._same("open(read)", "header", handle.header.to_record() if handle.header else None, expected.header)
        return handle  # type: ignore[no-any-return]

    async def window(self, handle: ReadHandle, expected: ReadOutcome, offset: int, length: int | None) -> None:
        entry = f"read({offset}, {length})"
        events, err = await self._call(handle.read(offset, length))
        if self._outcome(entry, err, expected):
            end = None if length is None else offset + length
            self._same(entry, "records", _records(events), list(expected.records[offset:end]))

    async def bad_range(self, handle: ReadHandle, offset: Any, length: Any) -> None:
        entry = f"read({offset!r}, {length!r})"
        text = _range_text("offset", offset) or _range_text("length", length)
        _, err = await self._call(handle.read(offset, length))
        self._same(entry, "refusal", None if err is None else (type(err).__name__, str(err)), ("ValueError", text))

    async def read_only(self, handle: ReadHandle) -> None:
        """append and flush are refused (§10.2) naming the operation, as every handle error
        does (``<op> on a …``), and the session."""
        for op, call in (("append", handle.append([])), ("flush", handle.flush())):
            _, err = await self._call(call)
            self.count += 1
            if type(err) is not SessionReadOnlyError or not str(err).startswith(f"{op} on a ") or f'"{self.session_id}"' not in str(err):
                self._fail(
                    op,
                    f"{'returned' if err is None else _described(err)}; a read handle refuses with SessionReadOnlyError naming {op!r} and the session",
                )

    async def closed(self, handle: ReadHandle) -> None:
        _, err = await self._call(handle.read())
        self._same(
            "read after close",
            "refusal",
            None if err is None else (type(err).__name__, str(err)),
            ("SessionHandleClosedError", "read on a closed handle"),
        )

    async def shrank(self, handle: ReadHandle) -> None:
        _, err = await self._call(handle.read())
        text = f'stored session "{self.session_id}" failed validation: stored log shrank below a previously observed prefix'
        self._same(
            "read after the log shrank",
            "refusal",
            None if err is None else (type(err).__name__, str(err)),
            ("SessionPersistenceCorruptionError", text),
        )

    async def write_open(self, backend: JsonlBackend, expected: ReadOutcome) -> None:
        handle, err = await self._call(backend.open(self.session_id, "write"))
        if not self._outcome("open(write)", err, expected):
            return
        try:
            self._same("open(write)", "next_seq", handle.next_seq, len(expected.records))
            torn = handle.torn_tail
            got = None if torn is None else (torn.truncate_to, _records(torn.recovered))
            recovered = list(expected.records[len(expected.records) - expected.recovered :]) if expected.recovered else []
            want = None if expected.torn_start is None else (expected.torn_start, recovered)
            self._same("open(write)", "torn tail (truncate_to, recovered)", got, want)
            events, err = await self._call(handle.read())
            if self._outcome("write handle read()", err, expected):
                self._same("write handle read()", "records", _records(events), list(expected.records))
            await self.window(handle, expected, 1, 2)  # either handle reads windows alike
            for offset, length in BAD_RANGES:
                await self.bad_range(handle, offset, length)
        finally:
            await handle.close()
        await self.closed(handle)

    async def io_error(self, entry: str, call: Awaitable[Any]) -> None:
        _, err = await self._call(call)
        self.count += 1
        if not (type(err) is OSError and err.errno == errno.EIO):
            self._fail(entry, f"{'returned' if err is None else _described(err)}; a failed read passes its OSError(EIO) through")

    async def unsafe(self, entry: str, call: Awaitable[Any]) -> None:
        _, err = await self._call(call)
        self.count += 1
        if type(err) is not UnsafeSessionPathError or not str(err).startswith(f'refusing session path "{self.path}": '):
            self._fail(entry, f"{'returned' if err is None else _described(err)}; a log that is no regular file is refused naming its path")

    async def cancelled(self, entry: str, call: Awaitable[Any]) -> None:
        """A read cancelled by its caller ends in ``Cancelled`` (absorbed by the caller's scope),
        never in another error."""
        _, err = await self._call(call)
        self._same(entry, "error of a cancelled read", None if err is None else _described(err), None)

    def no_open_descriptors(self, view: ProcessView) -> None:
        self._same("after the reads", "open descriptors", view.open_paths(), [])
