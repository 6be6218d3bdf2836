"""Round 4: fourteen realistic slips in the runtime, written by a reviewer who read only
``runtime/`` and the spec (not the harness).  Spread over the less-covered modules: frame
scanning, generation selection, stage naming, store teardown, surface replay, v0 packed rows,
migration of crash tails, header parsing, lossless JSON, resume cleanup, abort signals,
approval policy, the assistant message shape and the file tools.  Each entry is a list of
:class:`Edit` s against the shipped source."""

from __future__ import annotations

from dsh_sim.mutants.patch import Edit

BUGS4: dict[str, list[Edit]] = {}

# --- persistence -----------------------------------------------------------------------------

# The frame scanner's "fewer than 4 bytes left" test is rewritten like the descriptor test
# below it ("nothing left"), so 1-3 trailing bytes are read as a (short) magic number and
# refused as "invalid frame magic" instead of being a torn frame (spec §3.4 step 1).  Sequence:
# power loss while an append frame is unsynced, keeping a torn prefix cut inside the new
# frame's 4 magic bytes -> the write open (resume) fails with corruption; the session is lost.
BUGS4["magic-tear-is-corruption"] = [
    Edit(
        "runtime.persistence.zstd_frames",
        "_frame_at",
        "    start = o\n    if n - o < 4:\n        return None\n",
        "    start = o\n    if o >= n:\n        return None\n",
    )
]

# The highest canonical generation must be authoritative (spec §10.4); the comparison is
# inverted, so once a v0 source has been migrated (v3 published beside it) every locate picks
# the v0 again.  Sequence: write-open a v0 session (publishes v3), append a turn, close; resume
# -> the handle reads the stale migrated v0 view (missing the appended turn) and bind refuses
# ("stored log already has N"), and read opens/stat serve the stale log.
BUGS4["generation-lowest-wins"] = [
    Edit(
        "runtime.persistence.locate",
        "generation_in",
        "        if best is None or version > best[0]:\n",
        "        if best is None or version < best[0]:\n",
    )
]

# The migration stage is given its "real" suffix without the trailing ".tmp", so a leftover
# stage is no longer recognised by remove_stale_temps (name must end in ".tmp").  Sequence:
# crash in publish() after link(stage, target) (+ dir fsync) but before the stage is unlinked
# -> the stage is a second hard link to session.v3.*; every later write open refuses the log
# as hard-linked (UnsafeSessionPathError) and the session can never be resumed.
BUGS4["stage-name-not-temp"] = [
    Edit(
        "runtime.persistence.layout",
        "stage_path",
        '    return f"{session_dir}/session.migration.{token}{suffix}.tmp"\n',
        '    return f"{session_dir}/session.migration.{token}{suffix}"\n',
    )
]

# Teardown "must not fail", so the final drain's error is swallowed.  Spec §10.2/§10.6: close
# drains, surfaces a drain failure (but frees ownership).  Sequence: EIO/ENOSPC on the fsync of
# the final drain in close_agent (or at runtime exit) -> close returns normally, the buffered
# tail (e.g. the last turn/end) is dropped from disk and nobody is told.
BUGS4["release-swallows-drain-failure"] = [
    Edit(
        "runtime.persistence.store",
        "SessionStore.release",
        "        try:\n            await self.flush(session, context.EXPLICIT_FLUSH)\n        finally:\n",
        "        try:\n"
        "            await self.flush(session, context.EXPLICIT_FLUSH)\n"
        "        except Exception:\n"
        "            pass  # the write-behind keeps and reports its failures; teardown carries on\n"
        "        finally:\n",
    )
]

# Off-by-one in the replace-span check: a replacement of a single node (startSeq == endSeq) is
# treated as "not live".  Migration emits exactly that for a system-prompt change (spec §10.1:
# a system/message replacing the head).  Sequence: a v0 log whose second request/header has a
# different system prompt -> migrate_v0's replay refuses it -> every read/stat/write open of
# that session fails with SessionFormatUnsupportedError.
BUGS4["replay-single-node-replace-refused"] = [
    Edit(
        "runtime.persistence.verify",
        "replay_surface",
        "surface.index(start) > surface.index(end):\n",
        "surface.index(start) >= surface.index(end):\n",
    )
]

# Packed-row gaps read as offsets from time0 instead of cumulative gaps (spec §3.3: member k
# has time time0 + dt[0] + ... + dt[k-1]).  Sequence: a v0 log with a packed text-chunks row of
# >= 3 members and non-zero gaps (dt [3,4]) -> the third chunk's time is time0+4, not time0+7,
# so the migrated assistant/message.stream (and the v0 read) carries wrong chunk times.
BUGS4["packed-row-times-not-cumulative"] = [
    Edit(
        "runtime.persistence.v0_records",
        "expand_row",
        "        times.append(times[-1] + gap)\n",
        "        times.append(time0 + gap)\n",
    )
]

# The unclaimed-chunk grouping forgets the attempt still open at the end of the log, so the
# chunks of a stream cut by a crash (no assistant/message, no step/end after them) are silently
# dropped instead of becoming an assistant/attempt (spec §10.1).  Sequence: v0 log ending in an
# open step with streamed assistant/chunk events (crashed reference process) -> read/migrate
# loses those events; the published v3 has no trace of the partial response.
BUGS4["migration-drops-trailing-attempt"] = [
    Edit(
        "runtime.persistence.migration",
        "_Migration.scan",
        "        if attempt:\n            self.attempt_end[attempt[-1].seq] = attempt\n",
        "",
    )
]

# The parsed header loses isSeeded (defaults to False).  Sequence: a v0 log with seedLength n
# (a fork/resume seed) -> write open stages the migrated generation, the verifier decodes the
# staged header without isSeeded, header mismatch -> SessionPersistenceCorruptionError: the
# session can be read but never resumed; stat/list of any seeded v3 session report isSeeded false.
BUGS4["header-drops-is-seeded"] = [
    Edit(
        "runtime.persistence.header",
        "parse_header",
        '        is_seeded=record["isSeeded"],\n',
        "",
    )
]

# --- session ---------------------------------------------------------------------------------

# The write-side lossless check forgets negative zero (spec §1.1: -0 is rejected at append,
# nothing stored); the read side still refuses it.  Sequence: a tool result (meta/content) or
# any event data holding -0.0 is appended and stored as "-0.0" -> on the next open/resume the
# decoder refuses the record (LogCorruption): the whole session becomes unreadable.
BUGS4["lossless-accepts-negative-zero"] = [
    Edit(
        "runtime.session.lossless",
        "_check_leaf",
        '            raise _Refused(f"non-finite number {value!r}")\n'
        "        if value == 0.0 and math.copysign(1.0, value) < 0:\n"
        '            raise _Refused("negative zero")\n',
        '            raise _Refused(f"non-finite number {value!r}")\n',
    )
]

# --- agent -----------------------------------------------------------------------------------

# resume_agent's cleanup catches only Exception, so a cancelled resume (trio.Cancelled) leaks
# the write handle: claim and flock stay held.  Sequence: the resume is cancelled while the
# repair append (closers) waits on write/fsync -> every later write open / resume of that id in
# this process fails with SessionAlreadyOwnedError (spec §10.2/§10.3: a failed open releases).
BUGS4["resume-cleanup-skips-cancel"] = [
    Edit(
        "runtime.agent.runtime",
        "Runtime.resume_agent",
        "        except BaseException:\n            await handle.close()\n            raise\n",
        "        except Exception:\n            await handle.close()\n            raise\n",
    )
]

# A child signal made after its parent aborted starts un-aborted (the "already aborted" case is
# forgotten).  Sequence: the user cancels the turn while tools.call.appended of an exclusive
# call (or before a pooled call's task starts) is pending -> _execute builds ex.signal from the
# aborted step signal, the pipeline sees no abort, checkpoint C passes and the tool body runs
# and reports success after the cancel, instead of ABORTED_BEFORE_DISPATCH (spec §5.3, §4 C).
BUGS4["child-signal-misses-prior-abort"] = [
    Edit(
        "runtime.agent.signal",
        "AbortSignal.child",
        "        if self.aborted:\n            child.abort(self.reason)\n        else:\n            self._children.append(child)\n",
        "        self._children.append(child)\n",
    )
]

# "never" is decided from the configured default instead of the session's effective policy
# (spec §6: the last approval/policy event wins, session override beats config both ways).
# Sequence: runtime configured "ask", set_policy(agent, "never") appends approval/policy, a tool
# that requires approval is called and an answerer says "allowed-once" -> the tool runs.
BUGS4["approval-never-uses-config-default"] = [
    Edit(
        "runtime.agent.approval",
        "ApprovalService._decide",
        '        if self.policy(request.agent) == "never":\n',
        '        if self.default_policy == "never":\n',
    )
]

# The assistant message of a cancelled stream loses its interrupted marker (spec §1.6 item 7:
# a non-empty delivered prefix is written with interrupted: true).  Sequence: cancel the turn
# after some text parts were streamed -> assistant/message with the partial text and no
# "interrupted": the log claims a complete model response.
BUGS4["assistant-interrupted-flag-dropped"] = [
    Edit(
        "runtime.agent.loop",
        "Agent._stream",
        '        if interrupted:\n            data["interrupted"] = True\n',
        "",
    )
]

# --- tools -----------------------------------------------------------------------------------

# write_file reports success without syncing the directory of a new file.  Sequence: write_file
# creates a new file, its "wrote N bytes" tool/result is made durable by the next checkpoint;
# power loss -> the file's directory entry is gone while the durable log says it was written.
BUGS4["write-file-skips-dir-fsync"] = [
    Edit(
        "runtime.tools.files",
        "WriteFileTool.execute",
        "        # a new name is durable only after its directory is synced: report success only then\n"
        "        await self._fs.fsync_dir(posixpath.dirname(path))\n",
        "",
    )
]
