"""Round 3: fourteen realistic slips in the runtime's durability route, written by a reviewer
who read the runtime and the spec but not the harness (``independent_bugs.py`` runs them with
the others).  Each entry is a list of :class:`Edit` s against the shipped source."""

from __future__ import annotations

from dsh_sim.mutants.patch import Edit

BUGS3: dict[str, list[Edit]] = {}

# --- persistence -----------------------------------------------------------------------------

# The write handle advances its seq cursor in a `finally`, so a batch whose append (or first
# publication) failed and was rolled back still counts as stored.  After one transient EIO/ENOSPC/
# fsync fault the write-behind retries the retained batch with its old seqs and gets a seq
# mismatch forever: every later flush fails and nothing more of the session is ever persisted.
BUGS3["handle-cursor-advances-on-failure"] = [
    Edit(
        "runtime.persistence.handles",
        "WriteHandle.append",
        "            if not self.materialized:\n"
        "                await self._backend._materialize(self, batch)\n"
        "            else:\n"
        "                await self._settle_tail()\n"
        "                await self._append_bytes(encode_batch(batch, self._backend.compression))\n"
        "            self._next_seq += len(batch)\n",
        "            try:\n"
        "                if not self.materialized:\n"
        "                    await self._backend._materialize(self, batch)\n"
        "                else:\n"
        "                    await self._settle_tail()\n"
        "                    await self._append_bytes(encode_batch(batch, self._backend.compression))\n"
        "            finally:\n"
        "                self._next_seq += len(batch)  # the cursor never lags the batch it was handed\n",
    )
]

# The pending torn tail is cleared when the settle *starts* instead of after it lands.  If the
# durable truncate or the re-append of the recovered records fails (I/O fault), the retry skips
# them: the next batch lands right after the truncation point with a seq gap where the recovered
# records should be, so the log is refused as corrupt (zstd) or loses its tail (raw) on next open.
BUGS3["settle-tail-cleared-before-landing"] = [
    Edit(
        "runtime.persistence.handles",
        "WriteHandle._settle_tail",
        "            return\n        with context.durability_op(context.TORN_TAIL_REWRITE):\n",
        "            return\n"
        "        self._torn = None  # taken: a concurrent mutation must not settle it twice\n"
        "        with context.durability_op(context.TORN_TAIL_REWRITE):\n",
    ),
    Edit(
        "runtime.persistence.handles",
        "WriteHandle._settle_tail",
        "        self._torn = None\n        if torn.recovered:\n            await self._acknowledged",
        "        if torn.recovered:\n            await self._acknowledged",
    ),
]

# rewrite_synced "optimised": it no longer writes the file's bytes over themselves, it only
# fsyncs.  After a failed fsync marked the pages clean (fsyncgate) and the process was killed
# before its rollback, the next writer's make_durable makes nothing durable, builds on bytes a
# power cut still takes away, and acknowledges batches whose prefix is then lost.
BUGS3["rewrite-synced-only-fsyncs"] = [
    Edit(
        "runtime.persistence.durable",
        "rewrite_synced",
        "        if data:\n            await fs.write(fd, data)\n        await fs.fsync(fd)\n",
        "        await fs.fsync(fd)  # the page cache already holds exactly `data`\n",
    )
]

# Migration publication checks the v0 source for drift *before* the (slow) verification instead
# of after it ("fail fast").  A source that changes while the stage is being verified is no
# longer noticed: the write open links a v3 generation migrated from a stale read, silently
# dropping the events that reached the source meanwhile.
_STAGED = '            await probe.at("persist.migration.staged", session_id=session_id, path=stage, size=len(data))\n'
_VERIFY = (
    "            staged, identity = await read_stable(fs, stage)\n"
    "            if staged != data:\n"
    '                raise VerificationError("staged session generation changed during verification")\n'
    "            await verifier(verify_generation, staged, compression, prepared.migrated)\n"
    "            if (await fs.stat(stage)).revision() != identity.revision():\n"
    '                raise VerificationError("staged session generation changed during verification")\n'
    '            await probe.at("persist.migration.verified", session_id=session_id, path=stage, events=len(prepared.migrated.events))\n'
)
_DRIFT = (
    "                drifted = (await fs.stat(prepared.source)).revision() != prepared.source_revision\n"
    "            except FileNotFoundError:\n"
    "                drifted = True\n"
    "            if drifted:\n"
    "                raise GenerationSourceChangedError(prepared.source)\n"
)
BUGS3["migration-drift-checked-before-verify"] = [
    Edit(
        "runtime.persistence.publication",
        "publish",
        _STAGED + _VERIFY + "            try:\n" + _DRIFT,
        _STAGED + "            try:  # a drifted source makes the verification moot: check it first\n" + _DRIFT + _VERIFY,
    )
]

# A write open that fails after taking the flock (corrupt log refused, fault in make_durable,
# migration conflict...) drops its claim but no longer closes the lock descriptor.  The lock
# leaks for the life of the process: every later write open of that session, in this process
# or another, fails with SessionAlreadyOwnedError until the process dies.
BUGS3["open-failure-keeps-lock"] = [
    Edit(
        "runtime.persistence.backend",
        "JsonlBackend.open",
        "            self._claims.pop(session_id, None)\n"
        "            if lock_fd is not None:\n"
        "                await close_after_error(self.fs, lock_fd)\n"
        "            raise\n",
        "            self._claims.pop(session_id, None)\n            raise\n",
    )
]

# The lease treats a lock file that vanished between open/flock and the identity check as
# "nothing to compare" and accepts the lock.  If the file was deleted (the escape hatch, or a
# racing cleanup) we hold a lock on an orphaned inode while a second writer creates a fresh
# session.lock and locks it too: two processes append to one log.
BUGS3["lease-accepts-deleted-lock-file"] = [
    Edit(
        "runtime.persistence.lease",
        "acquire_lock",
        "        if at_path is not None and (at_path.dev, at_path.ino) == (held.dev, held.ino):\n",
        "        if at_path is None or (at_path.dev, at_path.ino) == (held.dev, held.ino):\n",
    )
]

# enqueue does not arm a window while a write is in flight ("the worker picks those up after
# it").  It does not: events admitted during an active background write sit in the queue with
# no deadline until some later event or an explicit flush arrives, so the 200 ms bound is lost
# and a crash in that gap loses events the window should already have written.
BUGS3["wb-no-window-during-write"] = [
    Edit(
        "runtime.persistence.write_behind",
        "WriteBehind.enqueue",
        "        if self._deadline is None and self._barrier is None:\n",
        "        if self._deadline is None and self._barrier is None and not self._active:\n",
    )
]

# --- session log and repair ------------------------------------------------------------------

# Repair matches a tool/result to its pending call by data["callId"] (as tool/call spells it)
# instead of message.source.callId, so no result ever clears a pending call.  A crash after
# some results of a step but before its step/end makes resume append a second, synthetic
# TOOL_OUTCOME_UNKNOWN/NOT_STARTED result for calls that already have a real one.
BUGS3["repair-result-matched-by-wrong-key"] = [
    Edit(
        "runtime.session.repair",
        "interrupted_turn_closers",
        '            pending.pop(event.data["message"]["source"]["callId"], None)\n',
        '            pending.pop(event.data.get("callId"), None)\n',
    )
]

# --- agent loop and checkpoint policy ----------------------------------------------------------

# Checkpoint C swallows an I/O failure of its flush ("the write-behind keeps the events and
# retries them") and runs the tool body anyway.  Under an EIO/ENOSPC/fsync fault the body's
# effect happens while its tool/call is not durable; a crash then repairs the call as
# TOOL_NOT_STARTED although its effect happened (the hard safety property).
BUGS3["checkpoint-tools-flush-fails-open"] = [
    Edit(
        "runtime.agent.checkpoint",
        "CheckpointPolicy._tools_execute",
        "        await self._store.flush(ex.agent.session, context.TOOLS_EXECUTE)\n",
        "        try:\n"
        "            await self._store.flush(ex.agent.session, context.TOOLS_EXECUTE)\n"
        "        except OSError:\n"
        "            pass  # the write-behind keeps the batch and retries it at the next barrier\n",
    )
]

# Typo in the finish reason ("max_tokens" instead of "max-tokens"): a response cut off at the
# token limit keeps its tool-call blocks.  Calls with truncated arguments are recorded and
# dispatched, and the turn runs another step instead of ending with reason max-tokens.
BUGS3["max-tokens-keeps-tool-calls"] = [
    Edit(
        "runtime.agent.loop",
        "_Assembly.content",
        '        if interrupted or self.finish == "max-tokens":',
        '        if interrupted or self.finish == "max_tokens":',
    )
]

# --- tool pipeline ------------------------------------------------------------------------------

# After an abort the unstarted calls are closed from index + 1 (as if `index` were the last
# started call).  The first unstarted call gets neither tool/call nor result, and since its slot
# never settles no later ABORTED_BEFORE_DISPATCH result is committed either: a cancelled (not
# crashed) turn ends with dangling calls that no repair will ever close.
BUGS3["abort-skips-first-unstarted"] = [
    Edit(
        "runtime.tools.scheduler",
        "StepTools._run",
        "        for skipped in range(index, len(self._calls)):\n",
        "        for skipped in range(index + 1, len(self._calls)):\n",
    )
]

# Off-by-one in the parallel group: the call right after the group's first one is not
# re-classified.  A concurrency-safe call followed by an exclusive one (read then write) runs
# the exclusive call inside the group, concurrently with the first, instead of after it as a
# barrier (its tool/call is also appended before the first call's result).
BUGS3["group-second-call-not-reclassified"] = [
    Edit(
        "runtime.tools.scheduler",
        "StepTools._run_group",
        '                if self._stopped or (index > first and self._mode(self._calls[index]) != "parallel"):\n',
        '                if self._stopped or (index > first + 1 and self._mode(self._calls[index]) != "parallel"):\n',
    )
]

# --- approval -----------------------------------------------------------------------------------

# The effective approval policy is read from the *first* approval/policy event instead of the
# last.  After the user switches never -> ask the session keeps rejecting every approval; with a
# configured default of "never", switching ask -> never keeps consulting answerers (fails open).
BUGS3["approval-policy-first-wins"] = [
    Edit(
        "runtime.agent.approval",
        "effective_approval_policy",
        "    for event in reversed(events):\n",
        "    for event in events:\n",
    )
]

# --- sandbox --------------------------------------------------------------------------------------

# The per-call policy is built from the configured default mode instead of the session's
# effective mode (`mode`).  A session switched by sandbox/mode (e.g. workspace-write ->
# read-only) is still confined with the default, while the result's meta reports the session's
# mode, so a read-only session can write its workspace and nothing shows it.
BUGS3["sandbox-policy-uses-default-mode"] = [
    Edit(
        "runtime.agent.sandbox_service",
        "SandboxService.confine",
        "        policy = SandboxPolicy(mode=mode, workspace_root=self.workspace",
        "        policy = SandboxPolicy(mode=self.default_mode, workspace_root=self.workspace",
    )
]
