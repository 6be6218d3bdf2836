"""``dsh-sim run``'s DSH phase: bounded, and skipped in one line when DSH is not installed.

Three parts, each written as result documents so the report's DSH section shows them:

* the published DSH writer explored (:func:`dsh_sim.dsh.explore_dsh.explore_dsh`) over every
  *distinct* session shape of the corpus's starter scenarios — many scenarios share a shape
  (the boundary scenarios differ in the tool, not in what is logged), so each is explored once,
  with at most ``SHAPE_BOUND`` states per crash point;
* ``--against dsh`` on a sample of the corpus (``AGAINST_SAMPLE``: a zstd call boundary, raw
  torn tails, a torn multi-block frame, a crash during recovery): our runtime explored again
  with every recovered crash image read by DSH, at most ``AGAINST_BOUND`` states per point.
  Its result document carries only the comparison (counts, ``dsh_agrees`` checks and
  violations): the crash cases are the main explore's already.

* the published DSH *route* (agent loop, checkpoint policy, tools, store) crashed at every point
  of the starter scenarios it can express, each kill compared with dsh-sim's recovery of it
  (:mod:`dsh_sim.campaign.route_phase`).

Nothing here needs the network: ``dsh-sim dsh setup`` installed the packages before, or the
phase says it is skipped and the run goes on.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from dsh_sim.campaign.route_phase import run_route_phase
from dsh_sim.dsh.against import NAME, delta, session
from dsh_sim.dsh.explore_dsh import DshExploreResult, explore_dsh, results_document
from dsh_sim.dsh.install import Installation, installation
from dsh_sim.dsh.node import NodeMissing
from dsh_sim.dsh.shapes import shape_of
from dsh_sim.evidence.document import DshAgainst, ResultsDocument, Violation, structure_as
from dsh_sim.evidence.results import meta, write
from dsh_sim.operations.search import explore
from dsh_sim.scenario.codec import to_json
from dsh_sim.scenario.model import Scenario

Between = Callable[[str, int, int], None]
SKIPPED = "not installed (run 'dsh-sim dsh setup' once to include the published DSH: its writer, reader and route)"
SHAPE_BOUND = 3
AGAINST_BOUND = 6
AGAINST_SAMPLE = ("boundary-2-3-pay", "torn-none-mid-line", "torn-zstd-multiblock-partial-records", "crash-during-recovery")


def installed() -> Installation | None:
    try:
        return installation(None)
    except NodeMissing:
        return None


def distinct_shapes(files: Sequence[str], scenarios: Sequence[Scenario]) -> list[tuple[str, Scenario]]:
    """The first starter scenario of each distinct (session shape, compression)."""
    seen: dict[str, tuple[str, Scenario]] = {}
    for path, scenario in zip(files, scenarios):
        if f"{os.sep}starter{os.sep}" not in os.path.join(os.sep, path):
            continue
        log = shape_of([to_json(step) for step in scenario.steps], "dsh-explore")
        if log.batches:
            seen.setdefault(json.dumps([log.batches, scenario.config.compression], sort_keys=True), (path, scenario))
    return list(seen.values())


def _nothing(part: str, done: int, total: int) -> None:
    pass


def run_dsh_phase(
    files: Sequence[str], scenarios: Sequence[Scenario], results_dir: str, tag: str, between: Between = _nothing
) -> list[str]:
    """Explore DSH's writer and compare a sample with DSH's reader; the result files written.
    ``between(part, done, total)`` after each crash point of each part: progress, and where a
    campaign stops when asked (it raises)."""
    install = installed()
    if install is None:
        print(f"DSH: {SKIPPED}; skipped", flush=True)
        # the report says so too (a DSH section that is absent reads as nothing to report)
        skipped = ResultsDocument(meta=meta("dsh-skipped"), dsh_skipped=SKIPPED)
        return [write(skipped, os.path.join(results_dir, f"dsh-skipped{tag}.json"))]
    started = time.perf_counter()
    explored: list[tuple[str, DshExploreResult]] = []
    shapes = distinct_shapes(files, scenarios)
    for index, (path, scenario) in enumerate(shapes, 1):
        part = f"DSH writer, shape {index}/{len(shapes)} ({scenario.name}), crash point"
        between(part, 0, 0)
        log = shape_of([to_json(step) for step in scenario.steps], "dsh-explore")
        explored.append(
            (
                path,
                explore_dsh(
                    install,
                    log,
                    scenario.config.compression,
                    name=scenario.name,
                    bound=SHAPE_BOUND,
                    on_point=functools.partial(between, part),
                ),
            )
        )
    doc = results_document(explored)
    written = [write(doc, os.path.join(results_dir, f"dsh-explore{tag}.json"))]
    states = sum(r.states for _, r in explored)
    print(
        f"DSH writer explored over {len(explored)} distinct session shape(s): {sum(r.points for _, r in explored)} crash points, "
        f"{states} states, {len(doc.violations or ())} violation(s), {time.perf_counter() - started:.1f}s",
        flush=True,
    )
    sample = [(p, s) for p, s in zip(files, scenarios) if s.name in AGAINST_SAMPLE and s.passes_clean]
    with session(install) as oracle:
        for index, (path, scenario) in enumerate(sample):
            part = f"against DSH, scenario {index + 1}/{len(sample)} ({scenario.name}), crash point"
            between(part, 0, 0)
            before = oracle.summary()
            result = explore(
                scenario,
                bound=AGAINST_BOUND,
                found_dir="scenarios/found",
                on_point=functools.partial(between, part),
            )
            after = oracle.summary()
            written.append(
                write(_against_document(path, result, before, after), os.path.join(results_dir, f"against-dsh{tag}-{index}.json"))
            )
        summary = oracle.summary()
    print(
        f"against DSH: {len(sample)} scenario(s), {summary['compared']} crash images read by DSH too "
        f"({summary['probes']} distinct probes), {summary['differences']} unexplained difference(s), "
        f"{time.perf_counter() - started:.1f}s in all",
        flush=True,
    )
    written.append(run_route_phase(install, files, scenarios, results_dir, tag, between))
    return written


def _against_document(path: str, result: Any, before: dict[str, Any], after: dict[str, Any]) -> ResultsDocument:
    counts = delta(before, after)
    return ResultsDocument(
        meta=meta("against-dsh", scenario=path, states=len(result.states), seconds=round(result.seconds, 3)),
        checked={NAME: counts["compared"]},
        violations=tuple(
            Violation(v.invariant, v.describe(), state.repro, "against-dsh") for state, v in result.violations if v.invariant == NAME
        ),
        dsh_against=structure_as(counts, DshAgainst),
    )
