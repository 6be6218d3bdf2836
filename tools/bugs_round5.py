"""Round 5: slips in the route's DECISIONS and TIMING (not in storage formats).

Written independently of the harness, from the runtime source and the reference spec only.
Each entry is one realistic slip a careless colleague might make in review-sized code: a
gate that fails open, a guard skipped or made non-monotonic, an approval outcome mis-mapped,
a cancellation mis-classified, a checkpoint moved after the body, a write-behind window
turned into a debounce, a parallel group mis-classified, a lock taken too late or leaked, a
publication that accepts or deletes what it did not create, a repair verdict computed over
the wrong span, and a post-execute verdict that leaks or skips.  Most only show under a
specific sequence: a fault, a crash at a probe, a cancel at a given stage, or a timing.

Classes (brief numbering): 1 gates, 2 guards, 3 approval, 4 cancellation, 5 checkpoint C/B,
6 write-behind, 7 parallel groups, 8 lease/lock, 9 publication, 10 repair/resume,
11 post-execute and result shapes.
"""

from __future__ import annotations

from dsh_sim.mutants.patch import Edit

BUGS5: dict[str, list[Edit]] = {}

REG = "runtime.tools.registry"
SCHED = "runtime.tools.scheduler"
LOOP = "runtime.agent.loop"
APPR = "runtime.agent.approval"
CKPT = "runtime.agent.checkpoint"
WB = "runtime.persistence.write_behind"
STORE = "runtime.persistence.store"
BACKEND = "runtime.persistence.backend"
LEASE = "runtime.persistence.lease"
PUB = "runtime.persistence.publication"
REPAIR = "runtime.session.repair"
RESULTS = "runtime.tools.results"


# ---------------------------------------------------------------- 1. pre-execute gates

# [class 1] A `tools/pre-execute` handler that raises is "tolerated": the registry falls back to the
#  default decision (allow for a tool that needs no approval) instead of failing the call.  Spec §5.2
#  makes pipeline failures final error results.  Sequence: a gate plugin whose handler raises (e.g. a
#  deny-list lookup that throws) for a `write_file` call -> the body runs and its side effect happens;
#  the model sees a success instead of `Error: <message>` with no effect.
BUGS5["pre-execute-raise-fails-open"] = [
    Edit(
        REG,
        "ToolRegistry._prepare",
        '        decision = await self._hooks.waterfall("tools/pre-execute", ex, self._default_decision)\n',
        "        try:\n"
        '            decision = await self._hooks.waterfall("tools/pre-execute", ex, self._default_decision)\n'
        "        except Exception:\n"
        "            decision = await self._default_decision(ex)  # a broken gate must not block every tool\n",
    ),
]

# [class 1] A gate that returns nothing (a handler that observed the call and forgot to `return
#  await next(ex)`) is read as "no opinion" = allow.  Spec §5.2: the only decisions are allow / deny /
#  ask; anything else must not open the gate.  Sequence: a pre-execute handler returning None for a
#  tool that requires approval -> the approval question is never asked (no approval/asked event) and
#  the body runs, although the default decision was `ask`.
BUGS5["pre-execute-none-decision-allows"] = [
    Edit(
        REG,
        "ToolRegistry._prepare",
        "        if not isinstance(decision, (Allow, Deny)):\n"
        '            decision = Deny(f"tools/pre-execute returned an invalid decision {decision!r}")\n',
        "        if decision is None:\n"
        "            decision = Allow()  # a gate that only observes has no opinion\n"
        "        elif not isinstance(decision, (Allow, Deny)):\n"
        '            decision = Deny(f"tools/pre-execute returned an invalid decision {decision!r}")\n',
    ),
]

# [class 3 / no answerer] With no approval service mounted (RuntimeConfig.approval_policy=None) an
#  `ask` is treated as "approvals are off" and allowed.  Spec §6 serviceAsk: no approval service ->
#  deny `tool "<name>" requires approval (not yet supported)` (or the ask reason).  Sequence: runtime
#  without the approval plugin, model calls a `requires_approval` tool -> the body runs and succeeds
#  instead of an `Error: ... requires approval ...` result with no side effect.
BUGS5["ask-without-approval-service-allows"] = [
    Edit(
        REG,
        "ToolRegistry._ask",
        "        if self.approval_seam is None:\n"
        "            reason = ask.reason if ask.reason is not None else f'tool \"{ex.name}\" requires approval (not yet supported)'\n"
        "            return Deny(reason)\n",
        "        if self.approval_seam is None:\n            return Allow()  # approvals are switched off: nothing to ask\n",
    ),
]


# ---------------------------------------------------------------- 2. monotonic guards

# [class 2] Guards are skipped once the user approved the call ("the user said yes, nothing left to
#  check").  Spec §5.2: after ANY allow - also `allowed-once` from the approval seam - the monotonic
#  guards run and may deny.  Sequence: a tool needing approval, an answerer returning allowed-once, a
#  guard that denies that call (e.g. path outside a policy) -> the body runs; expected an
#  `Error: <guard reason>` result with no effect.
BUGS5["guards-skipped-after-approval"] = [
    Edit(
        REG,
        "ToolRegistry._prepare",
        "        if isinstance(decision, Ask):\n            decision = await self._ask(ex, decision)\n",
        "        approved = False\n"
        "        if isinstance(decision, Ask):\n"
        "            decision = await self._ask(ex, decision)\n"
        "            approved = isinstance(decision, Allow)  # the user said yes: nothing left to check\n",
    ),
    Edit(
        REG,
        "ToolRegistry._prepare",
        "        if isinstance(decision, Allow):\n",
        "        if isinstance(decision, Allow) and not approved:\n",
    ),
]

# [class 2] A guard that raises is skipped (fail open) instead of failing the call.  Spec §5.2:
#  guards can only deny, and a throwing stage is a final pipeline error.  Sequence: one guard whose
#  check throws (e.g. it stats a path that does not exist) for an allowed call -> the body runs and
#  the model sees success; expected a final `Error: <message>` result and no side effect.
BUGS5["raising-guard-ignored"] = [
    Edit(
        REG,
        "ToolRegistry._prepare",
        "                reason = await guard(ex)\n",
        "                try:\n"
        "                    reason = await guard(ex)\n"
        "                except Exception:\n"
        "                    continue  # a broken guard must not block every call\n",
    ),
]

# [class 2] The guard loop recomputes the decision from every guard instead of stopping at the first
#  denial, so a later guard that returns None turns an earlier guard's deny back into allow.  Spec
#  §5.2: "the first returned string denies - guards can never turn a deny back into allow".
#  Sequence: two guards registered, the first denies the call and the second has no objection -> the
#  body runs; expected `Error: <first guard's reason>`.
BUGS5["later-guard-reopens-deny"] = [
    Edit(
        REG,
        "ToolRegistry._prepare",
        "                reason = await guard(ex)\n"
        "                if reason is not None:\n"
        "                    decision = Deny(reason)\n"
        "                    break\n",
        "                reason = await guard(ex)\n                decision = Deny(reason) if reason is not None else Allow()\n",
    ),
]


# ---------------------------------------------------------------- 3. approval seam

# [class 3] Any `cancelled` approval outcome is turned into ABORTED_BEFORE_DISPATCH, also when the
#  caller was NOT cancelled (the answerer itself answered "cancelled", e.g. the user closed the
#  dialog).  Spec §5.2/§6: cancelled -> deny `approval for tool "<name>" was cancelled` (a normal
#  deny through post-execute); ABORTED_BEFORE_DISPATCH only when the caller is also cancelled.
#  Sequence: answerer returns "cancelled", turn not aborted -> tool/result error code
#  ABORTED_BEFORE_DISPATCH with text "tool call aborted before dispatch" and post-execute skipped.
BUGS5["answerer-cancel-reported-as-abort"] = [
    Edit(
        REG,
        "ToolRegistry._prepare",
        "            if isinstance(decision, Deny) and decision.cancelled and ex.signal.aborted:\n",
        "            if isinstance(decision, Deny) and decision.cancelled:\n",
    ),
]

# [class 3] The seam forgets to forward the call's abort signal to the approval question.  Spec §6:
#  a pre-aborted signal -> `cancelled` without consulting anyone; an abort while waiting -> `cancelled`
#  immediately, the late answer discarded.  Sequence: tool needing approval, the answerer blocks, the
#  user cancels the turn -> the question keeps waiting (turn does not end until the answerer replies)
#  and the audit then records `approval/decided {outcome: allowed-once}` after the cancel.
BUGS5["approval-ignores-call-cancel"] = [
    Edit(
        APPR,
        "ApprovalService._seam",
        "        outcome = await self.request(ex.agent, ex.name, call_id=ex.call_id, reason=ask.reason, signal=ex.signal)\n",
        "        outcome = await self.request(ex.agent, ex.name, call_id=ex.call_id, reason=ask.reason)\n",
    ),
]

# [class 3 / policy scope] The effective approval policy folds to the FIRST `approval/policy` event
#  instead of the last.  Spec §6: "Effective policy = the last approval/policy event".  Sequence:
#  set_policy("never") then later set_policy("ask") in the same session, then a tool needing approval
#  -> still `rejected` without consulting the answerer (and the context string says "never"); the
#  reverse order (ask then never) lets an answerer grant while policy is never.
BUGS5["approval-policy-first-wins"] = [
    Edit(APPR, "effective_approval_policy", "    for event in reversed(events):\n", "    for event in events:\n"),
]

# [class 3 / audit] The audit pair is closed only for ordinary exceptions; a trio cancellation
#  (the agent's owner torn down while the question is open) skips `approval/decided`.  Spec §6: every
#  decision is audited as an asked/decided pair with one id, and asked/decided live inside the turn.
#  Sequence: question pending on a blocking answerer, runtime torn down (turn/end {aborted, disposed})
#  -> the log holds `approval/asked` with no matching `approval/decided {cancelled}`.
BUGS5["approval-pair-open-on-teardown"] = [
    Edit(
        APPR,
        "ApprovalService.request",
        "        except BaseException:\n            # torn down from outside while asking",
        "        except Exception:\n            # torn down from outside while asking",
    ),
]


# ---------------------------------------------------------------- 4. cancellation

# [class 4] Inverted condition: after a cancel, the body's ERROR is rewritten to ABORTED and its
#  SUCCESS passes through.  Spec §5.2 dispatch: "success after caller cancellation -> result replaced
#  by ABORTED".  Sequence: turn cancelled while a tool body is running, the body completes normally
#  -> the model sees the tool's normal output (isError false) instead of `Error: tool call aborted`
#  with error code ABORTED.
BUGS5["success-after-cancel-not-aborted"] = [
    Edit(
        REG,
        "ToolRegistry._body",
        "        if ex.signal.aborted and not result.is_error:\n",
        "        if ex.signal.aborted and result.is_error:\n",
    ),
]

# [class 4] On teardown a started call is reported ABORTED as soon as it has an execution object,
#  even if its body never started (it was still in pre-execute, approval or the checkpoint flush).
#  Spec §4/§5: a call that was not dispatched is ABORTED_BEFORE_DISPATCH; ABORTED means the body ran.
#  Sequence: runtime owner cancels the turn while a call waits in the approval question or the
#  tools/execute flush -> its tool/result code is ABORTED instead of ABORTED_BEFORE_DISPATCH.
BUGS5["teardown-undispatched-reported-aborted"] = [
    Edit(
        SCHED,
        "StepTools._close_on_teardown",
        "                result = R.aborted() if ex is not None and ex.dispatched else R.aborted_before_dispatch()\n",
        "                result = R.aborted() if ex is not None else R.aborted_before_dispatch()\n",
    ),
]

# [class 4] Off-by-one when closing the calls that never started after an abort: the first unstarted
#  call gets neither its `tool/call` nor its ABORTED_BEFORE_DISPATCH result.  Spec §5.3: every
#  unstarted call receives both, so a cancelled (not crashed) turn never leaves a dangling call.
#  Sequence: an assistant message with 3 exclusive calls, cancel while the first body runs -> call 2
#  is missing from the log entirely (a dangling tool-call block), call 3 is closed.
BUGS5["skipped-calls-off-by-one"] = [
    Edit(
        SCHED,
        "StepTools._run",
        "        for skipped in range(index, len(self._calls)):\n",
        "        for skipped in range(index + 1, len(self._calls)):\n",
    ),
]

# [class 4 / post-execute] Teardown starts closing at the slot AFTER the commit cursor, so the slot
#  whose post-execute was in progress (already popped from `_settled`, not yet committed) - or the
#  running call at the cursor - gets no tool/result.  Spec §5.3: no dangling call after a cancel.
#  Sequence: a slow tools/post-execute hook, the runtime owner tears the turn down during it -> that
#  call's tool/call has no tool/result in the log; later slots are closed.
BUGS5["teardown-skips-committing-slot"] = [
    Edit(
        SCHED,
        "StepTools._close_on_teardown",
        "        for slot in range(self._committed, self._started):\n",
        "        for slot in range(self._committed + 1, self._started):\n",
    ),
]

# [class 4] "Interrupted" is taken only from the cancel scope, not from the signal.  When the adapter
#  is not cancellable (it keeps yielding, the loop breaks on `signal.aborted` without a Cancelled),
#  the message is written as complete.  Spec §1.6.7: a cancelled stream's prefix is an
#  `assistant/message` with `interrupted: true` and no tool calls.  Sequence: cancel mid-stream with a
#  shielded/uncancellable adapter -> message without `interrupted`, with its tool-call blocks, whose
#  calls then all get ABORTED_BEFORE_DISPATCH results.
BUGS5["uncancellable-stream-not-interrupted"] = [
    Edit(
        LOOP,
        "Agent._stream",
        "        interrupted = scope.cancelled_caught or signal.aborted\n",
        "        interrupted = scope.cancelled_caught\n",
    ),
]

# [class 4] Order swap in the loop: "no more steps" is checked before "aborted", and a cancelled
#  step always reports no more steps.  Spec §1.5/§1.6: a cancelled turn ends `turn/end {aborted,
#  reason:{kind:'user'}}`.  Sequence: cancel during a tool body or mid-stream -> `turn/end` reason
#  `completed` (the abort is lost from the log and from TurnOutcome).
BUGS5["cancelled-turn-ends-completed"] = [
    Edit(
        LOOP,
        "Agent.run_turn",
        "                more = await self._step(turn, step, entering if step == 1 else self._drain_inbox(), signal)\n"
        "                if signal.aborted:\n"
        '                    reason = {"kind": "aborted", "reason": signal.reason or {"kind": "user"}}\n'
        "                    break\n"
        "                if not more:\n"
        '                    if self._last_finish == "max-tokens":\n'
        '                        reason = {"kind": "max-tokens"}\n'
        "                    break\n",
        "                more = await self._step(turn, step, entering if step == 1 else self._drain_inbox(), signal)\n"
        "                if not more:\n"
        '                    if self._last_finish == "max-tokens":\n'
        '                        reason = {"kind": "max-tokens"}\n'
        "                    break\n"
        "                if signal.aborted:\n"
        '                    reason = {"kind": "aborted", "reason": signal.reason or {"kind": "user"}}\n'
        "                    break\n",
    ),
]


# ---------------------------------------------------------------- 5. checkpoints before the body / request

# [class 5] Checkpoint C moved after the body ("persist the call together with its outcome").  Spec
#  §4 C: the flush runs after pre-execute + guards and BEFORE the tool body.  Sequence: crash (kill)
#  inside a tool body within 200 ms of the tool/call append -> the stored log lacks `tool/call`, so
#  resume says TOOL_NOT_STARTED ("retry it") although the side effect happened; expected
#  TOOL_OUTCOME_UNKNOWN.
BUGS5["checkpoint-after-body"] = [
    Edit(
        CKPT,
        "CheckpointPolicy._tools_execute",
        "        await self._store.flush(ex.agent.session, context.TOOLS_EXECUTE)\n"
        "        if ex.signal.aborted:\n"
        "            return R.aborted_before_dispatch()\n"
        "        return await next(ex)\n",
        "        if ex.signal.aborted:\n"
        "            return R.aborted_before_dispatch()\n"
        "        result = await next(ex)\n"
        "        await self._store.flush(ex.agent.session, context.TOOLS_EXECUTE)  # call and outcome land together\n"
        "        return result\n",
    ),
]

# [class 5] An "optimisation": concurrency-safe tools are assumed read-only and skip checkpoint C.
#  Spec §4: every top-level call (agent present, no parent) is checkpointed; the policy records
#  intent, it does not judge side effects.  Sequence: a parallel group of read_file calls, crash
#  inside one body before the 200 ms window fires -> its tool/call is not durable and resume reports
#  TOOL_NOT_STARTED instead of TOOL_OUTCOME_UNKNOWN.
BUGS5["parallel-tools-skip-checkpoint"] = [
    Edit(
        CKPT,
        "CheckpointPolicy._tools_execute",
        "        if ex.agent is None or ex.parent is not None:\n            return await next(ex)\n",
        "        if ex.agent is None or ex.parent is not None:\n"
        "            return await next(ex)\n"
        '        if ex.registry is not None and ex.registry.execution_mode(ex.name, ex.arguments) == "parallel":\n'
        "            return await next(ex)  # concurrency-safe tools are read-only: nothing to make durable first\n",
    ),
]

# [class 5] A failed checkpoint flush is swallowed ("the window write will retry it").  Spec §4 C is
#  fail-closed: a rejected flush means the body is not invoked and the result is `Error: <message>`.
#  Sequence: fsync fault (EIO) on the append of the batch holding tool/call -> the body runs anyway;
#  a crash right after leaves no durable tool/call -> TOOL_NOT_STARTED for an executed call.
BUGS5["checkpoint-flush-failure-swallowed"] = [
    Edit(
        CKPT,
        "CheckpointPolicy._tools_execute",
        "        await self._store.flush(ex.agent.session, context.TOOLS_EXECUTE)\n",
        "        try:\n"
        "            await self._store.flush(ex.agent.session, context.TOOLS_EXECUTE)\n"
        "        except OSError:\n"
        "            pass  # the window write retries it; a disk hiccup must not fail the tool\n",
    ),
]

# [class 5 / barrier B] The lazy llm/stream checkpoint constructs the downstream stream (request
#  dispatch) before awaiting the flush.  Spec §4 B: the flush completes before the adapter stream is
#  even constructed.  Sequence: crash at request dispatch (the `llm.request` point) within the first
#  window -> request/header, request/context and the user message are not durable; expected the
#  stored log `..., step/start, user/message, request/header, request/context` + interrupted closers.
BUGS5["stream-dispatched-before-checkpoint"] = [
    Edit(
        CKPT,
        "CheckpointPolicy._llm_stream",
        "            await store.flush(session, context.LLM_STREAM)\n            inner = await next(request)\n",
        "            inner = await next(request)\n            await store.flush(session, context.LLM_STREAM)\n",
    ),
]


# ---------------------------------------------------------------- 6. write-behind timing / barriers

# [class 6 / barrier waits] The store's flush skips the write-behind barrier when nothing is pending,
#  forgetting the write in flight.  Spec §3.5: flush waits for any active write, then drains.
#  Sequence: the 200 ms window fires and its batch (holding the tool/call) is being fsynced when
#  checkpoint C flushes -> flush returns at once, the body runs before the batch is durable; a crash
#  (or an fsync failure of that background write) then yields TOOL_NOT_STARTED for an executed call.
BUGS5["flush-ignores-inflight-write"] = [
    Edit(
        STORE,
        "SessionStore.flush",
        "            await binding.write_behind.flush()\n",
        "            if binding.write_behind.pending:\n                await binding.write_behind.flush()\n",
    ),
]

# [class 6] Debounce instead of a fixed window: every admitted event re-arms the 200 ms timer.
#  Spec §3.5: the window is armed when the queue goes empty -> non-empty; later events join without
#  resetting it.  Sequence: a stream of chunks/events less than 200 ms apart (a long model stream with
#  no barrier) -> nothing is written until the events pause; a crash 200+ ms after the first event
#  loses events that must already be durable.
BUGS5["window-rearmed-per-event"] = [
    Edit(
        WB,
        "WriteBehind.enqueue",
        "        if self._deadline is None and self._barrier is None:\n",
        "        if self._barrier is None:\n",
    ),
]

# [class 6] After a failed background write the timer is re-armed instead of paused.  Spec §3.5:
#  the batch is retained, the failure reported once, and automatic retries pause until the next
#  admitted event (or a flush).  Sequence: a background fsync fault, then no new events for 1 s ->
#  the runtime retries every 200 ms (several write attempts and repeated failure warnings) instead
#  of one attempt.
BUGS5["failed-write-rearms-window"] = [
    Edit(
        WB,
        "WriteBehind._write",
        "            self._deadline = None  # paused until the next event (or an explicit flush)\n",
        "            self._deadline = trio.current_time() + self._window  # retry on the next window\n",
    ),
]

# [class 6] A failed batch is put back BEHIND the events admitted while it was being written.  Spec
#  §3.5: "puts its batch back in front of newer pending events (order preserved)".  Sequence: a
#  background write fails (fsync fault) while new events are appended during it -> the retry batch
#  starts with a later seq, the handle rejects it as a seq mismatch, and every later write and
#  flush fails: the session never persists again (and checkpoints fail the turn).
BUGS5["retained-batch-requeued-behind"] = [
    Edit(WB, "WriteBehind._write", "            self._pending[:0] = batch\n", "            self._pending.extend(batch)\n"),
]

# [class 6] The barrier drains the queue only once: events admitted while its write is running stay
#  pending with no window armed (enqueue does not arm during a barrier).  Spec §3.5: flush writes
#  everything pending "including events admitted while the barrier runs - until the queue is empty".
#  Sequence: a parallel group - call B's tool/call is appended while call A's checkpoint flush writes;
#  B's flush joins A's barrier and returns; B's body runs with its tool/call not durable (crash ->
#  TOOL_NOT_STARTED), and the event lingers beyond 200 ms.
BUGS5["barrier-drains-once"] = [
    Edit(WB, "WriteBehind.flush", "            while self._pending:\n", "            if self._pending:\n"),
]

# [class 6] A window that expires during an active write is re-armed for a full new window instead
#  of starting its batch right after the active write.  Spec §3.5 (and 8.4 case 5): "if that
#  deadline expires while the write is active, the next batch starts immediately after the active
#  one finishes".  Sequence: a slow background write (> 200 ms), events admitted meanwhile -> their
#  batch is written up to a whole window late; a crash in that gap loses them.
BUGS5["expired-window-rearmed-behind-write"] = [
    Edit(
        WB,
        "WriteBehind.run",
        "            while self._active:\n                await self._changed.wait()\n",
        "            if self._active:\n"
        "                self._deadline = trio.current_time() + self._window  # busy: try again next window\n"
        "                continue\n",
    ),
]


# ---------------------------------------------------------------- 7. parallel tool groups

# [class 7] An unknown (hidden / hallucinated) tool is classified `parallel` ("it only yields an
#  error result").  Spec §5.1: unknown/hidden tools are `exclusive` - a barrier.  Sequence: calls
#  [read_file A, unknown_tool, read_file B] -> one group of three runs together; expected three
#  groups (B starts only after A and the unknown call finished).
BUGS5["unknown-tool-parallel"] = [
    Edit(
        REG,
        "ToolRegistry.execution_mode",
        '        if tool is None:\n            return "exclusive"\n',
        '        if tool is None:\n            return "parallel"  # an unknown tool only yields an error result\n',
    ),
]

# [class 7] Off-by-one in the group's re-classification: the call right after the group's opener is
#  never re-classified.  Spec §5.1: before starting each later call it is re-classified and the
#  first non-parallel call ends the group.  Sequence: [read_file (parallel), write_file (exclusive)]
#  -> write_file starts while read_file is still running (its tool/call before read_file's result).
BUGS5["second-call-not-reclassified"] = [
    Edit(
        SCHED,
        "StepTools._run_group",
        '                if self._stopped or (index > first and self._mode(self._calls[index]) != "parallel"):\n',
        '                if self._stopped or (index > first + 1 and self._mode(self._calls[index]) != "parallel"):\n',
    ),
]

# [class 7] Pool size off by one.  Spec §5.1: at most `maxParallelToolCalls` in flight; `1` means
#  fully serial.  Sequence: max_parallel_tool_calls=1 (or N) and more concurrency-safe calls than
#  that -> two (N+1) bodies run at the same time.
BUGS5["pool-one-too-wide"] = [
    Edit(
        SCHED,
        "StepTools._run_group",
        "        limiter = trio.Semaphore(self._max_parallel)\n",
        "        limiter = trio.Semaphore(self._max_parallel + 1)\n",
    ),
]

# [class 7] Results commit in settle order: the committer takes the lowest SETTLED slot instead of
#  waiting for the next slot in model order.  Spec §5.2 step 5 / §8.9: tool/result (and
#  post-execute) in model order even when c2 settles first.  Sequence: parallel c1 (slow) and c2
#  (fast) -> tool/result for c2 is appended before c1's; post-execute sees c2 first.
BUGS5["results-commit-in-settle-order"] = [
    Edit(
        SCHED,
        "StepTools._settle",
        "            while self._committed in self._settled:\n                slot = self._committed\n",
        "            while self._settled:\n                slot = min(self._settled)\n",
    ),
]


# ---------------------------------------------------------------- 8. lease / lock

# [class 8] A lock file that vanished between flock and the identity stat is accepted ("nobody else
#  can hold a deleted file").  Spec §10.3: the locked inode must equal the file currently at the
#  path, else retry (3 attempts) -> a lock on an unlinked inode proves nothing.  Sequence: lock file
#  deleted (escape hatch / racing cleanup) right after this opener's flock -> it owns a lock nobody
#  can see; a second process creates a fresh session.lock, locks it, and both write the same log.
BUGS5["vanished-lock-file-accepted"] = [
    Edit(
        LEASE,
        "acquire_lock",
        "        if at_path is not None and (at_path.dev, at_path.ino) == (held.dev, held.ino):\n",
        "        if at_path is None or (at_path.dev, at_path.ino) == (held.dev, held.ino):\n",
    ),
]

# [class 8] For a created session the lock is taken AFTER the generation file is published ("the
#  lock lives beside the log it guards").  Spec §10.3: the lock is acquired right before the first
#  materializing write; two pending creators collide at the loser's first append with
#  SessionAlreadyOwnedError.  Sequence: two processes create the same id and append -> the loser gets
#  SessionAlreadyExistsError; or another process write-opens between link and lock and owns the file
#  while the creator's first batch has just been linked under no lock.
BUGS5["lock-after-first-publication"] = [
    Edit(
        BACKEND,
        "JsonlBackend._materialize",
        "            if handle.lock_fd is None:\n"
        "                handle._set_lock(await acquire_lock(self.fs, paths.lock, handle.session_id))\n",
        "",
    ),
    Edit(
        BACKEND,
        "JsonlBackend._materialize",
        "                ) from None\n",
        "                ) from None\n"
        "            if handle.lock_fd is None:  # the lock guards the log, so take it once the log exists\n"
        "                handle._set_lock(await acquire_lock(self.fs, paths.lock, handle.session_id))\n",
    ),
]

# [class 8] A failed write open frees its claim but not its lock descriptor.  Spec §10.3/§10.6: a
#  failed write open releases its claim and ownership.  Sequence: write open of a log that is
#  refused after locking (unknown event type, corruption, hard link, migration conflict) -> the flock
#  stays held by the leaked descriptor: every later write open of that id, in another process or in
#  this one after the fix, fails SessionAlreadyOwnedError until this process dies.
BUGS5["failed-open-leaks-lock"] = [
    Edit(
        BACKEND,
        "JsonlBackend.open",
        "            self._claims.pop(session_id, None)\n"
        "            if lock_fd is not None:\n"
        "                await close_after_error(self.fs, lock_fd)\n",
        "            self._claims.pop(session_id, None)\n",
    ),
]


# ---------------------------------------------------------------- 9. publication

# [class 9] On EEXIST at the link, the existing target is taken as "another opener already
#  published it" without checking its bytes.  Spec §10.4 step 4: an existing target must match the
#  expected prefix (length + SHA-256); different -> GenerationTargetConflictError.  Sequence: a v0
#  session whose directory already holds a different `session.v3.jsonl[.zstd]` (a planted or foreign
#  target, or a publisher that migrated a different source revision) -> write open succeeds and
#  serves/extends the foreign log instead of refusing.
BUGS5["existing-target-accepted-unverified"] = [
    Edit(
        PUB,
        "publish",
        "            except FileExistsError:\n                await _accept_existing(fs, target, data)\n",
        "            except FileExistsError:\n                pass  # another opener already published this generation\n",
    ),
]

# [class 9] The failure cleanup unlinks the target whenever publication did not complete - also
#  when the target was not ours (the link failed with EEXIST).  Spec §10.4: the source and a winner's
#  target are never touched; only our stage is removed.  Sequence: a conflicting target exists ->
#  GenerationTargetConflictError is raised AND the existing current generation is deleted; the next
#  open sees only the v0 source (the winner's appended events are gone).
BUGS5["cleanup-unlinks-foreign-target"] = [
    Edit(PUB, "publish", "                if linked and not published:\n", "                if not published:\n"),
]

# [class 9] Stale temp cleanup runs BEFORE the lock is acquired.  Spec §10.4/§10.3: only the lock
#  holder may treat `session.*.tmp` files as stale.  Sequence: process A holds the lock and is
#  verifying its migration stage; process B write-opens the same v0 session -> B deletes A's stage,
#  then fails SessionAlreadyOwnedError; A's publication then fails (stage vanished) - a write open
#  that must have succeeded fails.
BUGS5["stale-temps-removed-before-lock"] = [
    Edit(
        BACKEND,
        "JsonlBackend.open",
        "            lock_fd = await acquire_lock(self.fs, paths.lock, session_id)\n"
        "            await remove_stale_temps(self.fs, located)\n",
        "            await remove_stale_temps(self.fs, located)\n"
        "            lock_fd = await acquire_lock(self.fs, paths.lock, session_id)\n",
    ),
]


# ---------------------------------------------------------------- 10. repair / resume decisions

# [class 10] `step/end` no longer clears the pending calls.  Spec §2.1: step/end -> pendingCalls
#  cleared; §8.1 "does NOT synthesize a result after the owning step already closed".  Sequence: a
#  log whose step ended with an unanswered tool-call block (scheduler failure, or a crafted
#  `assistant(tool-call)@2, step/end@3` tail), crash before turn/end -> repair emits a synthetic
#  tool/result for a closed step (closers [tool/result, turn/end] instead of [turn/end]).
BUGS5["step-end-keeps-pending-calls"] = [
    Edit(
        REPAIR,
        "interrupted_turn_closers",
        '        elif kind == "step/end":\n            pending.clear()\n            open_step = None\n',
        '        elif kind == "step/end":\n            open_step = None\n',
    ),
]

# [class 10] A `tool/call` with no registered assistant block now registers a pending call.  Spec
#  §2.1: such a tool/call "is ignored (it gets no synthetic result)"; §8.1 "handles tool/call without
#  a matching assistant/message gracefully".  Sequence: a tail `turn/start, step/start, tool/call
#  orphan` -> closers include a TOOL_OUTCOME_UNKNOWN tool/result for `orphan` before step/end/turn/end.
BUGS5["orphan-tool-call-repaired"] = [
    Edit(
        REPAIR,
        "interrupted_turn_closers",
        '            entry = pending.get(event.data["callId"])\n'
        "            if entry is not None:\n"
        "                entry.call_seq = event.seq\n",
        '            entry = pending.setdefault(event.data["callId"], _Pending(step=event.data["step"]))\n'
        "            entry.call_seq = event.seq\n",
    ),
]

# [class 10] Off-by-one in the backward scan for the open turn: index 0 is never examined.  Spec
#  §2.2: an open turn is closed whatever its position.  Sequence: crash during the FIRST turn of a
#  fresh session (its `turn/start` is seq 0) -> repair returns [] and resume continues over an open
#  turn: no TOOL_NOT_STARTED / TOOL_OUTCOME_UNKNOWN results, no `turn/end {interrupted}`, and the next
#  `turn/start` opens inside the unclosed turn.  Later turns are repaired correctly.
BUGS5["first-turn-never-repaired"] = [
    Edit(
        REPAIR,
        "_open_turn_start",
        "    for index in range(len(events) - 1, -1, -1):\n",
        "    for index in range(len(events) - 1, 0, -1):\n",
    ),
]

# [class 10] Closers reordered: the open step is closed before its calls are answered.  Spec §2.2:
#  synthetic tool/results first, then step/end, then turn/end (and §1.7: a tool/result must name the
#  open step).  Sequence: crash inside a tool body (or before tool/call) -> closers
#  [step/end, tool/result(TOOL_OUTCOME_UNKNOWN), turn/end] with the result outside its step.
BUGS5["step-closed-before-results"] = [
    Edit(
        REPAIR,
        "interrupted_turn_closers",
        "    if open_step is not None:\n"
        '        closers.append(Event("step/end", seq, time, {"turn": open_turn, "step": open_step}))\n'
        "        seq += 1\n"
        '    closers.append(Event("turn/end"',
        '    closers.append(Event("turn/end"',
    ),
    Edit(
        REPAIR,
        "interrupted_turn_closers",
        "    closers: list[Event] = []\n",
        "    closers: list[Event] = []\n"
        "    if open_step is not None:  # close the step first, then answer what it left open\n"
        '        closers.append(Event("step/end", seq, time, {"turn": open_turn, "step": open_step}))\n'
        "        seq += 1\n",
    ),
]


# ---------------------------------------------------------------- 11. post-execute and result shapes

# [class 11] A post-execute `block` marks the result as an error but keeps the tool's content.
#  Spec §5.2 finalize: `block {feedback}` -> an error result whose content is `Error: <feedback>`.
#  Sequence: a post-execute hook blocking a result (e.g. redacting a secret the tool read) -> the
#  model sees the original output (flagged isError) instead of the feedback; the secret leaks.
BUGS5["block-keeps-tool-content"] = [
    Edit(
        REG,
        "ToolRegistry.finalize",
        "            return ToolResult.failure(verdict.feedback)\n",
        "            return attrs.evolve(result, is_error=True, error=R.ErrorInfo(verdict.feedback))\n",
    ),
]

# [class 11] Final (pipeline-failure) results are no longer passed through untouched: post-execute
#  runs on them too.  Spec §5.2: pipeline failures are final and skip post-execute.  Sequence: a
#  cancelled call (ABORTED_BEFORE_DISPATCH) or a failed checkpoint with a post-execute hook that
#  replaces content or blocks -> the canonical `Error: tool call aborted before dispatch` text is
#  replaced, and the hook observes calls it must not see.
BUGS5["final-results-post-executed"] = [
    Edit(REG, "ToolRegistry.finalize", "        if result.final:\n            return result\n", ""),
]

# [class 11] A deny is marked final, so it skips post-execute.  Spec §5.2: a deny produces
#  `{content:[Error: <reason>], isError:true}` that "still goes through post-execute".  Sequence: a
#  pre-execute deny (or a rejected approval) with a post-execute hook that rewrites/annotates error
#  results -> the hook is never invoked for the denied call; the model sees the raw deny.
BUGS5["deny-skips-post-execute"] = [
    Edit(
        REG,
        "ToolRegistry._prepare",
        "            return ToolResult.failure(decision.reason)\n",
        "            return ToolResult.failure(decision.reason, final=True)\n",
    ),
]

# [class 11] A post-execute hook that raises is ignored and the unfiltered result returned (fail
#  open).  Spec §5.2: "Pipeline failures (a throwing hook included) are final error results".
#  Sequence: a post-execute filter that throws on some output -> the model sees the tool's raw
#  success content instead of a final `Error: <message>` result.
BUGS5["post-execute-raise-ignored"] = [
    Edit(
        REG,
        "ToolRegistry.finalize",
        "        except Exception as err:\n            return R.from_exception(err, final=True)\n",
        "        except Exception:\n            return result  # a broken post-execute observer must not cost the call its result\n",
    ),
]

# [class 11] Plain exceptions get an error info `{name: <class>, code: UNKNOWN}`.  Spec §5.2: only
#  HarnessErrors carry `error.info = {name, code}`; a plain thrown body or rejected checkpoint is just
#  `Error: <message>` (spec §4 C / 8.6 case 7).  Sequence: a tool body raising ValueError, or a
#  tools/execute flush rejected with OSError -> tool/result.data.error = {name:'OSError',
#  code:'UNKNOWN'} appears where the log must carry none.
BUGS5["plain-error-gets-error-info"] = [
    Edit(
        RESULTS,
        "from_exception",
        "    return ToolResult.failure(str(err) or type(err).__name__, final=final)\n",
        '    return ToolResult.failure(str(err) or type(err).__name__, name=type(err).__name__, code="UNKNOWN", final=final)\n',
    ),
]
