"""Rewrite ``dsh_sim/dsh/pinned-findings.json``: the findings each log of the seed-3 differential
corpus gets from dsh-sim now.

Run: ``python tools/pin_dsh_findings.py [RECORDED.jsonl.zst]`` (records the corpus with the pinned
DSH first when no recorded file is given: about a minute).  Do it only when a change *should* move
a finding (a new family of logs, a finding added or retired), and say why in the commit: the tests
and the mutation harness report every log whose findings differ from the pinned ones.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

from dsh_sim.dsh.install import DSH_VERSION, installation
from dsh_sim.dsh.reference import PINNED, PINNED_SEED, findings_of, load, record
from dsh_sim.errors import InputError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory() as scratch:
        path = argv[0] if argv else os.path.join(scratch, "reference.jsonl.zst")
        if not argv:
            install = installation()
            if install is None:
                print("the pinned DSH is not installed: run `dsh-sim dsh setup` first", file=sys.stderr)
                return 2
            record(install, path, seed=PINNED_SEED)
        try:
            findings = findings_of(load(path))
        except InputError as err:  # nothing is written
            print(f"pin_dsh_findings: {err}", file=sys.stderr)
            return 2
    rows = ",\n".join(f"  {json.dumps(name)}: {json.dumps(ids)}" for name, ids in sorted(findings.items()))
    head = f'{{"seed": {PINNED_SEED}, "dsh": {json.dumps(DSH_VERSION)}, "findings": {{\n'
    out = os.path.join(ROOT, "dsh_sim", "dsh", PINNED)
    with open(out + ".tmp", "w", encoding="utf-8") as handle:  # one log a line: a moved finding is a one-line diff
        handle.write(head + rows + "\n}}\n")
    os.replace(out + ".tmp", out)
    print(f"{len(findings)} logs with findings pinned in {os.path.relpath(out, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
