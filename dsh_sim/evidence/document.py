"""Results documents as types: one schema, one conversion each way.

Every run writes a results document and the report merges them (:mod:`.results`).  They were
dictionaries built by hand in a dozen places and checked by a hand-written shape test; now
producers build a :class:`ResultsDocument`, :func:`unstructure` turns it into JSON and
:func:`structure` reads JSON back, refusing a malformed document in one line that says where
it is wrong (``violations[0].invariant must be a string, got 5``).

A key a document does not have is ``None`` here and stays absent in its JSON, so a document
reads back exactly as it was written: an explore document's empty ``checked`` stays, a replay
document gets no ``cells``.  Fields producers always write, ``null`` included (a survivor's
kill-matrix row, a case's ``torn_class``), are written even when ``None``.  Meta keys no field
names — and known keys holding ``null`` — are kept in :attr:`Meta.extra`, so they survive too;
a key no field of another part names is not kept (no producer writes one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, get_origin

import attrs
import cattrs
from cattrs.cols import homogenous_tuple_structure_factory, mapping_structure_factory
from cattrs.gen import make_dict_structure_fn, override

from dsh_sim.evidence.records import (
    CampaignRecord,
    Case,
    CaseCall,
    Counts,
    Determinism,
    DshAgainst,
    DshExploreRow,
    DshRouteRow,
    DshViolation,
    Grid,
    KillRow,
    MethodResult,
    PointCounts,
    ReaderCounts,
    SweepRow,
    Violation,
)
from dsh_sim.evidence.tally import CaseTally

RESULTS_FORMAT = "dsh-sim-results"


@attrs.frozen(kw_only=True)
class Meta:
    """What ran: the kind of run, versions, arguments and time, and the run's own numbers.

    The fields are in the order producers wrote the keys (a document printed by ``--json`` is
    not sorted): ``dsh-sim mutants`` writes budget, mutants, killed, median_time_to_kill,
    survivors; ``dsh-sim explore --runtime dsh`` writes shapes, states, seconds.
    """

    format: str | None = None
    kind: str | None = None
    dsh_sim: str | None = None
    python: str | None = None
    argv: tuple[str, ...] | None = None
    started: str | None = None
    run: str | None = None  # a campaign task's run id, task id and worker
    task: str | None = None
    worker: str | None = None
    worker_argv: tuple[str, ...] | None = None  # (a campaign task) the command line of the process it ran in
    cpu_seconds: float | None = None  # (a campaign task) CPU of its process and the children it waited for
    scenario: str | None = None
    scenarios: int | None = None
    shapes: int | None = None
    states: int | None = None
    crash_points: int | None = None
    sampled: Counts | None = None
    bound: int | None = None
    seconds: float | None = None
    machine: str | None = None
    seed: int | None = None
    examples: int | None = None
    examples_limit: int | None = None
    discarded_examples: int | None = None  # (fuzz) executions Hypothesis discarded, not counted in examples
    shrink_replays: int | None = None  # (fuzz) executions after the first violation: shrinking it
    steps: int | None = None
    max_rules_per_example: int | None = None
    budget: float | None = None
    methods: tuple[str, ...] | None = None
    mutants: int | tuple[str, ...] | None = None  # a count (mutants), the names enabled (fuzz)
    killed: int | None = None
    median_time_to_kill: float | None = None
    survivors: tuple[str, ...] | None = None
    skipped: int | None = None
    # every other key, and known keys written as null
    extra: dict[str, Any] = attrs.field(factory=dict)

    @extra.validator
    def _only_nulls_of_fields(self, _: object, extra: Mapping[str, object]) -> None:
        named = [key for key, value in extra.items() if value is not None and key in _META_FIELDS]
        if named:
            raise ValueError(f"Meta.extra holds {', '.join(named)}: a field's value is set as the field")


_META_FIELDS = frozenset(f.name for f in attrs.fields(Meta)) - {"extra"}


@attrs.frozen(kw_only=True)
class ResultsDocument:
    """One run's results; see :mod:`dsh_sim.evidence.results` for what each part means.  The
    fields are in the order producers wrote the keys (an explore-dsh document: meta,
    dsh_explore, violations)."""

    meta: Meta | None = None
    case_tally: CaseTally | None = None
    cases: tuple[Case, ...] | None = None
    checked: Counts | None = None
    points: dict[str, PointCounts] | None = None
    cells: dict[str, Grid] | None = None  # matrix -> row -> column -> possible/explored states
    sampled: Counts | None = None
    dsh_explore: tuple[DshExploreRow, ...] | None = None
    violations: tuple[Violation, ...] | None = None
    moved_unjudged: tuple[str, ...] | None = None
    determinism: tuple[Determinism, ...] | None = None
    kill_matrix: tuple[KillRow, ...] | None = None
    dsh_route: tuple[DshRouteRow, ...] | None = None
    dsh_against: DshAgainst | None = None
    dsh_skipped: str | None = None
    readers: ReaderCounts | None = None  # (a replay shard's) the reader differential
    sweep: tuple[SweepRow, ...] | None = None  # (a replay shard's) the failure-path sweep, one row per scenario
    campaign: CampaignRecord | None = None  # (kind campaign) the run's own record: seed, command, time per phase

    @property
    def kind(self) -> str | None:
        return None if self.meta is None else self.meta.kind

    def to_json(self) -> dict[str, Any]:
        """The document as written (:func:`unstructure`)."""
        return unstructure(self)

    def tally(self) -> CaseTally:
        """The document's crash cases, counted: its ``case_tally`` plus any listed ``cases``."""
        tally = CaseTally()
        if self.case_tally is not None:
            tally.merge(self.case_tally)
        for case in self.cases or ():
            tally.count(
                case.kind, case.phase, case.barrier, case.torn_class, [(c.boundary, c.outcome, bool(c.applied)) for c in case.calls]
            )
        return tally


class DocumentError(ValueError):
    """A malformed results document; the message is one line saying where and what."""


# -- the one conversion -----------------------------------------------------------------------

T = TypeVar("T")
_NUMBERS = (int, float)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _str(value: object, _: type) -> str:
    if isinstance(value, str):
        return value
    raise TypeError(f"must be a string, got {_shown(value)}")


def _int(value: object, _: type) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(f"must be an integer, got {_shown(value)}")


def _float(value: object, _: type) -> float:
    if isinstance(value, _NUMBERS) and not isinstance(value, bool):
        return value  # an integer stays one, so it is written back as it was read
    raise TypeError(f"must be a number, got {_shown(value)}")


def _bool(value: object, _: type) -> bool:
    if isinstance(value, bool):
        return value
    raise TypeError(f"must be true or false, got {_shown(value)}")


def _checked(kind: type, what: str, inner: Callable[[Any, Any], T]) -> Callable[[Any, Any], T]:
    """``inner`` only for a value of JSON type ``kind``: cattrs would make a tuple of a string's
    characters or of a dictionary's keys."""

    def hook(value: Any, type_: Any) -> T:
        if not isinstance(value, kind):
            raise TypeError(f"must be {what}, got {_shown(value)}")
        return inner(value, type_)

    return hook


def _is_tuple(type_: Any) -> bool:
    return get_origin(type_) is tuple


def _is_dict(type_: Any) -> bool:
    return get_origin(type_) is dict


def _tuple_hook(type_: Any, conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
    return _checked(list, "a list", homogenous_tuple_structure_factory(type_, conv))


def _dict_hook(type_: Any, conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
    return _checked(dict, "an object", mapping_structure_factory(type_, conv))


def _attrs_hook(type_: Any, conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
    return _checked(dict, "an object", make_dict_structure_fn(type_, conv))


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter()
    for kind, hook in ((str, _str), (int, _int), (float, _float), (bool, _bool)):
        conv.register_structure_hook(kind, hook)
    conv.register_structure_hook_factory(_is_tuple, _tuple_hook)
    conv.register_structure_hook_factory(_is_dict, _dict_hook)
    conv.register_structure_hook_factory(attrs.has, _attrs_hook)

    def count_or_names(value: object, _: Any) -> int | tuple[str, ...]:
        if isinstance(value, list):
            names: tuple[str, ...] = conv.structure(value, tuple[str, ...])
            return names
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise TypeError(f"must be an integer or a list of strings, got {_shown(value)}")

    conv.register_structure_hook(int | tuple[str, ...] | None, count_or_names)  # Meta.mutants (never null here)
    meta_fields = make_dict_structure_fn(Meta, conv, extra=override(omit=True))

    def structure_meta(value: Any, _: Any) -> Meta:
        if not isinstance(value, dict):
            raise TypeError(f"must be an object, got {_shown(value)}")
        typed = {k: v for k, v in value.items() if k in _META_FIELDS and v is not None}
        extra = {k: v for k, v in value.items() if k not in typed}
        return attrs.evolve(meta_fields(typed, Meta), extra=extra)

    conv.register_structure_hook(Meta, structure_meta)
    conv.register_unstructure_hook(tuple, lambda t: [conv.unstructure(x) for x in t])
    conv.register_unstructure_hook_factory(attrs.has, lambda t: _unstructure_fn(t, conv))
    return conv


def _unstructure_fn(cls: type, conv: cattrs.Converter) -> Callable[[Any], dict[str, Any]]:
    fields = [(f.name, bool(f.metadata.get("keep_null"))) for f in attrs.fields(cls) if not (cls is Meta and f.name == "extra")]

    def unstructure(obj: Any) -> dict[str, Any]:
        extra: Mapping[str, Any] = obj.extra if isinstance(obj, Meta) else {}
        out: dict[str, Any] = {}
        for name, keep_null in fields:
            value = getattr(obj, name)
            if value is not None or keep_null:
                out[name] = conv.unstructure(value)
            elif name in extra:  # a null the JSON held (a field set since wins), in the field's place
                out[name] = None
        for key, value in extra.items():
            out.setdefault(key, conv.unstructure(value))
        return out

    return unstructure


CONVERTER = _make_converter()


def _problem(err: Exception) -> str:
    """The first thing wrong, as ``where what``: ``violations[0].invariant must be a string``."""

    def message(exc: BaseException, _: type | None) -> str:
        if isinstance(exc, KeyError):
            return "is required"
        if isinstance(exc, (TypeError, ValueError)) and exc.args and isinstance(exc.args[0], str):
            return exc.args[0]
        return f"is malformed ({type(exc).__name__})"

    lines = cattrs.transform_error(err, format_exception=message) or [f"is malformed ({type(err).__name__}) @ $"]
    what, _, where = lines[0].rpartition(" @ ")
    where = where.removeprefix("$").removeprefix(".")
    return f"{where or 'the document'} {what}"


def structure_as(obj: object, cls: type[T]) -> T:
    """``obj`` (JSON) as ``cls``; a :class:`DocumentError` says what is wrong."""
    try:
        return CONVERTER.structure(obj, cls)
    except (cattrs.BaseValidationError, TypeError, ValueError, KeyError) as err:
        raise DocumentError(_problem(err)) from None


def structure(obj: object) -> ResultsDocument:
    """A results document from its JSON (its ``meta.format`` is not checked: :func:`read_document`)."""
    return structure_as(obj, ResultsDocument)


def read_document(obj: object) -> ResultsDocument:
    """A results document from JSON read from a file: it must say it is one."""
    meta = obj.get("meta") if isinstance(obj, dict) else None
    if not isinstance(meta, dict) or meta.get("format") != RESULTS_FORMAT:
        raise DocumentError(f"not a dsh-sim results document (meta.format != {RESULTS_FORMAT!r})")
    return structure(obj)


def unstructure(record: attrs.AttrsInstance) -> dict[str, Any]:
    """The JSON of a results document, or of one of its parts."""
    out: dict[str, Any] = CONVERTER.unstructure(record)
    return out


def as_document(doc: ResultsDocument | Mapping[str, Any]) -> ResultsDocument:
    """``doc`` typed: a document built in memory (a library caller's, a test's) is structured."""
    return doc if isinstance(doc, ResultsDocument) else structure(dict(doc))


def as_documents(docs: Iterable[ResultsDocument | Mapping[str, Any]]) -> list[ResultsDocument]:
    return [as_document(doc) for doc in docs]


__all__ = [
    "CONVERTER",
    "RESULTS_FORMAT",
    "CampaignRecord",
    "Case",
    "CaseCall",
    "Counts",
    "Determinism",
    "DocumentError",
    "DshAgainst",
    "DshExploreRow",
    "DshRouteRow",
    "DshViolation",
    "Grid",
    "KillRow",
    "Meta",
    "MethodResult",
    "PointCounts",
    "ReaderCounts",
    "ResultsDocument",
    "SweepRow",
    "Violation",
    "as_document",
    "as_documents",
    "read_document",
    "structure",
    "structure_as",
    "unstructure",
]
