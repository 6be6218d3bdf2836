"""``dsh-sim dsh {setup,diff,generate}``: the published DSH, side by side with dsh-sim.

``setup`` installs the pinned npm set into the cache (once; later runs need no network);
``diff PATH...`` reads each log with the real DSH and with dsh-sim and prints every
difference (known DSH findings are labelled, anything else fails); ``generate DIR`` writes
the damaged-log corpus with the real DSH writer.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, CliError, emit_json
from dsh_sim.dsh.install import DSH_VERSION, Installation, InstallError, default_home, installation, setup
from dsh_sim.dsh.node import NodeMissing

if TYPE_CHECKING:
    from dsh_sim.dsh.against import DshOracle


def require_installation(home: str | None = None) -> Installation:
    """The installed pinned set, or one line saying how to get it (exit 2)."""
    try:
        found = installation(home)
        if found is None:
            from dsh_sim.dsh.node import find_node

            find_node()  # a missing Node is the more useful message
            raise CliError(f"the DSH packages are not installed in {home or default_home()}: run 'dsh-sim dsh setup'")
        return found
    except NodeMissing as err:
        raise CliError(str(err)) from None


@contextlib.contextmanager
def against_oracle(flag: str | None) -> Iterator[DshOracle | None]:
    """``--against dsh``: the real DSH reader compares every recovery inside the block (one
    Node process, ended after it); without the flag, nothing."""
    if flag != "dsh":
        yield None
        return
    from dsh_sim.dsh.against import session
    from dsh_sim.dsh.bridge import BridgeError

    try:
        with session(require_installation()) as oracle:
            yield oracle
    except BridgeError as err:
        raise CliError(str(err)) from None


def against_line(oracle: DshOracle) -> str:
    """One line: what the comparison with DSH covered and found."""
    s = oracle.summary()
    explained = ", ".join(f"{k} x{n}" for k, n in s["explained"].items()) or "none"
    return (
        f"against DSH: {s['compared']} crash image(s) compared ({s['probes']} distinct DSH probes), "
        f"{s['differences']} unexplained difference(s); known findings: {explained}; "
        f"{s['no_log']} without a log, {s['not_projectable']} not projectable to v0"
    )


def _setup(args: Any) -> int:
    try:
        install, now = setup(args.home, force=args.force)
    except NodeMissing as err:
        raise CliError(str(err)) from None
    except InstallError as err:
        raise CliError(f"dsh setup: {err}") from None
    doc = {
        "home": install.home,
        "node": install.node.node,
        "node_version": install.node.version_text,
        "dsh": DSH_VERSION,
        "installed_now": now,
    }
    if args.json:
        emit_json(doc)
    else:
        state = "installed" if now else "already installed (no network used)"
        print(f"DSH {DSH_VERSION} {state} in {install.home} (node {install.node.version_text}: {install.node.node})")
    return EXIT_OK


def _diff(args: Any) -> int:
    from dsh_sim.cli.commands.dsh_diff import run_diff

    return run_diff(args, require_installation(args.home))


def _generate(args: Any) -> int:
    from dsh_sim.dsh.generate import generate_corpus
    from dsh_sim.outputs import check_output_dir

    check_output_dir(args.out, "DIR")
    written = generate_corpus(require_installation(args.home), args.out, seed=args.seed, held_out=args.held_out)
    if args.json:
        emit_json({"out": args.out, "logs": written})
    else:
        print(f"{len(written)} logs written by the real DSH under {args.out}")
    return EXIT_OK


def main(args: Any) -> int:
    handlers = {"setup": _setup, "diff": _diff, "generate": _generate}
    try:
        return handlers[args.dsh_command](args)
    except BrokenPipeError:
        sys.stderr.close()
        return EXIT_VIOLATION
