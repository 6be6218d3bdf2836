"""Mutation testing of the runtime with mutmut, the harness as the test command.

Here because it runs for hours, resumably, in its own working copy, and ends in a survivor
report judged against the committed triage — a job of its own beside the kill matrix of
hand-written mutants (:func:`dsh_sim.operations.results.mutants`).
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import attrs

from dsh_sim.errors import InputError
from dsh_sim.evidence.document import unstructure
from dsh_sim.evidence.results import meta, write_json
from dsh_sim.outputs import check_output_file, write_replacing

__all__ = ["MutationToolFailed", "MutationToolRun", "mutation_tool"]


class MutationToolFailed(Exception):
    """mutmut itself failed (not a survivor: the run did not finish); the message says where its log is."""


@attrs.frozen
class MutationToolRun:
    """The survivor report of a mutmut run: the document, and the JSON and Markdown files."""

    document: dict[str, Any]
    results: str
    markdown: str


def modules_of(spec: str) -> tuple[str, ...]:
    """The modules ``spec`` names: core | priority | route | rest | all, or comma-separated paths."""
    from dsh_sim.mutation import tool

    groups = {
        "core": tool.CORE,
        "priority": tool.PRIORITY,
        "rest": tool.REST,
        "route": tool.ROUTE,
        "all": tuple(dict.fromkeys(tool.PRIORITY + tool.REST + tool.ROUTE)),
    }
    if spec in groups:
        return groups[spec]
    return tuple(m.strip() for m in spec.split(",") if m.strip())


def mutation_tool(
    *,
    modules: str = "core",
    max_children: int = 2,
    workdir: str = "reports/mutation/work",
    sample: int = 0,
    seed: int = 1,
    retest_survivors: bool = False,
    report_only: bool = False,
    triage: str = "benchmarks/mutation-triage.json",
    snapshot: str | None = None,
    results: str | None = None,
    notice: Callable[[str], None] | None = None,
) -> MutationToolRun:
    """Run (or continue) mutmut over ``modules`` from a clone of the repository (the current
    directory), then write the survivor report (``results``, default
    ``reports/mutation/survivors.json``, and its ``.md``; ``snapshot``: the Markdown once more).
    ``notice`` receives the progress lines; :class:`MutationToolFailed` when mutmut fails."""
    from dsh_sim.mutation import tool, tool_report

    say = notice or (lambda line: None)
    root = Path.cwd()
    if not (root / "runtime").is_dir() or not (root / "tests_mutation").is_dir():
        raise InputError("dsh-sim mutants --tool runs from a clone of the repository (runtime/ and tests_mutation/ here)")
    if importlib.util.find_spec("mutmut") is None:
        raise InputError("dsh-sim mutants --tool needs mutmut: pip install -e '.[mutation]'")
    chosen = modules_of(modules)
    out = results or "reports/mutation/survivors.json"
    for path, flag in ((out, "--results"), (str(Path(out).with_suffix(".md")), "--results"), (snapshot, "--snapshot")):
        if path:
            check_output_file(path, flag)  # before mutmut runs for hours, not after
    triaged = tool.load_triage(root / triage)
    work = root / workdir
    started = time.perf_counter()
    seconds = None
    if not report_only:
        try:
            tool.prepare(root, work, chosen)
        except FileNotFoundError as err:
            raise InputError(str(err)) from None
        if tool.ensure_dsh_reference(work) is None:
            say("the pinned DSH is not installed (dsh-sim dsh setup): the DSH reference items will skip")
        if tool.reset_if_harness_changed(root, work):
            say("the test command changed since the last run: every verdict was reset")
        elif tool.refresh_reach_if_changed(root, work):
            say("the simulator or the corpus changed since the last run: which test reaches which function is collected again")
        names: list[str] = []
        if retest_survivors:
            names = tool.survivors(work)
            say(f"re-testing {len(names)} survivor(s)")
        elif sample:
            if not tool.all_mutants(work):
                # mutmut writes the mutants (and collects its stats) before it looks at names;
                # a name that matches nothing makes it stop right there
                tool.run(work, max_children, ["__generate_only__"])
            decided = tool.all_mutants(work)
            names = [n for n in tool.choose_sample(work, sample, seed) if decided.get(n) is None]
            say(f"sample of {sample} mutants (seed {seed}): {len(names)} still to test")
        else:
            (work / "sample.json").unlink(missing_ok=True)
        say(f"mutmut over {len(chosen)} module(s) in {work} (progress: {work / 'mutmut.log'})")
        code = tool.run(work, max_children, names) if names or not (sample or retest_survivors) else 0
        seconds = round(time.perf_counter() - started, 1)
        if code != 0:
            raise MutationToolFailed(f"mutmut exited with status {code}; see {work / 'mutmut.log'}")
    found = tool.collect(work, chosen)
    sampled = tool.sample_names(work)
    extra = {
        "modules": list(chosen),
        "mutmut": metadata.version("mutmut"),
        "seconds": seconds,
        "sample": len(sampled) if sampled is not None else None,
        "generated": len(tool.all_mutants(work)),
    }
    doc = tool_report.document(found, triaged, unstructure(meta("mutants-tool", **extra)))
    write_json(doc, out)
    text = tool_report.markdown(doc)
    md = str(Path(out).with_suffix(".md"))
    write_replacing(md, text)
    if snapshot:
        write_replacing(snapshot, text)
    return MutationToolRun(doc, out, md)
