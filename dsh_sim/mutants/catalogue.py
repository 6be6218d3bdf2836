"""The hand-written catalogue: known durability bugs, each a few lines changed in the runtime.

Each mutant is applied by code substitution (:mod:`dsh_sim.mutants.patch`), never by a
switch inside the runtime.  This catalogue was written beside the invariants that catch its
mutants, so killing all of it proves little on its own; ``dsh-sim mutants --tool`` (a real
mutation-testing tool over the durability modules) is the measure that does not share that
bias.  The catalogue stays because its kill matrix times each method on bugs we know matter.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

import attrs

from dsh_sim.mutants.patch import Edit, applied

CHECKPOINT = "runtime.agent.checkpoint"
DURABLE = "runtime.persistence.durable"
READER = "runtime.persistence.log_reader"


@attrs.frozen
class Mutant:
    name: str
    description: str
    edits: tuple[Edit, ...]


_TOOLS_FLUSH = "        await self._store.flush(ex.agent.session, context.TOOLS_EXECUTE)\n        if ex.signal.aborted:\n            return R.aborted_before_dispatch()\n        return await next(ex)\n"

_MUTANTS = [
    Mutant(
        "checkpoint.no_flush_before_tool_body",
        "the tools/execute barrier does not flush before the tool body",
        (Edit(CHECKPOINT, "CheckpointPolicy._tools_execute", _TOOLS_FLUSH, "        return await next(ex)\n"),),
    ),
    Mutant(
        "checkpoint.flush_after_tool_body",
        "the tools/execute barrier flushes after the tool body instead of before",
        (
            Edit(
                CHECKPOINT,
                "CheckpointPolicy._tools_execute",
                _TOOLS_FLUSH,
                "        result = await next(ex)\n        await self._store.flush(ex.agent.session, context.TOOLS_EXECUTE)\n        return result\n",
            ),
        ),
    ),
    Mutant(
        "checkpoint.abort_recheck_after_body",
        "the cancellation re-check after the tool checkpoint runs after the body (it reports ABORTED_BEFORE_DISPATCH for a body that ran)",
        (
            Edit(
                CHECKPOINT,
                "CheckpointPolicy._tools_execute",
                "        if ex.signal.aborted:\n            return R.aborted_before_dispatch()\n        return await next(ex)\n",
                "        result = await next(ex)\n        return R.aborted_before_dispatch() if ex.signal.aborted else result\n",
            ),
        ),
    ),
    Mutant(
        "checkpoint.no_lazy_flush_before_request",
        "llm/stream does not flush before the model request",
        (Edit(CHECKPOINT, "CheckpointPolicy._llm_stream", "if not self._store.is_live(request.session_id):", "if True:"),),
    ),
    Mutant(
        "persist.skip_fsync_on_append",
        "an append batch is written but never fsynced",
        (
            Edit(
                DURABLE,
                "append_durable",
                "        await fs.write_fsync(fd, data, rollback_size=expected_size)\n",
                "        await fs.write(fd, data)\n",
            ),
        ),
    ),
    Mutant(
        "persist.skip_dir_fsync_after_link",
        "first publication skips the directory fsync after the hard link",
        (Edit(DURABLE, "publish_new_file", "        await fs.fsync_dir(posixpath.dirname(final))\n", "        pass\n"),),
    ),
    Mutant(
        "persist.ack_before_fsync",
        "an append is acknowledged before its fsync (the fsync is deferred to the next append)",
        (
            Edit(
                DURABLE,
                "append_durable",
                "        await fs.write_fsync(fd, data, rollback_size=expected_size)\n",
                "        await fs.write(fd, data)\n",
            ),
            Edit(
                "runtime.persistence.handles",
                "WriteHandle._append_bytes",
                "            self._committed_bytes = await append_durable(",
                "            await self._fs.fsync(self._append_fd)  # the previous batch's fsync, paid late\n"
                "            self._committed_bytes = await append_durable(",
            ),
        ),
    ),
    Mutant(
        "persist.swallow_fsync_error",
        "a failed append fsync is ignored and the batch acknowledged",
        (
            Edit(
                DURABLE,
                "append_durable",
                "        await fs.write_fsync(fd, data, rollback_size=expected_size)\n",
                "        await fs.write(fd, data)  # the fsync's failure is swallowed, the rollback never runs\n"
                "        try:\n            await fs.fsync(fd)\n        except OSError:\n            pass\n",
            ),
        ),
    ),
    Mutant(
        "persist.skip_rollback_truncate",
        "a failed append is not truncated back to the prior length",
        (
            Edit(
                DURABLE,
                "append_durable",
                "rollback_size=expected_size)",
                "rollback_size=None)",
            ),
        ),
    ),
    Mutant(
        "read.accept_torn_final_frame",
        "a torn final zstd frame is accepted as if complete (never truncated)",
        (
            Edit(
                READER,
                "ZstdReader.close",
                "            torn = TornTail(window.origin + window.at, tuple(recovered), len(rest))\n",
                "            torn = None\n",
            ),
        ),
    ),
    Mutant(
        "read.drop_torn_recovered_records",
        "complete records inside a torn final frame are dropped",
        (
            Edit(
                READER,
                "ZstdReader.close",
                "            recovered = recover_torn(decode_torn_frame(rest, self._decompressor), self._next_seq)\n",
                "            recovered = []\n",
            ),
        ),
    ),
    Mutant(
        "read.skip_corrupt_complete_frame",
        "a complete frame that fails its checksum is treated as a torn tail and truncated away",
        (
            Edit(
                READER,
                "ZstdReader.feed",
                "                except FrameFormatError as err:\n                    self._pending = LogCorruption(str(err))\n",
                "                except FrameFormatError:\n                    pos = start - origin  # the failed frame and all after it: a torn tail\n                    break\n",
            ),
        ),
    ),
    Mutant(
        "repair.not_started_for_recorded",
        "repair reports TOOL_NOT_STARTED for a call whose tool/call was recorded",
        (Edit("runtime.session.repair", "_closers", "started = entry.call_seq is not None", "started = False"),),
    ),
    Mutant(
        "repair.seq_gap",
        "repair closers skip one sequence number",
        (
            Edit(
                "runtime.session.repair",
                "_closers",
                '    closers.append(Event("turn/end", seq, time,',
                '    seq += 1\n    closers.append(Event("turn/end", seq, time,',
            ),
        ),
    ),
    Mutant(
        "tools.idempotency_key_not_forwarded",
        "a side-effecting tool gets a fresh idempotency key instead of callId",
        (Edit("runtime.tools.registry", "ToolExecution.idempotency_key", "return self.call_id", 'return f"fresh-key-for-{self.call_id}"'),),
    ),
    Mutant(
        "tools.guard_reopens_denied",
        "a monotonic guard may turn a denied call back into allowed",
        (
            Edit(
                "runtime.tools.registry",
                "ToolRegistry._prepare",
                "        if isinstance(decision, Allow):\n"
                "            for guard in tuple(self.guards):  # monotonic: a guard can only deny\n"
                "                reason = await guard(ex)\n"
                "                if reason is not None:\n"
                "                    decision = Deny(reason)\n"
                "                    break\n",
                "        for guard in tuple(self.guards):\n"
                "            reason = await guard(ex)\n"
                "            if reason is not None:\n"
                "                decision = Deny(reason)\n"
                "                break\n"
                "        else:\n"
                "            decision = Allow()\n",
            ),
        ),
    ),
    Mutant(
        "lease.no_lock_on_write_open",
        "a write open does not take the session.lock flock",
        (
            Edit(
                "runtime.persistence.backend",
                "JsonlBackend.open",
                "            lock_fd = await acquire_lock(self.fs, paths.lock, session_id)\n",
                "",
            ),
            Edit(
                "runtime.persistence.backend",
                "JsonlBackend._materialize",
                "            if handle.lock_fd is None:\n",
                "            if False:\n",
            ),
        ),
    ),
    Mutant(
        "write_behind.drop_failed_batch",
        "a failed background batch is dropped instead of retained",
        (
            Edit(
                "runtime.persistence.write_behind",
                "WriteBehind._write",
                "            self._pending[:0] = batch\n",
                "            if not background:\n                self._pending[:0] = batch\n",
            ),
        ),
    ),
    Mutant(
        "approval.fail_open_on_answerer_error",
        "a failing approval answerer counts as allowed-once",
        (
            Edit(
                "runtime.agent.approval",
                "ApprovalService._decide",
                '            except Exception:\n                answer = "unavailable"\n',
                '            except Exception:\n                answer = "allowed-once"\n',
            ),
        ),
    ),
]

MUTANTS: dict[str, Mutant] = {m.name: m for m in _MUTANTS}
CATALOGUE: dict[str, str] = {m.name: m.description for m in _MUTANTS}


@contextlib.contextmanager
def enabled(names: Iterable[str]) -> Iterator[None]:
    """Run the block with the named mutants applied (none: the runtime as shipped)."""
    wanted = list(dict.fromkeys(names))
    unknown = sorted(set(wanted) - set(MUTANTS))
    if unknown:
        raise KeyError(f"unknown mutant(s): {', '.join(unknown)}")
    edits = [edit for name in wanted for edit in MUTANTS[name].edits]
    if not edits:
        yield
        return
    with applied(edits):
        yield
