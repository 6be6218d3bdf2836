"""Typed persistence errors with the reference runtime's messages (spec §3.9, §10.2)."""

from __future__ import annotations

from collections.abc import Sequence

from runtime.session.vocabulary import SESSION_FORMAT_VERSION


class SessionPersistenceError(Exception):
    """Base class of every persistence failure."""


class SessionPersistenceNotFoundError(SessionPersistenceError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f'session "{session_id}" not found')


class SessionAlreadyExistsError(SessionPersistenceError):
    @classmethod
    def in_backend(cls, session_id: str) -> SessionAlreadyExistsError:
        return cls(f'session "{session_id}" already exists in this backend')

    @classmethod
    def on_disk(cls, session_id: str) -> SessionAlreadyExistsError:
        return cls(f'session "{session_id}" already has a persisted log on disk; load/resume it instead of creating')


class SessionAlreadyOwnedError(SessionPersistenceError):
    def __init__(self, session_id: str, detail: str = "") -> None:
        suffix = f" ({detail})" if detail else ""
        super().__init__(f'session "{session_id}" is already owned by an active write handle{suffix}')


class SessionReadOnlyError(SessionPersistenceError):
    def __init__(self, op: str, session_id: str) -> None:
        super().__init__(f'{op} on a read-only handle of session "{session_id}"')


class SessionHandleClosedError(SessionPersistenceError):
    def __init__(self, op: str) -> None:
        super().__init__(f"{op} on a closed handle")


class SessionPersistenceCorruptionError(SessionPersistenceError):
    def __init__(self, session_id: str, inner: str, path: str | None = None) -> None:
        where = f" (raw log: {path})" if path else ""
        super().__init__(f'stored session "{session_id}" failed validation: {inner}{where}')
        self.session_id = session_id
        self.inner = inner
        self.path = path


class SessionFormatUnsupportedError(SessionPersistenceError):
    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message + (f" (raw log: {path})" if path else ""))
        self.path = path

    @classmethod
    def version(cls, session_id: str, version: int | float, path: str | None = None) -> SessionFormatUnsupportedError:
        current = SESSION_FORMAT_VERSION
        if version > current:
            text = (
                f'session "{session_id}" uses log format v{version}, but this harness reads only v{current}: '
                "the log was written by a newer harness — upgrade the harness to open it"
            )
        else:
            text = (
                f'session "{session_id}" uses log format v{version}, older than the supported v{current}, '
                "and this build ships no upgrade path for it"
            )
        return cls(text, path)

    @classmethod
    def unknown_type(cls, session_id: str, kind: str, seq: int, path: str | None = None) -> SessionFormatUnsupportedError:
        return cls(
            f'session "{session_id}" contains event type "{kind}" (seq {seq}) unknown to this harness and not marked '
            "ignorable; refusing to interpret the log — it was likely written by a newer harness",
            path,
        )

    @classmethod
    def migration(cls, session_id: str, version: int, why: str, path: str | None = None) -> SessionFormatUnsupportedError:
        """A historical generation this build reads but cannot carry over faithfully (spec §10.4)."""
        return cls(
            f'session "{session_id}" cannot be migrated from log format v{version}: {why}; source v{version} artifact remains unchanged',
            path,
        )


def header_version_refusal(session_id: str, path: str, file_version: int, header_version: int | float) -> SessionPersistenceError:
    """A header version this build reads but the file name contradicts (a malformed artifact),
    or one it cannot read at all (the header is the authority: newer → upgrade, older → none)."""
    if header_version in (0, SESSION_FORMAT_VERSION):
        inner = f'session artifact "{path}" filename identifies v{file_version}, but its header identifies v{header_version}'
        return SessionPersistenceCorruptionError(session_id, inner, path)
    return SessionFormatUnsupportedError.version(session_id, header_version, path)


class SessionSeqMismatchError(SessionPersistenceError, ValueError):
    def __init__(self, session_id: str, expected: int, index: int, got: int) -> None:
        super().__init__(f'append seq mismatch for "{session_id}": expected {expected} at index {index}, got {got}')


class AppendRollbackError(ExceptionGroup):
    """An append failed and so did its rollback; both errors are kept (spec §3.6)."""

    def __new__(cls, path: str, original: Exception, rollback: Exception) -> AppendRollbackError:
        self = super().__new__(cls, f'failed to roll back append to "{path}"', [original, rollback])
        return self

    def __init__(self, path: str, original: Exception, rollback: Exception) -> None:
        super().__init__(f'failed to roll back append to "{path}"', [original, rollback])

    # override: narrower than the overloaded base (which also accepts BaseExceptions) because an
    # ExceptionGroup refuses to hold a BaseException, so split/subgroup only ever pass Exceptions
    def derive(self, excs: Sequence[Exception]) -> ExceptionGroup[Exception]:  # type: ignore[override]
        return ExceptionGroup(self.message, excs)


class LayoutError(SessionPersistenceError):
    """The root holds artifacts this backend must not touch (wrong encoding, flat layout...)."""


class GenerationSourceChangedError(SessionPersistenceError):
    def __init__(self, path: str) -> None:
        super().__init__(f'historical session generation changed during migration: "{path}"')


class GenerationTargetConflictError(SessionPersistenceError):
    def __init__(self, path: str, detail: str = "target bytes differ from the migrated generation") -> None:
        super().__init__(f'current session generation already exists at "{path}": {detail}')


class UnsafeSessionPathError(SessionPersistenceError):
    """A session path that is not what its name promises: refused, never followed.

    A symbolic link (or a second hard link) in place of a log, temp file, lock file or
    session directory would let a writer truncate and append to a file outside the session
    directory, or write to another session's log without holding its lock.
    """

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f'refusing session path "{path}": {why}')
        self.path = path
        self.why = why

    @classmethod
    def symlink(cls, path: str) -> UnsafeSessionPathError:
        return cls(path, "it is a symbolic link; session files and directories are never followed through links")

    @classmethod
    def not_regular(cls, path: str, kind: str) -> UnsafeSessionPathError:
        what = "a directory" if kind == "dir" else "a symbolic link" if kind == "symlink" else "not a regular file"
        return cls(path, f"it is {what}, not a regular file")

    @classmethod
    def not_directory(cls, path: str, kind: str) -> UnsafeSessionPathError:
        what = "a symbolic link" if kind == "symlink" else "not a directory"
        return cls(path, f"it is {what}; session directories are never followed through links")

    @classmethod
    def hard_linked(cls, path: str, links: int) -> UnsafeSessionPathError:
        return cls(path, f"it has {links} hard links; another name could reach the log without holding its lock")
