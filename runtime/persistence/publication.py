"""Publishing a migrated generation safely (spec §10.4).

Stage the encoded v3 generation into a same-directory temp file, fsync it, verify the staged
bytes through the injected verifier (strict decode, no torn tail, same header, same events,
full replay), recheck that the v0 source has not changed since it was read, hard-link the
stage to the canonical name without ever overwriting, and fsync the directory.  An identical
existing target is accepted; different bytes are refused.  The source is never written.
"""

from __future__ import annotations

import posixpath
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from runtime.persistence import context
from runtime.persistence.durable import read_stable, unlink_quietly, write_new_synced
from runtime.persistence.errors import (
    GenerationSourceChangedError,
    GenerationTargetConflictError,
)
from runtime.persistence.layout import stage_path
from runtime.persistence.log_format import GenerationMismatch, encode_generation
from runtime.persistence.migration import MigratedLog
from runtime.persistence.verify import verify_exact
from runtime.ports.fs import FileSystem
from runtime.ports.ids import Ids
from runtime.ports.probe import Probe


class VerificationError(ValueError):
    """The staged generation does not decode to exactly the migrated log."""


# -- verification ---------------------------------------------------------------------------


def encode_migrated(migrated: MigratedLog, compression: str) -> bytes:
    """The exact bytes of the current generation a migration publishes."""
    return encode_generation(migrated.header, migrated.events, compression)


def verify_generation(data: bytes, compression: str, expected: MigratedLog) -> None:
    """The verifier's job: ``data`` must strictly decode and replay to exactly ``expected``."""
    try:
        verify_exact(data, compression, expected.header, expected.events)
    except GenerationMismatch as err:
        raise VerificationError(str(err)) from None


Verifier = Callable[..., Awaitable[Any]]
_VERIFIERS: trio.lowlevel.RunVar[trio.CapacityLimiter] = trio.lowlevel.RunVar("dsh_migration_verifiers")


async def thread_verifier(fn: Callable[..., Any], *args: Any) -> Any:
    """Production verifier: the CPU-bound decode + replay runs in a worker thread.

    A long log would otherwise stall every other task of the event loop for the whole
    verification.  At most two verifications run at once per process (spec §10.4).
    """
    try:
        limiter = _VERIFIERS.get()
    except LookupError:
        limiter = trio.CapacityLimiter(2)
        _VERIFIERS.set(limiter)
    return await trio.to_thread.run_sync(fn, *args, limiter=limiter)


async def inline_verifier(fn: Callable[..., Any], *args: Any) -> Any:
    """Simulator verifier: runs on the event loop.

    A simulated process is deterministic only while all of its work happens in trio tasks
    under the virtual clock; a worker thread would run outside the seeded scheduler and the
    harness's "everything is blocked" test could not see it, so the simulator forbids threads
    and injects this instead.  The checkpoint keeps it a scheduling point like the real one.
    """
    await trio.lowlevel.checkpoint()
    return fn(*args)


# -- publication ----------------------------------------------------------------------------


@attrs.frozen
class Prepared:
    """A migrated log and the identity of the source bytes it came from."""

    migrated: MigratedLog
    source: str
    source_revision: str  # dev:ino:size:mtime:ctime of the source when it was read


async def publish(fs: FileSystem, ids: Ids, probe: Probe, verifier: Verifier, prepared: Prepared, target: str, compression: str) -> None:
    """Stage, verify, recheck the source, link without overwrite, fsync the directory.

    Any failure removes the stage (and a link whose directory fsync failed), so a retry
    starts clean; ``GenerationSourceChangedError`` means the source moved on since
    ``prepared`` was read and the caller must prepare again.
    """
    session_dir = posixpath.dirname(target)
    session_id = prepared.migrated.header.id
    data = encode_migrated(prepared.migrated, compression)
    stage = stage_path(session_dir, ids.token_hex(8), compression)
    linked = published = False
    with context.durability_op(context.MIGRATION):
        await write_new_synced(fs, stage, data)
        try:
            await probe.at("persist.migration.staged", session_id=session_id, path=stage, size=len(data))
            staged, identity = await read_stable(fs, stage)
            if staged != data:
                raise VerificationError("staged session generation changed during verification")
            await verifier(verify_generation, staged, compression, prepared.migrated)
            if (await fs.stat(stage)).revision() != identity.revision():
                raise VerificationError("staged session generation changed during verification")
            await probe.at("persist.migration.verified", session_id=session_id, path=stage, events=len(prepared.migrated.events))
            try:
                drifted = (await fs.stat(prepared.source)).revision() != prepared.source_revision
            except FileNotFoundError:
                drifted = True
            if drifted:
                raise GenerationSourceChangedError(prepared.source)
            try:
                await link_stage(fs, stage, target)
                linked = True
            except FileExistsError:
                await _accept_existing(fs, target, data)
            await fs.fsync_dir(session_dir)
            published = True
            await probe.at("persist.migration.published", session_id=session_id, path=target, events=len(prepared.migrated.events))
        except BaseException:
            with trio.CancelScope(shield=True):
                if linked and not published:
                    await unlink_quietly(fs, target)
                await unlink_quietly(fs, stage)
            raise
    with trio.CancelScope(shield=True):
        # Not best effort: a stage left beside the published log is a second hard link to it,
        # which the write open then refuses as unsafe.  Its failure is the open's own error
        # (the next open removes the stage as a stale temp before it reads the log).
        try:
            await fs.unlink(stage)
        except FileNotFoundError:
            pass


async def link_stage(fs: FileSystem, stage: str, target: str) -> None:
    """The publication step: a hard link never replaces an existing target (``FileExistsError``)."""
    await fs.link(stage, target)


async def _accept_existing(fs: FileSystem, target: str, data: bytes) -> None:
    """Another publisher won: accept its target only if it begins with exactly our bytes."""
    existing, _ = await read_stable(fs, target)
    if existing[: len(data)] != data:
        raise GenerationTargetConflictError(target)
