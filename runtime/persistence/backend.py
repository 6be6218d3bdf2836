"""The JSONL + zstd persistence backend: create, open, stat and list sessions.

A session is created lazily: ``create`` records intent and writes nothing; the first append
(or an explicit flush) publishes the generation file with temp file + fsync + hard link +
directory fsync.  ``open(id, "read")`` never writes; ``open(id, "write")`` takes the
exclusive lock and primes the handle with the torn-tail facts of the stored file.

The highest canonical generation in a session directory is authoritative.  A historical one
(v0) is decoded and migrated in memory for reads, ``stat`` and ``list``, which never
publish; a write open first publishes the migrated log as ``session.v3.jsonl[.zstd]`` beside
it (:mod:`runtime.persistence.migration`) and then opens that.
"""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Iterator, Sequence
from typing import Literal, overload

import attrs

from runtime.persistence import context
from runtime.persistence.durable import (
    close_after_error,
    ensure_dir_durable,
    exists,
    make_durable,
    publish_new_file,
    read_prefix,
    read_stable,
)
from runtime.persistence.errors import (
    GenerationSourceChangedError,
    SessionAlreadyExistsError,
    SessionAlreadyOwnedError,
    SessionFormatUnsupportedError,
    SessionHandleClosedError,
    SessionPersistenceCorruptionError,
    SessionPersistenceNotFoundError,
    UnsafeSessionPathError,
    header_version_refusal,
)
from runtime.persistence.handles import ReadHandle, WriteHandle
from runtime.persistence.header import HeaderError, SessionHeader
from runtime.persistence.layout import SessionPaths, generation_filename
from runtime.persistence.lease import acquire_lock
from runtime.persistence.locate import (
    Located,
    flat_layout_error,
    generation_in,
    is_real_dir,
    locate,
    paths_of,
    remove_stale_temps,
)
from runtime.persistence.log_format import (
    COMPRESSIONS,
    DecodedLog,
    LogCorruption,
    LogUnknownEventType,
    LogVersionUnsupported,
    decode_log,
    encode_header,
    header_of,
)
from runtime.persistence.migration import (
    MigratedLog,
    MigrationRefused,
    current_header,
    migrate_v0,
)
from runtime.persistence.publication import (
    Prepared,
    VerificationError,
    Verifier,
    publish,
    thread_verifier,
)
from runtime.persistence.safe_paths import require_regular
from runtime.persistence.v0_format import (
    V0_VERSION,
    V0Unsupported,
    decode_v0,
    v0_header_of,
)
from runtime.persistence.zstd_frames import FrameFormatError, first_frame
from runtime.ports import Ports
from runtime.ports.fs import StatResult
from runtime.session.events import Event
from runtime.session.lossless import is_safe_integer
from runtime.session.vocabulary import SESSION_FORMAT_VERSION


@attrs.frozen
class SessionStat:
    """What ``stat`` (full decode) and ``list`` (header only) report about a session.

    ``list`` reads only the header, so its ``event_count`` and ``torn_bytes`` are ``None``;
    a created session not yet materialized has the revision :data:`UNMATERIALIZED`.
    """

    header: SessionHeader
    revision: str
    event_count: int | None
    size_bytes: int
    path: str
    torn_bytes: int | None


UNMATERIALIZED = "unmaterialized"


class JsonlBackend:
    """``verifier`` runs the CPU-bound check of a staged migration: a worker thread in
    production (:func:`~runtime.persistence.publication.thread_verifier`); the simulator, which
    forbids threads inside a simulated run, injects an inline one."""

    def __init__(self, root: str, ports: Ports, *, compression: str = "zstd", verifier: Verifier | None = None) -> None:
        if not root.startswith("/"):
            raise ValueError(f"persistence root must be an absolute path, got {root!r}")
        if compression not in COMPRESSIONS:
            raise ValueError(f'compression must be "zstd" or "none", got {compression!r}')
        self.root = posixpath.normpath(root)
        self.fs = ports.fs
        self.ids = ports.ids
        self.probe = ports.probe
        self.compression = compression
        self.verifier: Verifier = verifier or thread_verifier
        self._claims: dict[str, WriteHandle | None] = {}

    # -- creation and opening -------------------------------------------------------------

    async def create(self, header: SessionHeader) -> WriteHandle:
        """A write handle for a new session; nothing is written until its first batch."""
        if not is_safe_integer(header.created_at) or header.created_at < 0:
            raise ValueError("session metadata createdAt must be a non-negative safe integer")
        try:
            header.validate()
        except HeaderError as err:
            raise ValueError(f"session metadata: {err}") from None
        if header.id in self._claims:
            raise SessionAlreadyExistsError.in_backend(header.id)
        self._claims[header.id] = None
        try:
            if await locate(self.fs, self.root, self.compression, header.id) is not None:
                raise SessionAlreadyExistsError.on_disk(header.id)
            paths = SessionPaths.of(self.root, header.cwd, header.id, self.compression)
        except BaseException:
            del self._claims[header.id]
            raise
        handle = WriteHandle(self, header, paths, materialized=False, next_seq=0, committed_bytes=0, torn=None, lock_fd=None)
        self._claims[header.id] = handle
        return handle

    @overload
    async def open(self, session_id: str, access: Literal["read"]) -> ReadHandle: ...
    @overload
    async def open(self, session_id: str, access: Literal["write"]) -> WriteHandle: ...
    @overload
    async def open(self, session_id: str, access: Literal["read", "write"]) -> ReadHandle | WriteHandle: ...
    async def open(self, session_id: str, access: Literal["read", "write"]) -> ReadHandle | WriteHandle:
        if access == "read":
            claimed = self._claims.get(session_id)
            if claimed is not None and not claimed.materialized:
                return ReadHandle(self, session_id, None, claimed.header)
            located = await locate(self.fs, self.root, self.compression, session_id)
            if located is None:
                raise SessionPersistenceNotFoundError(session_id)
            header, _, _, _ = await self._view(session_id, located)  # refuse unreadable logs at open
            return ReadHandle(self, session_id, paths_of(self.root, located), header)
        if access != "write":
            raise ValueError(f'access must be "read" or "write", got {access!r}')
        if session_id in self._claims:
            raise SessionAlreadyOwnedError(session_id)
        self._claims[session_id] = None
        lock_fd: int | None = None
        try:
            located = await locate(self.fs, self.root, self.compression, session_id)
            if located is None:
                raise SessionPersistenceNotFoundError(session_id)
            paths = paths_of(self.root, located)
            lock_fd = await acquire_lock(self.fs, paths.lock, session_id)
            await remove_stale_temps(self.fs, located)
            if located.version != SESSION_FORMAT_VERSION:
                located = await self._publish_current(session_id, located)
                paths = paths_of(self.root, located)
            # After a kill the page cache may still hold writes (or a published name) that were
            # never fsynced; a writer must not build on what a power cut could take back
            # (PostgreSQL fsyncs its data directory at crash recovery for the same reason).
            # ... and the bytes made durable are the ones decoded: the log is read once.
            decoded = self._decode_durable(session_id, located, *await make_durable(self.fs, self.root, located.log))
        except BaseException:
            self._claims.pop(session_id, None)
            if lock_fd is not None:
                await close_after_error(self.fs, lock_fd)
            raise
        torn = decoded.torn
        handle = WriteHandle(
            self,
            decoded.header,
            paths,
            materialized=True,
            next_seq=len(decoded.events),
            committed_bytes=torn.truncate_to if torn else decoded.file_size,
            torn=torn,
            lock_fd=lock_fd,
            opened=decoded.events,
        )
        self._claims[session_id] = handle
        return handle

    async def flush(self) -> None:
        """Flush every write handle of this backend; failures are raised together."""
        errors: list[Exception] = []
        for handle in [h for h in self._claims.values() if h is not None]:
            try:
                await handle.flush()
            except SessionHandleClosedError:
                pass  # closed concurrently: its close already drained it (spec §10.2)
            except Exception as err:  # collected and re-raised below
                errors.append(err)
        if errors:
            raise ExceptionGroup("session flush failed", errors)

    async def aclose(self) -> None:
        for handle in [h for h in self._claims.values() if h is not None]:
            await handle.close()

    def _release(self, handle: WriteHandle) -> None:
        if self._claims.get(handle.session_id) is handle:
            del self._claims[handle.session_id]

    # -- observation -----------------------------------------------------------------------

    def _pending_stat(self, session_id: str) -> SessionStat | None:
        """A created session is visible to its own backend before it has a file (spec §10.2)."""
        handle = self._claims.get(session_id)
        if handle is None or handle.materialized:
            return None
        return SessionStat(handle.header, UNMATERIALIZED, 0, 0, handle.paths.log, 0)

    async def stat(self, session_id: str) -> SessionStat:
        pending = self._pending_stat(session_id)
        if pending is not None:
            return pending
        located = await locate(self.fs, self.root, self.compression, session_id)
        if located is None:
            raise SessionPersistenceNotFoundError(session_id)
        header, events, torn_bytes, st = await self._view(session_id, located)
        return SessionStat(header, st.revision(), len(events), st.size, located.log, torn_bytes)

    async def list(self) -> list[SessionStat]:
        """Every session under the root (by project, then id directory), from headers only.

        Only the header is read (spec §3.8), so damage in later frames does not hide a
        session; files without a complete header yet are skipped.  Sessions created by this
        backend but not yet materialized follow.
        """
        out: list[SessionStat] = []
        if await exists(self.fs, self.root):
            for project in await self.fs.listdir(self.root):
                project_dir = f"{self.root}/{project}"
                if not await is_real_dir(self.fs, project_dir):
                    continue
                for entry in await self.fs.listdir(project_dir):
                    path = f"{project_dir}/{entry}"
                    if not await is_real_dir(self.fs, path):
                        if ".jsonl" in entry:
                            raise flat_layout_error(path)
                        continue
                    located = await generation_in(self.fs, path, self.compression)
                    if located is not None:
                        listed = await self._list_one(entry, located)
                        if listed is not None:
                            out.append(listed)
        listed_ids = {stat.header.id for stat in out}
        for session_id in sorted(self._claims):
            pending = self._pending_stat(session_id)
            if pending is not None and session_id not in listed_ids:
                out.append(pending)
        return out

    async def _list_one(self, label: str, located: Located) -> SessionStat | None:
        if located.version not in (V0_VERSION, SESSION_FORMAT_VERSION):
            raise SessionFormatUnsupportedError.version(label, located.version, located.log)
        complete = _has_newline if self.compression == "none" else _has_first_frame
        for _ in range(2):
            before = require_regular(await self.fs.lstat(located.log), located.log)
            data = await read_prefix(self.fs, located.log, complete)
            after = await self.fs.lstat(located.log)
            if before.revision() == after.revision():
                break
        with _refusals(label, located):
            if located.version == V0_VERSION:
                v0 = v0_header_of(data, self.compression)
                header = None if v0 is None else current_header(v0)
            else:
                header = header_of(data, self.compression)
        if header is None:
            return None
        self._check_identity(header, located)
        return SessionStat(header, after.revision(), None, after.size, located.log, None)

    # -- internals -------------------------------------------------------------------------

    async def _read_events(self, session_id: str, paths: SessionPaths | None) -> Sequence[Event]:
        if paths is None:
            # opened while the creator was unmaterialized: empty until it publishes
            claimed = self._claims.get(session_id)
            if claimed is not None and not claimed.materialized:
                return ()
        located = await locate(self.fs, self.root, self.compression, session_id)
        if located is None:
            raise SessionPersistenceNotFoundError(session_id)
        return (await self._view(session_id, located))[1]

    async def _view(self, session_id: str, located: Located) -> tuple[SessionHeader, tuple[Event, ...], int, StatResult]:
        """(header, events, torn bytes, stat) of any readable generation; never writes."""
        data, st = await read_stable(self.fs, located.log)
        if located.version != SESSION_FORMAT_VERSION:
            migrated, torn_bytes = self._migrated(session_id, located, data)
            return migrated.header, migrated.events, torn_bytes, st
        decoded = self._decode_bytes(session_id, located, data)
        return decoded.header, decoded.events, decoded.torn.torn_bytes if decoded.torn else 0, st

    def _decode_durable(self, session_id: str, located: Located, data: bytes, st: StatResult) -> DecodedLog:
        """The log a write open builds on (the bytes it just made durable, ``st`` the file's
        stat): it must have no second name (hard link) through which a writer in another root
        could reach it without this session's lock."""
        if st.nlink != 1:
            raise UnsafeSessionPathError.hard_linked(located.log, st.nlink)
        return self._decode_bytes(session_id, located, data)

    def _decode_bytes(self, session_id: str, located: Located, data: bytes) -> DecodedLog:
        """A current generation's bytes decoded (callers only pass current generations)."""
        with _refusals(session_id, located):
            decoded = decode_log(data, self.compression)
        self._check_header(session_id, decoded.header, located)
        return decoded

    def _migrated(self, session_id: str, located: Located, data: bytes) -> tuple[MigratedLog, int]:
        """A historical generation decoded and migrated in memory: (log, torn bytes)."""
        if located.version != V0_VERSION:
            raise SessionFormatUnsupportedError.version(session_id, located.version, located.log)
        with _refusals(session_id, located):
            source = decode_v0(data, self.compression)
            migrated = migrate_v0(source)
        self._check_header(session_id, migrated.header, located)
        return migrated, source.torn.torn_bytes if source.torn else 0

    async def _publish_current(self, session_id: str, source: Located) -> Located:
        """Write open of a historical generation: publish the current one beside it first.

        The caller holds the lock.  A source that changed between preparation and publication
        is prepared again once (spec §10.4); nothing is published from stale preparation.
        """
        target = f"{source.session_dir}/{current_generation_name(self.compression)}"
        for attempt in range(2):
            data, st = await read_stable(self.fs, source.log)
            migrated, _ = self._migrated(session_id, source, data)
            await self.probe.at("persist.migration.prepared", session_id=session_id, source=source.log, events=len(migrated.events))
            try:
                await publish(
                    self.fs, self.ids, self.probe, self.verifier, Prepared(migrated, source.log, st.revision()), target, self.compression
                )
            except GenerationSourceChangedError:
                if attempt:
                    raise
                continue
            except VerificationError as err:
                raise SessionPersistenceCorruptionError(session_id, str(err), target) from None
            break
        return Located(source.session_dir, target, SESSION_FORMAT_VERSION, self.compression)

    def _check_header(self, session_id: str, header: SessionHeader, located: Located) -> None:
        if header.id != session_id:
            raise SessionPersistenceCorruptionError(
                session_id,
                f'corrupt session log "{located.log}": requested id "{session_id}" does not match header id "{header.id}"',
            )
        self._check_identity(header, located)

    def _check_identity(self, header: SessionHeader, located: Located) -> None:
        """The header's id and cwd must name the directory the file was found in."""
        expected = SessionPaths.of(self.root, header.cwd, header.id, self.compression).session_dir
        if expected != located.session_dir:
            raise SessionPersistenceCorruptionError(
                header.id, f'corrupt session log "{located.log}": header id "{header.id}" and cwd identify "{expected}"'
            )

    async def _materialize(self, handle: WriteHandle, batch: bytes) -> None:
        """First publication (spec §3.6): durable dirs, lock, temp + fsync, link, dir fsync.

        ``batch`` is the first batch already encoded (:func:`encode_batch`; empty: header only)."""
        paths = handle.paths
        with context.durability_op(context.FIRST_PUBLICATION):
            await ensure_dir_durable(self.fs, paths.session_dir, self.root)
            if handle.lock_fd is None:
                handle._set_lock(await acquire_lock(self.fs, paths.lock, handle.session_id))
            await generation_in(self.fs, paths.session_dir, self.compression)  # refuses an opposite-encoding artifact
            if await exists(self.fs, paths.log):
                raise SessionAlreadyExistsError(
                    f'refusing to materialize "{handle.session_id}": a log already exists on disk (load/resume it instead)'
                )
            data = encode_header(handle.header, self.compression) + batch  # encode_generation, the batch encoded once
            temp = paths.temp_for(self.ids.token_hex(6))
            try:
                await publish_new_file(self.fs, paths.log, temp, data)
            except FileExistsError:
                raise SessionAlreadyExistsError(
                    f'refusing to materialize "{handle.session_id}": a log already exists on disk (load/resume it instead)'
                ) from None
        handle._materialized(len(data))


@contextlib.contextmanager
def _refusals(session_id: str, located: Located) -> Iterator[None]:
    """A decoder's or migration's refusal as the public error naming the session and file.

    One spelling for list, read and migration; each refusal type is raised only by the
    decoders that can produce it, so sharing the mapping changes no outcome.
    """
    try:
        yield
    except LogVersionUnsupported as err:
        raise header_version_refusal(session_id, located.log, located.version, err.version) from None
    except LogUnknownEventType as err:
        raise SessionFormatUnsupportedError.unknown_type(session_id, err.kind, err.seq, located.log) from None
    except LogCorruption as err:
        raise SessionPersistenceCorruptionError(session_id, str(err), located.log) from None
    except (V0Unsupported, MigrationRefused) as err:
        raise SessionFormatUnsupportedError.migration(session_id, located.version, str(err), located.log) from None


def _has_newline(data: bytes) -> bool:
    return b"\n" in data


def _has_first_frame(data: bytes) -> bool:
    try:
        return first_frame(data) is not None
    except FrameFormatError:
        return True  # not a frame at all: stop reading, header_of decides


def current_generation_name(compression: str) -> str:
    return generation_filename(SESSION_FORMAT_VERSION, compression)
