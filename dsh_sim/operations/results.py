"""Results documents and what they add up to: reading them, the coverage report, and the
kill matrix of the durability mutant catalogue.

Here because every search writes results documents and the report merges them; the kill
matrix is the harness judging itself, written as one more document.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from dsh_sim.drivers.selftest import KillResult, run_mutants, summary
from dsh_sim.engine.logs import capture_runtime_logs
from dsh_sim.errors import InputError
from dsh_sim.evidence.coverage import aggregate
from dsh_sim.evidence.document import DocumentError, ResultsDocument, as_documents, unstructure
from dsh_sim.evidence.results import meta, write
from dsh_sim.evidence.results import read as read_results_files
from dsh_sim.mutants.catalogue import CATALOGUE
from dsh_sim.operations.search import check_mutants
from dsh_sim.outputs import check_output_dir, check_output_file

__all__ = ["KillMatrix", "KillResult", "Report", "mutant_catalogue", "mutants", "read_results", "report"]


def read_results(inputs: Sequence[str]) -> list[ResultsDocument]:
    """The result documents under ``inputs`` (files, or directories of ``*.json``)."""
    try:
        return read_results_files(inputs)
    except ValueError as err:
        raise InputError(str(err)) from None


@attrs.frozen
class Report:
    """The coverage report written: the aggregated document, the files, the unmet coverage
    requirements and the verdict lines (``failed``: a violation, a survivor or an unmet one)."""

    document: dict[str, Any]  # coverage.json: the aggregated view, summary and requirements
    paths: dict[str, str]  # format -> file written
    unmet: tuple[dict[str, Any], ...]
    lines: tuple[str, ...]  # the verdict, as printed
    failed: bool


def report(inputs: Sequence[str] | Sequence[ResultsDocument | Mapping[str, Any]], out: str = "reports") -> Report:
    """Merge result documents (or the files holding them; a document may be given as its JSON)
    into coverage.json/.md/.html."""
    from dsh_sim.report import write_coverage
    from dsh_sim.report.verdict import verdict

    given = [d for d in inputs if isinstance(d, (ResultsDocument, Mapping))]
    try:
        docs = (
            as_documents(given) if inputs and isinstance(inputs[0], (ResultsDocument, Mapping)) else read_results([str(p) for p in inputs])
        )
    except DocumentError as err:
        raise InputError(f"a results document given: {err}") from None
    if not docs:
        raise InputError(
            f"{', '.join(map(str, inputs)) or out}: no result documents; run dsh-sim run, fuzz --results or explore --results first"
        )
    check_output_dir(out, "--out")
    try:
        written, paths = write_coverage(aggregate(docs), out)
    except (KeyError, TypeError, ValueError, AttributeError) as err:  # a field of an unexpected shape in some document
        named = ", ".join(str(p) for p in inputs if not isinstance(p, (ResultsDocument, Mapping))) or "the result documents"
        raise InputError(f"{named}: a results document holds a field of the wrong shape ({type(err).__name__}: {err})") from None
    lines, failed = verdict(written.view, written.summary, written.unmet, paths)
    unmet = tuple(unstructure(r) for r in written.unmet)
    return Report(written.to_json(), paths, unmet, tuple(lines), failed)


def mutant_catalogue() -> dict[str, str]:
    """The durability mutants (name → what it breaks), each switched on by name."""
    return dict(sorted(CATALOGUE.items()))


@attrs.frozen
class KillMatrix:
    """The mutant self-test: each mutant's result by method, the totals (``stats``: mutants,
    killed, median time to kill, survivors) and the results document."""

    results: tuple[KillResult, ...]
    stats: dict[str, Any]
    document: ResultsDocument

    @property
    def survivors(self) -> list[str]:
        """The mutants no method killed (each one a gap in the harness)."""
        return list(self.stats["survivors"])


def mutants(
    only: Sequence[str] = (),
    *,
    budget: float = 20.0,
    corpus_dir: str = "scenarios/starter",
    methods: tuple[str, ...] = ("corpus", "explore", "fuzz"),
    progress: Callable[[KillResult], None] | None = None,
    results: str | None = None,
) -> KillMatrix:
    """The kill matrix of the durability mutant catalogue (all of it, or ``only`` these):
    each mutant attacked by replaying the corpus, exploring, and fuzzing for ``budget``
    seconds; with ``results``, the document is written there."""
    check_mutants(only)
    if results:
        check_output_file(results, "results file")
    with capture_runtime_logs():
        found = run_mutants(list(only) or None, corpus_dir=corpus_dir, fuzz_budget=budget, methods=methods, progress=progress)
    stats = summary(found)
    doc = ResultsDocument(meta=meta("mutants", budget=budget, **stats), kill_matrix=tuple(r.kill_row() for r in found))
    if results:
        write(doc, results)
    return KillMatrix(tuple(found), stats, doc)
