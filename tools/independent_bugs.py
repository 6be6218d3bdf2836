"""Realistic bugs written independently of the catalogue: which of dsh-sim's methods catch them?

Run: ``python tools/independent_bugs.py [--replay-only] [NAME...]`` (about 30-60 CPU-s per bug;
``--replay-only``: the corpus replay alone, about 10 CPU-s per bug, a lower bound of what
`dsh-sim run` catches).

Each bug is a few lines changed (a careless colleague's slip), applied by code substitution.
Methods, as `dsh-sim run` uses them: replay of the passing corpus, explore of a spread of it,
a short fixed-example fuzz of both machines, the reader differential; and the failure-path
sweep of the corpus (up to the first scenario whose sweep finds a violation).
"""

from __future__ import annotations

import collections
import glob
import os
import sys
import time

from dsh_sim.mutants.patch import Edit, StaleMutant, applied

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bugs_round3 import BUGS3
from bugs_round4 import BUGS4
from bugs_round5 import BUGS5

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
P = "runtime.persistence."
S = "runtime.session."
T = "runtime.tools."
A = "runtime.agent."
BUGS: dict[str, list[Edit]] = {
    # persistence
    "wb-flush-skips-inflight-wait": [
        Edit(
            P + "write_behind",
            "WriteBehind.flush",
            "            while self._active:\n                await self._changed.wait()\n            while self._pending:",
            "            while self._pending:",
        )
    ],
    "wb-failed-batch-to-back": [
        Edit(
            P + "write_behind", "WriteBehind._write", "            self._pending[:0] = batch\n", "            self._pending.extend(batch)\n"
        )
    ],
    "dir-fsync-wrong-dir": [
        Edit(
            P + "durable",
            "publish_new_file",
            "        await fs.fsync_dir(posixpath.dirname(final))\n",
            "        await fs.fsync_dir(posixpath.dirname(posixpath.dirname(final)))\n",
        )
    ],
    "ensure-dir-fsyncs-itself": [
        Edit(
            P + "durable",
            "ensure_dir_durable",
            "        await fs.fsync_dir(posixpath.dirname(directory))",
            "        await fs.fsync_dir(directory)",
        )
    ],
    "torn-recovery-off-by-one": [Edit(P + "log_format", "_decode_zstd", "decompressor), len(events))", "decompressor), len(events) + 1)")],
    "open-skips-make-durable": [
        Edit(P + "backend", "JsonlBackend.open", "            await make_durable(self.fs, self.root, located.log)\n", "")
    ],
    "settle-tail-no-reappend": [
        Edit(
            P + "handles",
            "WriteHandle._settle_tail",
            "            if torn.recovered:\n                await self._append_bytes(encode_batch(torn.recovered, self._backend.compression))\n",
            "",
        )
    ],
    "rollback-to-file-size": [
        Edit(
            P + "durable",
            "append_durable",
            # the rollback truncates to the length the file has after the failed write (a no-op)
            "        await fs.write_fsync(fd, data, rollback_size=expected_size)",
            "        await fs.write_fsync(fd, data, rollback_size=expected_size + len(data))",
        )
    ],
    "store-flush-skips-handle-flush": [Edit(P + "store", "SessionStore.flush", "            await binding.handle.flush()\n", "")],
    "bind-skips-unstored-suffix": [
        Edit(
            P + "store",
            "SessionStore.bind",
            "        for event in session.events[handle.next_seq :]:\n            write_behind.enqueue(event)\n",
            "",
        )
    ],
    "lease-no-inode-check": [
        Edit(
            P + "lease",
            "acquire_lock",
            "        if at_path is not None and (at_path.dev, at_path.ino) == (held.dev, held.ino):",
            "        if True:",
        )
    ],
    # session
    "end-seed-not-appended": [
        Edit(
            "runtime.session.session",
            "Session.__init__",
            '        if self._log and self._log[-1].type != "session/end-seed":',
            "        if False:",
        )
    ],
    "repair-step-end-uses-turn": [
        Edit(
            "runtime.session.repair",
            "interrupted_turn_closers",
            '{"turn": open_turn, "step": open_step}',
            '{"turn": open_turn, "step": open_turn}',
        )
    ],
    "repair-pending-cleared-on-step-start": [
        Edit(
            "runtime.session.repair",
            "interrupted_turn_closers",
            '        elif kind == "step/start":\n            open_step = event.data["step"]\n',
            '        elif kind == "step/start":\n            open_step = event.data["step"]\n            pending.clear()\n',
        )
    ],
    "repair-tool-call-before-block-ignored": [
        Edit(
            "runtime.session.repair",
            "interrupted_turn_closers",
            "            if entry is not None:\n                entry.call_seq = event.seq",
            "            if entry is not None and entry.step != 1:\n                entry.call_seq = event.seq",
        )
    ],
    # tools
    "result-cites-wrong-call": [
        Edit(
            "runtime.tools.scheduler",
            "StepTools._commit",
            "source_event_seqs=[self._call_seqs[call.id]]",
            "source_event_seqs=[self._call_seqs[call.id] - 1]",
        )
    ],
    "nested-ids-collide": [
        Edit(
            "runtime.tools.registry",
            "ToolExecution.dispatch",
            'call_id=f"{self.call_id}:nested:{index}",',
            'call_id=f"{self.call_id}:nested:0",',
        )
    ],
    "body-skips-abort-check": [
        Edit(
            "runtime.tools.registry",
            "ToolRegistry._body",
            "        if ex.signal.aborted:\n            return R.aborted_before_dispatch()\n        tool = self._tools.get(ex.name)",
            "        tool = self._tools.get(ex.name)",
        )
    ],
    "aborted-result-not-replaced": [
        Edit(
            "runtime.tools.registry",
            "ToolRegistry._body",
            "        if ex.signal.aborted and not result.is_error:\n            return R.aborted()\n",
            "",
        )
    ],
    "commit-meta-dropped": [
        Edit(
            "runtime.tools.scheduler",
            "StepTools._commit",
            '        if result.meta is not None:\n            data["meta"] = result.meta\n',
            "",
        )
    ],
    "commit-error-info-dropped": [
        Edit("runtime.tools.scheduler", "StepTools._commit", '        if info is not None:\n            data["error"] = info\n', "")
    ],
    # agent
    "step-end-not-in-finally": [
        Edit(
            "runtime.agent.loop",
            "Agent._step",
            '        finally:\n            session.append("step/end", {"turn": turn, "step": step})',
            '        except BaseException:\n            raise\n        session.append("step/end", {"turn": turn, "step": step})',
        )
    ],
    "approval-decided-not-on-teardown": [
        Edit(
            "runtime.agent.approval",
            "ApprovalService.request",
            '            session.append("approval/decided", {"id": request_id, "outcome": "cancelled"})\n            raise',
            "            raise",
        )
    ],
    "checkpoint-flushes-nested-only": [
        Edit(
            "runtime.agent.checkpoint",
            "CheckpointPolicy._tools_execute",
            "        if ex.agent is None or ex.parent is not None:",
            "        if ex.agent is None or ex.parent is None:",
        )
    ],
    # ===== round 2 (2026-12-02): twelve slips written by a colleague who read only the runtime and
    # the spec, never the harness =====
    # --- persistence -------------------------------------------------------------------------
    # flush writes one snapshot of the queue instead of looping until it is empty: events admitted
    # while the barrier's write is in flight (a parallel call's tool/call) are reported durable to a
    # concurrent flusher sharing the barrier, so a tool body can run before its tool/call is on disk.
    "wb-flush-single-pass": [
        Edit(
            P + "write_behind",
            "WriteBehind.flush",
            "            while self._pending:\n",
            "            if self._pending:\n",
        )
    ],
    # the append descriptor is dropped only for OSError; AppendRollbackError (an ExceptionGroup: the
    # write failed AND its rollback failed) keeps the fd, so the retry appends after the un-rolled-back
    # bytes instead of reopening and truncating them: duplicated/garbage frames, a corrupt log.
    "append-fd-kept-on-rollback-failure": [
        Edit(
            P + "handles",
            "WriteHandle._append_bytes",
            "        except BaseException:\n            await self._drop_append_fd()",
            "        except OSError:\n            await self._drop_append_fd()",
        )
    ],
    # `linked` is set only after the directory fsync succeeded: a failed dir fsync at first
    # publication leaves the undurable link behind, so every retry is refused ("a log already
    # exists") and the new session can never be persisted.
    "publish-link-flag-late": [
        Edit(
            P + "durable",
            "publish_new_file",
            "        await fs.link(temp, final)\n        linked = True\n        await fs.fsync_dir(posixpath.dirname(final))\n",
            "        await fs.link(temp, final)\n        await fs.fsync_dir(posixpath.dirname(final))\n        linked = True\n",
        )
    ],
    # off by one in the torn-frame scanner (block-header size 3 used for the 4-byte checksum): a
    # crash that cuts the last checksum byte is not seen as a torn tail; the short frame is decoded
    # as complete, fails validation, and the session is refused as corrupt instead of repaired.
    "frame-checksum-tear-off-by-one": [
        Edit(
            P + "zstd_frames",
            "_frame_at",
            "    if checksum:\n        if n - o < 4:",
            "    if checksum:\n        if n - o < 3:",
        )
    ],
    # --- session -----------------------------------------------------------------------------
    # the backwards scan for the open turn stops before index 0: a crash during the very first turn
    # of a new session (turn/start at seq 0) is not repaired at all - no verdicts for its calls,
    # no step/end or turn/end, the turn stays open.
    "repair-misses-first-event": [
        Edit(
            S + "repair",
            "_open_turn_start",
            "range(len(events) - 1, -1, -1)",
            "range(len(events) - 1, 0, -1)",
        )
    ],
    # step/end clears the pending calls but forgets to reset open_step: a crash between steps (at
    # the next pre-step checkpoint, or before turn/end) makes repair append a second step/end for
    # an already closed step.
    "repair-step-not-reset-on-step-end": [
        Edit(
            S + "repair",
            "interrupted_turn_closers",
            "            pending.clear()\n            open_step = None\n",
            "            pending.clear()\n",
        )
    ],
    # closers are emitted sorted by call id "for determinism" instead of in model order: with
    # several unanswered calls the synthetic tool/results (and their seqs) come out of order
    # relative to the assistant's tool-call blocks.
    "repair-closers-sorted-by-id": [
        Edit(
            S + "repair",
            "interrupted_turn_closers",
            "    for call_id, entry in pending.items():\n",
            "    for call_id, entry in sorted(pending.items()):\n",
        )
    ],
    # --- tools -------------------------------------------------------------------------------
    # teardown closers only run for a bare trio.Cancelled; a teardown during a parallel group
    # arrives as a BaseExceptionGroup from the group's nursery, so started and unstarted calls are
    # left without tool/result (dangling calls in a closed turn).
    "scheduler-teardown-catches-only-cancelled": [
        Edit(
            T + "scheduler",
            "StepTools.run",
            "        except BaseException:\n            self._close_on_teardown()",
            "        except trio.Cancelled:\n            self._close_on_teardown()",
        )
    ],
    # `dispatched` is recorded only after the tool body returned: a call torn down while its body
    # runs is closed as ABORTED_BEFORE_DISPATCH ("never ran") although its side effect may have
    # happened.
    "dispatched-flag-set-late": [
        Edit(
            T + "registry",
            "ToolRegistry._body",
            "        ex.progress.dispatched = True\n        try:\n            result = await tool.execute(ex)\n"
            "        except Exception as err:\n            return R.from_exception(err, final=True)\n",
            "        try:\n            result = await tool.execute(ex)\n"
            "        except Exception as err:\n            return R.from_exception(err, final=True)\n"
            "        ex.progress.dispatched = True\n",
        )
    ],
    # fail-open default: a tool whose is_concurrency_safe throws (e.g. on non-JSON arguments passed
    # through as a raw string) is run in a parallel group instead of alone.
    "classifier-error-runs-parallel": [
        Edit(
            T + "registry",
            "ToolRegistry.execution_mode",
            '        except Exception:\n            return "exclusive"',
            '        except Exception:\n            return "parallel"',
        )
    ],
    # --- agent -------------------------------------------------------------------------------
    # checkpoint B in the wrong order: the adapter stream (the model request) is constructed
    # before the flush, so the request goes out while request/header is not yet durable, and a
    # failed flush leaks the unclosed stream.
    "llm-flush-after-request": [
        Edit(
            A + "checkpoint",
            "CheckpointPolicy._llm_stream",
            "            await store.flush(session, context.LLM_STREAM)\n            inner = await next(request)\n",
            "            inner = await next(request)\n            await store.flush(session, context.LLM_STREAM)\n",
        )
    ],
    # calls are abandoned only on an Exception at the post-message probe: an outside teardown
    # (Cancelled) right after the assistant message leaves its tool calls without tool/call and
    # tool/result while step/end and turn/end still close the turn.
    "abandon-only-on-exception": [
        Edit(
            A + "loop",
            "Agent._step",
            "                except BaseException:\n                    tools.abandon(calls)",
            "                except Exception:\n                    tools.abandon(calls)",
        )
    ],
}


BUGS.update(BUGS3)  # round 3 (tools/bugs_round3.py)
BUGS.update(BUGS4)  # round 4 (tools/bugs_round4.py)
BUGS.update(BUGS5)  # round 5 (tools/bugs_round5.py): the route's decisions and timing


def methods(scenarios: list, *, explore_every: int, fuzz_examples: int, replay_only: bool = False) -> dict[str, collections.Counter]:
    from dsh_sim.drivers import readers
    from dsh_sim.drivers.explore import explore
    from dsh_sim.drivers.faultsweep import sweep
    from dsh_sim.drivers.fuzz import fuzz
    from dsh_sim.drivers.replay import run_scenario
    from dsh_sim.mutation import harness

    found: dict[str, collections.Counter] = {
        "replay": collections.Counter(),
        "explore": collections.Counter(),
        "fuzz": collections.Counter(),
        "sweep": collections.Counter(),
        "readers": collections.Counter(),
    }
    for sc in scenarios:
        try:
            result, _ = run_scenario(sc)
        except Exception as err:
            found["replay"]["harness-error:" + type(err).__name__] += 1
            continue
        for v in result.violations:
            found["replay"][v.invariant] += 1
    if replay_only:
        return found
    for sc in scenarios[::explore_every]:
        try:
            result = explore(sc, cache={}, stop_on_violation=True)
        except Exception as err:
            found["explore"]["harness-error:" + type(err).__name__] += 1
            continue
        for _, v in result.violations[:1]:
            found["explore"][v.invariant] += 1
    for sc in scenarios:  # the failure paths: stops at the first scenario whose sweep finds one
        try:
            swept = sweep(sc, stop_on_violation=True)
        except Exception as err:
            found["sweep"]["harness-error:" + type(err).__name__] += 1
            continue
        if swept.baseline:  # the scenario fails without a fault: replay's finding, not the sweep's
            continue
        if swept.violations:
            found["sweep"][swept.violations[0].violation.invariant] += 1
            break
    try:  # the reader differential over the reader set (what `dsh-sim run` runs)
        run = readers.differential(
            readers.default_sources(1),
            readers.corpus_originals(harness.named(scenarios, readers.READER_SCENARIOS, "reader set")),
            readers.FULL_PLAN,
        )
        if run.mismatches:
            found["readers"]["reader_differential"] += len(run.mismatches)
    except Exception as err:
        found["readers"]["harness-error:" + type(err).__name__] += 1
    for machine in ("durability", "storage"):
        try:
            run = fuzz(machine, budget=600, examples=fuzz_examples, seed=7, out_dir="/tmp/indep-found", minimize_budget=1, shrink_budget=1)
        except Exception as err:
            found["fuzz"]["harness-error:" + type(err).__name__] += 1
            continue
        if run.found:
            found["fuzz"][run.found.invariant] += 1
    return found


def main() -> None:
    from dsh_sim.engine.logs import capture_runtime_logs
    from dsh_sim.scenario.files import load

    args = sys.argv[1:]
    replay_only = "--replay-only" in args
    names = [a for a in args if a != "--replay-only"] or list(BUGS)
    paths = sorted(glob.glob(os.path.join(ROOT, "scenarios", "starter", "*.json"))) + sorted(
        glob.glob(os.path.join(ROOT, "scenarios", "regressions", "*.json"))
    )
    scenarios = [s for s in (load(p) for p in paths) if s.passes_clean]
    survivors = []
    with capture_runtime_logs():
        for name in names:
            started = time.process_time()
            try:
                with applied(BUGS[name]):
                    found = methods(scenarios, explore_every=4, fuzz_examples=60, replay_only=replay_only)
            except StaleMutant as err:
                print(f"{name}: STALE {err}")
                continue
            caught = {m: dict(c) for m, c in found.items() if c}
            if not caught:
                survivors.append(name)
            print(f"{name}: {caught if caught else 'SURVIVED'}  ({time.process_time() - started:.0f} cpu-s)", flush=True)
    print(f"caught {len(names) - len(survivors)} of {len(names)}; survivors:", survivors)


if __name__ == "__main__":
    main()
