"""The JSON Schema of scenario files, generated from the typed model.

Types, defaults, ranges, closed vocabularies (ops, points, actions, tools, invariants,
mutants) and the per-point ``match`` keys all come from the same classes and validators the
loader enforces, so the schema cannot drift from what ``dsh-sim validate`` accepts.  (The
whole-scenario checks of :mod:`dsh_sim.scenario.checks` — call ids, lifetimes, machines —
are beyond a schema; ``validate`` runs them.)
"""

from __future__ import annotations

import types
import typing
from typing import Any

import attrs

from dsh_sim.engine.bounds import at_most, each, integer, member, number, optional, text, validators_of
from dsh_sim.engine.faults import FaultRule
from dsh_sim.engine.points import POINTS
from dsh_sim.scenario.args import OPS, Step
from dsh_sim.scenario.codec import Match, to_json
from dsh_sim.scenario.model import FORMAT, VERSION, Scenario

SCHEMA_ID = "https://dsh-sim.invalid/scenario.schema.json"


def _name(cls: type) -> str:
    return cls.__name__


def type_schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    if tp is Any:
        return {}
    if tp == Match:
        return {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean", "null"]}}
    simple = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
    if tp in simple:
        return {"type": simple[tp]}
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [type_schema(a, defs) for a in args]}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": type_schema(args[0], defs)}
        return {"type": "array", "prefixItems": [type_schema(a, defs) for a in args], "minItems": len(args), "maxItems": len(args)}
    if origin is dict:
        return {"type": "object"}
    if tp is Step:
        return {"$ref": "#/$defs/Step"}
    if attrs.has(tp):
        if _name(tp) not in defs:
            defs[_name(tp)] = {}  # reserve (recursive references)
            defs[_name(tp)] = class_schema(tp, defs)
        return {"$ref": f"#/$defs/{_name(tp)}"}
    raise TypeError(f"no schema for {tp!r}")


def _constraints(validator: Any) -> dict[str, Any]:
    if isinstance(validator, number | integer):
        return {"minimum": validator.lo, "maximum": validator.hi}
    if isinstance(validator, member):
        return {"enum": list(validator.choices)}
    if isinstance(validator, text):
        return {"maxLength": validator.max_len}
    if isinstance(validator, at_most):
        return {"maxItems": validator.limit}
    if isinstance(validator, optional):
        return _constraints(validator.inner)
    if isinstance(validator, each):
        return {"items": _constraints(validator.inner)}
    return {}


def _merge(schema: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    if "items" in extra and "items" in schema:
        schema = {**schema, "items": {**schema["items"], **extra.pop("items")}}
    if "anyOf" in schema and extra:  # an optional value: constrain the non-null branch
        return {"anyOf": [_merge(s, dict(extra)) if s != {"type": "null"} else s for s in schema["anyOf"]]}
    return {**schema, **extra}


def class_schema(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    attrs.resolve_types(cls)
    properties: dict[str, Any] = {}
    required = []
    for field in attrs.fields(cls):
        schema = type_schema(field.type, defs)
        for validator in validators_of(field):
            schema = _merge(schema, _constraints(validator))
        if field.metadata.get("doc"):
            schema = {**schema, "description": field.metadata["doc"]}
        if field.default is attrs.NOTHING:
            required.append(field.name)
        else:
            default = field.default
            if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                default = None if default.takes_self else default.factory()
            if default is not None or field.default is None:
                schema = {**schema, "default": to_json(default, field.type)}
        properties[field.name] = schema
    out: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "("):
        out["description"] = " ".join(cls.__doc__.split())
    if required:
        out["required"] = required
    return out


def _rule_schema(defs: dict[str, Any]) -> dict[str, Any]:
    schema = class_schema(FaultRule, defs)
    schema["properties"]["point"] = {"enum": list(POINTS), "description": "a named point (dsh-sim points)"}
    schema["allOf"] = [
        {
            "if": {"properties": {"point": {"const": name}}, "required": ["point"]},
            "then": {"properties": {"match": {"propertyNames": {"enum": list(point.details)}}}},
        }
        for name, point in POINTS.items()
    ]
    return schema


def scenario_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a scenario file."""
    defs: dict[str, Any] = {}
    defs["FaultRule"] = _rule_schema(defs)
    defs["Step"] = {
        "oneOf": [
            {
                "type": "object",
                "description": spec.doc,
                "properties": {"op": {"const": name}, "args": type_schema(spec.args, defs)},
                "required": ["op"],
                "additionalProperties": False,
            }
            for name, spec in OPS.items()
        ]
    }
    body = class_schema(Scenario, defs)
    body["properties"] = {
        "format": {"const": FORMAT},
        "version": {"const": VERSION, "description": "the scenario format version"},
        **body["properties"],
    }
    body["properties"]["name"]["description"] = "defaults to the file name"
    body["required"] = ["format", "version", "seed", "steps"]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "dsh-sim scenario",
        **body,
        "$defs": dict(sorted(defs.items())),
    }
