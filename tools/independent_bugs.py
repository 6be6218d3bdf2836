"""Realistic bugs written independently of the catalogue: which of dsh-sim's methods catch them?

Run: ``python tools/independent_bugs.py [NAME...]`` (about 30-60 CPU-s per bug).

Each bug is a few lines changed (a careless colleague's slip), applied by code substitution.
Methods, as `dsh-sim run` uses them: replay of the passing corpus, explore of a spread of it,
a short fixed-example fuzz of both machines.
"""

from __future__ import annotations

import collections
import glob
import os
import sys
import time

from dsh_sim.mutation.patch import Edit, StaleMutant, applied

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
P = "runtime.persistence."
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
}


def methods(scenarios: list, *, explore_every: int, fuzz_examples: int) -> dict[str, collections.Counter]:
    from dsh_sim.drivers.explore import explore
    from dsh_sim.drivers.fuzz import fuzz
    from dsh_sim.drivers.replay import run_scenario

    found: dict[str, collections.Counter] = {
        "replay": collections.Counter(),
        "explore": collections.Counter(),
        "fuzz": collections.Counter(),
    }
    for sc in scenarios:
        try:
            result, _ = run_scenario(sc)
        except Exception as err:
            found["replay"]["harness-error:" + type(err).__name__] += 1
            continue
        for v in result.violations:
            found["replay"][v.invariant] += 1
    for sc in scenarios[::explore_every]:
        try:
            result = explore(sc, cache={}, stop_on_violation=True)
        except Exception as err:
            found["explore"]["harness-error:" + type(err).__name__] += 1
            continue
        for _, v in result.violations[:1]:
            found["explore"][v.invariant] += 1
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

    names = sys.argv[1:] or list(BUGS)
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
                    found = methods(scenarios, explore_every=4, fuzz_examples=60)
            except StaleMutant as err:
                print(f"{name}: STALE {err}")
                continue
            caught = {m: dict(c) for m, c in found.items() if c}
            if not caught:
                survivors.append(name)
            print(f"{name}: {caught if caught else 'SURVIVED'}  ({time.process_time() - started:.0f} cpu-s)", flush=True)
    print("survivors:", survivors)


if __name__ == "__main__":
    main()
