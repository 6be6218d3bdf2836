"""JSON in and out for every scenario value, with one cattrs converter.

Structuring is strict — a JSON string is not an int, ``true`` is not a seed, a string is
not a list, unknown keys are refused — and every refusal carries its JSON path
(``$.steps[3].args.rule.match``) and, for names, a "did you mean".  Unstructuring writes
the committed file format (defaults omitted where the old writer omitted them), so a file
loads, saves and loads again to the same values.
"""

from __future__ import annotations

import json
import math
import typing
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import cattrs
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from dsh_sim.adapters.simfs.crash import PowerCut, TornCut
from dsh_sim.engine.config import SimConfig
from dsh_sim.engine.faults import CrashSpec, FaultRule
from dsh_sim.errors import FieldError, did_you_mean, one_of
from dsh_sim.scenario.args import OPS, ModelResponse, PromptArgs, Step, ToolCall
from dsh_sim.scenario.model import Expectation

Match = tuple[tuple[str, Any], ...]


class _Refused(ValueError):
    """A refusal at a path relative to where it was raised (joined by :func:`problems`)."""

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(message)
        self.where = where


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")


def _strict_str(value: Any, _: Any) -> str:
    if not isinstance(value, str):
        raise _Refused(f"must be a string, got {_kind(value)}")
    return value


def _strict_int(value: Any, _: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Refused(f"must be an integer, got {_kind(value) if not isinstance(value, float) else repr(value)}")
    return value


def _strict_float(value: Any, _: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Refused(f"must be a number, got {_kind(value)}")
    if not math.isfinite(value):
        raise _Refused(f"must be a finite number, got {value!r}")
    return value  # an int stays an int: the file saves back as it was written


def _strict_bool(value: Any, _: Any) -> bool:
    if not isinstance(value, bool):
        raise _Refused(f"must be true or false, got {_kind(value)}")
    return value


def _is_tuple(cls: Any) -> bool:
    return typing.get_origin(cls) is tuple


def _tuple_hook(cls: Any) -> Callable[[Any, Any], Any]:
    args: tuple[Any, ...] = typing.get_args(cls)
    homogeneous = len(args) == 2 and args[1] is Ellipsis

    def structure(value: Any, _: Any) -> Any:
        if not isinstance(value, list):
            raise _Refused(f"must be a list, got {_kind(value)}")
        if homogeneous:
            items: list[Any] = []
            errors: list[Exception] = []
            for index, item in enumerate(value):
                try:
                    items.append(converter.structure(item, args[0]))
                except Exception as err:  # collected with the index, like cattrs does
                    err.__notes__ = [*getattr(err, "__notes__", []), IterableValidationNote(f"item @ index {index}", index, args[0])]
                    errors.append(err)
            if errors:
                raise IterableValidationError("list items refused", errors, cls)
            return tuple(items)
        if len(value) != len(args):
            raise _Refused(f"must be a list of {len(args)} items, got {len(value)}")
        return tuple(converter.structure(item, t) for item, t in zip(value, args))

    return structure


def _attrs_hook(cls: Any) -> Callable[[Any, Any], Any]:
    inner = make_dict_structure_fn(cls, converter, _cattrs_forbid_extra_keys=True, _cattrs_detailed_validation=True)

    def structure(value: Any, _: Any) -> Any:
        if not isinstance(value, dict):
            raise _Refused(f"must be a JSON object, got {_kind(value)}")
        try:
            return inner(value, cls)
        except FieldError:
            raise
        except (ValueError, TypeError) as err:
            if isinstance(err, ClassValidationError | _Refused):
                raise
            raise _Refused(str(err)) from None

    return structure


def _match(value: Any, _: Any) -> Match:
    if not isinstance(value, dict):
        raise _Refused(f"must be a JSON object of detail key → value, got {_kind(value)}")
    return tuple(sorted(value.items()))


def _step(value: Any, _: Any) -> Step:
    if not isinstance(value, dict):
        raise _Refused(f'must be a JSON object {{"op": ..., "args": {{...}}}}, got {_kind(value)}')
    extra = sorted(set(value) - {"op", "args"})
    if extra:
        raise _Refused(f"unknown key {extra[0]!r}{did_you_mean(extra[0], ('op', 'args'))} (a step has op and args)")
    op = value.get("op")
    if op not in OPS:
        raise _Refused(one_of(op, OPS, "step op"), ".op")
    spec = OPS[op]
    try:
        args: Any = converter.structure(value.get("args", {}), spec.args)
    except Exception as err:
        err.__notes__ = [*getattr(err, "__notes__", []), AttributeValidationNote("args", "args", spec.args)]
        raise ClassValidationError(f"step {op}", [err], Step) from None
    return Step(op, args)


def _power_cut(value: Any, _: Any) -> PowerCut:
    if not isinstance(value, dict):
        raise _Refused(f"must be a JSON object, got {_kind(value)}")
    extra = sorted(set(value) - {"files", "entries"})
    if extra:
        raise _Refused(f"unknown key {extra[0]!r} (a cut has files and entries)")
    files = converter.structure(value.get("files", []), tuple[TornCut, ...])
    entries = converter.structure(value.get("entries", []), tuple[tuple[int, str, bool], ...])
    return PowerCut(files, entries)


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(omit_if_default=True, forbid_extra_keys=True)
    conv.register_structure_hook(str, _strict_str)
    conv.register_structure_hook(int, _strict_int)
    conv.register_structure_hook(float, _strict_float)
    conv.register_structure_hook(bool, _strict_bool)
    conv.register_structure_hook(Any, lambda value, _: value)
    conv.register_structure_hook_factory(_is_tuple, _tuple_hook)
    conv.register_structure_hook_factory(attrs.has, _attrs_hook)
    conv.register_structure_hook_func(lambda t: t == Match, _match)
    conv.register_structure_hook(Step, _step)
    conv.register_structure_hook(PowerCut, _power_cut)
    # the committed file format
    conv.register_unstructure_hook(Step, lambda step: {"op": step.op, "args": conv.unstructure(step.args)})
    conv.register_unstructure_hook_func(lambda t: t == Match, dict)
    conv.register_unstructure_hook(PowerCut, PowerCut.to_json)
    conv.register_unstructure_hook(
        CrashSpec, make_dict_unstructure_fn(CrashSpec, conv, kind=override(omit_if_default=False), _cattrs_omit_if_default=True)
    )
    conv.register_unstructure_hook(
        Expectation, make_dict_unstructure_fn(Expectation, conv, outcome=override(omit_if_default=False), _cattrs_omit_if_default=True)
    )
    conv.register_unstructure_hook(
        ToolCall, make_dict_unstructure_fn(ToolCall, conv, arguments=override(omit_if_default=False), _cattrs_omit_if_default=True)
    )
    conv.register_unstructure_hook(
        ModelResponse, make_dict_unstructure_fn(ModelResponse, conv, text=override(omit_if_default=False), _cattrs_omit_if_default=True)
    )
    conv.register_unstructure_hook(
        FaultRule, make_dict_unstructure_fn(FaultRule, conv, hit=override(omit_if_default=False), _cattrs_omit_if_default=True)
    )
    return conv


converter = _make_converter()


# -- refusals with their JSON paths ---------------------------------------------------------


def problems(err: BaseException, path: str = "$") -> Iterator[tuple[str, str]]:
    """(JSON path, message) for every refusal inside a structuring error."""
    if isinstance(err, ClassValidationError | IterableValidationError):
        for inner in err.exceptions:
            sub = path
            for note in getattr(inner, "__notes__", []):
                if isinstance(getattr(note, "index", None), int):
                    sub = f"{path}[{note.index}]"
                elif isinstance(getattr(note, "name", None), str):
                    sub = f"{path}.{note.name}"
            yield from problems(inner, sub)
    elif isinstance(err, ForbiddenExtraKeysError):
        known = [a.name for a in attrs.fields(err.cl)] if attrs.has(err.cl) else []
        for key in sorted(err.extra_fields):
            yield path, f"unknown key {key!r}{did_you_mean(key, known)}" + (f" (known: {', '.join(known)})" if known else "")
    elif isinstance(err, FieldError):
        yield f"{path}.{err.field}", str(err)
    elif isinstance(err, _Refused):
        yield path + err.where, str(err)
    elif isinstance(err, KeyError):
        yield path, "required field missing"
    else:
        yield path, str(err) or type(err).__name__


def structure(value: Any, cls: type[Any], path: str = "$") -> Any:
    """``value`` as a ``cls``; a refusal is a :class:`ValueError` naming the path."""
    try:
        return converter.structure(value, cls)
    except Exception as err:
        found = list(problems(err, path))
        where, message = found[0] if found else (path, str(err))
        raise ValueError(f"{where}: {message}") from None


def step_of(op: str, args: dict[str, Any] | None = None) -> Step:
    """A step from plain JSON args (what Hypothesis strategies and hand-built corpora write)."""
    step: Step = structure({"op": op, "args": args or {}}, Step)
    return step


def rule_of(obj: dict[str, Any]) -> FaultRule:
    result: FaultRule = structure(obj, FaultRule)
    return result


def config_of(obj: dict[str, Any]) -> SimConfig:
    result: SimConfig = structure(obj, SimConfig)
    return result


def to_json(value: Any, as_type: Any = None) -> Any:
    return converter.unstructure(value, unstructure_as=as_type)


def describe_step(step: Step) -> str:
    """``op(key=value, ...)`` with JSON values, as printed for a found scenario."""
    args = to_json(step.args)
    return f"{step.op}({', '.join(f'{k}={json.dumps(v, sort_keys=True)}' for k, v in args.items())})"


def prompt_args(args: PromptArgs) -> dict[str, Any]:
    return dict(to_json(args))
