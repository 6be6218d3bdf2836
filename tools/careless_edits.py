"""Careless edits of the runtime code the route and reader judges cover (not bugs from a catalogue):
each applied alone, the whole passing corpus replayed and the reader differential run; prints the
invariants that named it and how many recorded digests moved. A row with only moved digests is a
gap: no oracle judged the change.

    python tools/careless_edits.py [NAME...]
"""

from __future__ import annotations

import glob
import sys
import time

from dsh_sim.drivers import readers
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.scenario.files import load

EDITS = {
    "failed-write-keeps-its-deadline": [
        Edit(
            "runtime.persistence.write_behind",
            "WriteBehind._write",
            "            self._deadline = None  # paused until the next event (or an explicit flush)\n",
            "",
        )
    ],
    "cancel-reason-renamed": [
        Edit("runtime.agent.loop", "Agent.cancel", 'self._signal.abort({"kind": reason})', 'self._signal.abort({"kind": "cancelled"})')
    ],
    "identity-by-name-only": [
        Edit(
            "runtime.persistence.backend",
            "JsonlBackend._check_identity",
            "        if expected != located.session_dir:\n",
            "        if expected.rsplit('/', 1)[-1] != located.session_dir.rsplit('/', 1)[-1]:\n",
        )
    ],
    "stream-forgets-the-abort": [
        Edit(
            "runtime.agent.loop",
            "Agent._stream",
            "        interrupted = scope.cancelled_caught or signal.aborted\n",
            "        interrupted = scope.cancelled_caught\n",
        )
    ],
    "migration-drops-depth": [
        Edit(
            "runtime.persistence.migration",
            "current_header",
            "        delegation_depth=h.delegation_depth,\n",
            "        delegation_depth=0,\n",
        )
    ],
    "negative-zero-by-sign": [
        Edit(
            "runtime.session.lossless",
            "_check_leaf",
            "        if value == 0.0 and math.copysign(1.0, value) < 0:\n",
            "        if value == 0.0 and value < 0:\n",
        )
    ],
}
paths = sorted(glob.glob("scenarios/starter/*.json")) + sorted(glob.glob("scenarios/regressions/*.json"))
scenarios = [s for s in (load(p) for p in paths) if s.passes_clean]
for name in sys.argv[1:] or EDITS:
    t = time.process_time()
    found = {}
    moved = 0
    with capture_runtime_logs(), applied(EDITS[name]):
        for sc in scenarios:
            try:
                r, _ = run_scenario(sc)
            except Exception as e:
                found["harness-error:" + type(e).__name__] = found.get("harness-error:" + type(e).__name__, 0) + 1
                continue
            for v in r.violations:
                found[v.invariant] = found.get(v.invariant, 0) + 1
            if sc.trace_digest and r.digest != sc.trace_digest:
                moved += 1
        try:
            run = readers.differential(readers.default_sources(1), [], readers.Plan(seed=1, tear_limit=6, flips=4, bomb_limit=4))
            if run.mismatches:
                found["reader_differential"] = len(run.mismatches)
        except Exception as e:
            found["readers-error:" + type(e).__name__] = 1
    print(name, found or "NOTHING", f"digests moved: {moved}", f"({time.process_time() - t:.0f} cpu-s)", flush=True)
