"""``dsh-sim demo``: one scripted agent session on the real filesystem (:func:`dsh_sim.api.demo`).

The real runtime with production ports: the JSONL + zstd backend under ``--root``, the
checkpoint policy, file tools confined to ``--workspace``, and the shell tool confined by the
local sandbox chain — bubblewrap, else Landlock — when one works here; otherwise the call
fails closed with SANDBOX_UNAVAILABLE, and the demo says so rather than leave it to be found
in the log.
The model is the deterministic script adapter, reading ``--script`` (a packaged example by
default).
"""

from __future__ import annotations

from typing import Any

from dsh_sim import api


def main(args: Any) -> int:
    run = api.demo(
        root=args.root,
        workspace=args.workspace,
        session=args.session,
        script=args.script,
        prompt=args.prompt,
        compression=args.compression,
    )
    print(f"turn {run.turn}: {run.reason} after {run.steps} step(s)")
    for line in run.shell:
        print(line)
    print(f"session log: {run.session_dir}")
    print(f"read it back with:  dsh-sim inspect {run.session_dir}")
    return 0
