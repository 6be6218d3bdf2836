"""The published DSH beside dsh-sim: install it, read logs with both, write a damaged-log corpus
with it, explore its writer, and compare every recovery with its reader.

Here because each needs the pinned npm packages and Node (``dsh-sim dsh setup`` once), and
each refuses in one line when they are missing.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

from dsh_sim.dsh.against import DshOracle
from dsh_sim.dsh.diff import LogDiff
from dsh_sim.dsh.explore_dsh import DshExploreResult
from dsh_sim.dsh.install import DSH_VERSION, Installation, InstallError, default_home, installation, setup
from dsh_sim.dsh.node import NodeMissing
from dsh_sim.errors import InputError
from dsh_sim.evidence.document import ResultsDocument
from dsh_sim.operations.scenarios import expand, load
from dsh_sim.outputs import check_output_dir, check_output_file

__all__ = [
    "DshCorpus",
    "DshDiff",
    "DshExploration",
    "DshOracle",
    "DshSetup",
    "against_dsh",
    "dsh_diff",
    "dsh_explore",
    "dsh_generate",
    "dsh_setup",
    "require_installation",
]

FINDINGS = os.path.join("reports", "dsh-findings.md")


def require_installation(home: str | None = None) -> Installation:
    """The installed pinned set, or one line saying how to get it."""
    try:
        found = installation(home)
        if found is None:
            from dsh_sim.dsh.node import find_node

            find_node()  # a missing Node is the more useful message
            raise InputError(f"the DSH packages are not installed in {home or default_home()}: run 'dsh-sim dsh setup'")
        return found
    except NodeMissing as err:
        raise InputError(str(err)) from None


@contextlib.contextmanager
def against_dsh(enabled: bool = True) -> Iterator[DshOracle | None]:
    """Inside the block, the published DSH's reader also reads every recovered crash image
    (one Node process, ended after it) and a difference it cannot explain is a
    ``dsh_agrees`` violation; ``oracle.summary()`` counts what was compared.  Not
    ``enabled``: no comparison, ``None``."""
    if not enabled:
        yield None
        return
    from dsh_sim.dsh.against import session
    from dsh_sim.dsh.bridge import BridgeError

    try:
        with session(require_installation()) as oracle:
            yield oracle
    except BridgeError as err:
        raise InputError(str(err)) from None


# -- setup ------------------------------------------------------------------------------------


@attrs.frozen
class DshSetup:
    """Where the pinned DSH packages are installed, with which Node, and whether this call
    installed them (``False``: already there, no network used)."""

    home: str
    node: str
    node_version: str
    dsh: str
    installed_now: bool

    def document(self) -> dict[str, Any]:
        """What ``dsh-sim dsh setup --json`` prints."""
        return {
            "home": self.home,
            "node": self.node,
            "node_version": self.node_version,
            "dsh": self.dsh,
            "installed_now": self.installed_now,
        }


def dsh_setup(home: str | None = None, *, force: bool = False) -> DshSetup:
    """Install the pinned DSH npm packages into ``home`` (default: the cache) unless they are
    there already (``force``: reinstall); later runs need no network."""
    try:
        install, now = setup(home, force=force)
    except NodeMissing as err:
        raise InputError(str(err)) from None
    except InstallError as err:
        raise InputError(f"dsh setup: {err}") from None
    return DshSetup(install.home, install.node.node, install.node.version_text, DSH_VERSION, now)


# -- diff -------------------------------------------------------------------------------------


@attrs.frozen
class DshDiff:
    """Logs read by the published DSH and by dsh-sim: each log's differences (a known DSH
    finding labels the ones it explains), and the findings report written."""

    logs: tuple[LogDiff, ...]
    findings_report: str | None = None

    @property
    def unexplained(self) -> int:
        """Differences no known finding explains (each one fails ``dsh-sim dsh diff``)."""
        return sum(len(d.unexplained) for d in self.logs)

    def document(self) -> dict[str, Any]:
        """What ``dsh-sim dsh diff --json`` prints."""
        from dsh_sim.dsh.diff import summary

        return {"logs": [summary(d) for d in self.logs], "unexplained": self.unexplained, "findings_report": self.findings_report}


def dsh_diff(paths: Sequence[str], *, findings: str | None = FINDINGS, workers: int = 2, home: str | None = None) -> DshDiff:
    """Read every v0 session log under ``paths`` (files, or directories searched) with the
    real DSH and with dsh-sim, ``workers`` Node bridges at once; write the findings report to
    ``findings`` (``None``: none)."""
    from dsh_sim.dsh.bridge import BridgeError
    from dsh_sim.dsh.diff import collect, diff_logs
    from dsh_sim.dsh.report import write_findings

    install = require_installation(home)
    if findings:
        check_output_file(findings, "--findings")  # before Node starts, not after every log was read
    logs = list(collect(paths))
    for path in paths:
        if not os.path.exists(path):
            raise InputError(f"{path}: no such file or directory")
    if not logs:
        raise InputError(f"no v0 session logs (session.jsonl, session.jsonl.zstd) under {' '.join(paths)}")
    try:
        diffs = diff_logs(install, logs, workers)
    except (ValueError, BridgeError) as err:
        raise InputError(str(err)) from None
    report = write_findings(findings, diffs=diffs) if findings else None
    return DshDiff(tuple(diffs), report)


# -- generate ---------------------------------------------------------------------------------


@attrs.frozen
class DshCorpus:
    """A corpus of logs written (and damaged) by the real DSH writer."""

    out: str
    logs: tuple[str, ...]

    def document(self) -> dict[str, Any]:
        """What ``dsh-sim dsh generate --json`` prints."""
        return {"out": self.out, "logs": list(self.logs)}


def dsh_generate(out: str, *, seed: int = 1, held_out: bool = False, home: str | None = None) -> DshCorpus:
    """Write the damaged-log corpus into the new (or empty) directory ``out`` with the real
    DSH writer; ``seed`` chooses the damage, ``held_out`` the variant of other sizes and cuts."""
    from dsh_sim.dsh.generate import generate_corpus

    check_output_dir(out)
    written = generate_corpus(require_installation(home), out, seed=seed, held_out=held_out)
    return DshCorpus(out, tuple(written))


# -- the DSH writer explored ------------------------------------------------------------------


@attrs.frozen
class DshExploration:
    """The published DSH writer crashed at every filesystem operation of each scenario's
    session shape: each result, the scenarios with nothing to write, the results document."""

    explored: tuple[tuple[str, DshExploreResult], ...]  # (scenario file, result)
    skipped: tuple[str, ...]  # scenario files with no prompt steps
    document: ResultsDocument
    findings: str  # the findings report written

    @property
    def failed(self) -> bool:
        """Some exploration found a violation."""
        return any(r.violations for _, r in self.explored)


def dsh_explore(
    paths: Sequence[str],
    *,
    crash: str = "both",
    bound: int | None = None,
    results: str | None = None,
    findings: str = FINDINGS,
    progress: Callable[[str, DshExploreResult | None], None] | None = None,
) -> DshExploration:
    """``dsh-sim explore --runtime dsh``: the DSH writer (Node, on SimFS) crashed at every
    filesystem operation of each scenario's session shape; ``progress`` is called after each
    file (``None``: it has no prompt steps).  The results document goes to ``results`` when
    given; the findings report to ``findings``."""
    from dsh_sim.dsh.explore_dsh import explore_dsh, results_document
    from dsh_sim.dsh.report import write_findings
    from dsh_sim.dsh.shapes import shape_of
    from dsh_sim.evidence.results import write
    from dsh_sim.scenario.codec import to_json

    files = expand(paths)
    install = require_installation(None)
    explored: list[tuple[str, DshExploreResult]] = []
    skipped: list[str] = []
    for path in files:
        scenario = load(path)
        log = shape_of([to_json(step) for step in scenario.steps], "dsh-explore")
        if not log.batches:
            skipped.append(path)
            if progress is not None:
                progress(path, None)
            continue
        result = explore_dsh(install, log, scenario.config.compression, name=scenario.name, crash=crash, bound=bound)
        explored.append((path, result))
        if progress is not None:
            progress(path, result)
    doc = results_document(explored)
    if results:
        write(doc, results)
    items = [
        {
            "finding": None,
            "where": f"{r.shape} ({r.compression}) point {v.point} {v.crash}",
            "detail": f"{v.invariant}: {v.detail}",
            "reproduce": f"dsh-sim explore --runtime dsh <scenario of {r.shape}>",
        }
        for _, r in explored
        for v in r.violations
    ]
    write_findings(findings, explore=items, explore_summary=[r.document() for _, r in explored])
    return DshExploration(tuple(explored), tuple(skipped), doc, findings)
