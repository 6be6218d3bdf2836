"""The scenario language reference (Markdown), generated from the registries.

Every op with its args, every named point with the detail keys a ``match`` can use and the
faults it allows, crash kinds and power states, tools, invariants, mutants, the config and
the expectation — the same classes, validators and registries the loader enforces, so a
scenario written from this page alone validates and replays as intended.
``docs/scenario-reference.md`` is this page; a test keeps it current.
"""

from __future__ import annotations

import json
import typing
from typing import Any

import attrs

from dsh_sim.adapters.world_tools import TOOL_EXAMPLES, TOOL_KINDS
from dsh_sim.engine.bounds import validators_of
from dsh_sim.engine.config import SimConfig
from dsh_sim.engine.faults import CrashSpec, FaultRule
from dsh_sim.engine.points import LAYERS, POINTS, UNIVERSAL_ACTIONS
from dsh_sim.evidence.invariants.registry import INVARIANTS
from dsh_sim.mutants.catalogue import CATALOGUE
from dsh_sim.scenario.args import OPS, ModelResponse, ToolCall
from dsh_sim.scenario.codec import Match, to_json
from dsh_sim.scenario.model import Expectation
from dsh_sim.scenario.schema import _constraints

POWER_STATE_DOCS = {
    "drop": "every unsynced write and directory entry is lost",
    "keep": "every unsynced write and directory entry survives",
    "torn": "unsynced writes land in order; the last one lands only partly (torn_fraction of its bytes)",
    "random": "a seeded random prefix of the unsynced operations survives",
    "cut": "an explicit post-crash state (`cut`: files and entries), as explore writes it",
}
ACTION_DOCS = {
    "crash": "end the process here (`crash`: kill or power loss; default kill)",
    "delay": "sleep `delay` virtual seconds here",
    "cancel": "cancel the running turn",
    "corrupt": "flip one stored byte of `corrupt_path` (default the session log) at `corrupt_offset`",
    "error": "the filesystem operation fails with `errno`, before any byte lands",
    "fsync_fail": "fsync fails with `errno`; `drop_dirty` drops the dirty pages (Linux behaviour)",
    "replaced": "another process removes the file at the path and creates an empty one there before the lock is taken (a stale-lock cleaner)",
    "removed": "another process removes the file at the path before the lock is taken, and leaves the name free (a stale-lock cleaner)",
    "contended": "another process won the race to open the session: it holds the lock when this flock runs (the open must be refused and leave nothing behind)",
    "target_exists": "another process put a file at the name this link publishes, just before it (the runtime must never remove or overwrite it: the link refuses, or an identical file is accepted)",
    "linked": "another program puts a symbolic link (to a file outside the sessions root) at the path just before the open, moving a file there aside: the race between the runtime's checks and its open (see plant_link)",
    "request_lost": "the request never reaches the service",
    "duplicate": "the request is delivered twice",
    "timeout": "the call times out (after `delay`)",
    "response_lost": "the effect happened, the response is lost",
    "stream_cut": "the model stream breaks off",
    "answerer_failure": "the approval answerer fails",
    "sandbox_unavailable": "no sandbox backend: the command fails closed",
    "tool_failure": "the tool body raises",
    "source_append": "an older runtime, still running, appends a turn to the historical source being migrated (needs `seed_v0` of a balanced, untorn log without notes)",
}


def _type(tp: Any) -> str:
    if tp is Any:
        return "JSON"
    if tp == Match:
        return "object: detail key → value"
    names = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
    if tp in names:
        return names[tp]
    args = typing.get_args(tp)
    if typing.get_origin(tp) is tuple:
        return f"list of {_type(args[0])}" if len(args) == 2 and args[1] is Ellipsis else "list"
    if args:
        return " or ".join(_type(a) for a in args)
    if typing.get_origin(tp) is dict:
        return "object"
    return str(getattr(tp, "__name__", tp))


def _allowed(field: Any) -> str:
    parts = []
    for validator in validators_of(field):
        c = _constraints(validator)
        c = c.get("items", c)
        if "enum" in c:
            parts.append(" \\| ".join(f"`{v}`" for v in c["enum"]) if len(c["enum"]) <= 12 else f"{len(c['enum'])} names (below)")
        if "minimum" in c:
            lo, hi = c["minimum"], c["maximum"]
            parts.append(f"{lo} … {hi}" if isinstance(lo, int) else f"{lo:g} … {hi:g}")
        if "maxItems" in c:
            parts.append(f"at most {c['maxItems']} items")
    return "; ".join(parts)


def fields_table(cls: type) -> list[str]:
    attrs.resolve_types(cls)
    rows = ["| key | type | default | allowed | meaning |", "|---|---|---|---|---|"]
    for field in attrs.fields(cls):
        default = field.default
        if default is attrs.NOTHING:
            shown = "**required**"
        else:
            if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                default = default.factory() if not default.takes_self else None
            shown = f"`{json.dumps(to_json(default, field.type), ensure_ascii=False)}`"
        meaning = field.metadata.get("doc", "")
        rows.append(f"| `{field.name}` | {_type(field.type)} | {shown} | {_allowed(field)} | {meaning} |")
    return rows


def reference() -> str:
    out = [
        "# Scenario language reference",
        "",
        "Generated by `dsh-sim reference` from the registries the loader enforces (do not edit by hand).",
        "Check a file with `dsh-sim validate FILE`; the JSON Schema is `dsh-sim schema` (`docs/scenario.schema.json`).",
        "",
        "## The file",
        "",
        "| key | meaning |",
        "|---|---|",
        '| `format`, `version` | always `"dsh-sim-scenario"`, `1` |',
        "| `name`, `description` | free text (the name defaults to the file name) |",
        "| `machine` | `durability` (an agent over the world; default) or `storage` (the persistence layer alone) |",
        "| `seed` | non-negative integer: the scheduler and every seeded choice |",
        "| `config` | the deployment (below); `{}` is the default deployment |",
        "| `fault_plan` | fault rules armed from the start (below) |",
        '| `steps` | the run: a list of `{"op": ..., "args": {...}}` |',
        '| `expect` | `{"outcome": "pass"}` or `{"outcome": "violation", "invariant": NAME}`; `require_fired` (default true) fails replay when a rule never fired |',
        "| `trace_digest` | sha256 of the run's trace, or null (`dsh-sim replay --update-digest` records it) |",
        "| `mutants` | durability bugs switched on for the run (self-tests of the harness) |",
        "| `origin` | free-form: how the scenario was found |",
        "",
        "## Steps",
        "",
    ]
    for name, spec in OPS.items():
        machines = "" if len(spec.machines) > 1 else " (durability machine only)"
        out += [f"### `{name}`{machines}", "", spec.doc[0].upper() + spec.doc[1:] + ".", ""]
        if attrs.fields(spec.args):
            out += fields_table(spec.args) + [""]
        else:
            out += ["No args: `{}`.", ""]
    out += ["### Prompt responses and tool calls", "", "A response (`ModelResponse`):", ""] + fields_table(ModelResponse)
    out += ["", "A tool call (`ToolCall`):", ""] + fields_table(ToolCall) + [""]
    out += ["## Tools", "", "| tool | kind | arguments (example) |", "|---|---|---|"]
    for tool, kind in TOOL_KINDS.items():
        out.append(f"| `{tool}` | {kind} | `{json.dumps(TOOL_EXAMPLES.get(tool, {}))}` |")
    out += ["", "## Fault rules", "", 'In `fault_plan` and in `arm` steps (`{"rule": {...}}`).', ""] + fields_table(FaultRule)
    out += [
        "",
        "A rule fires on the `hit`-th announcement of its point that matches `match` (every key equal), in process "
        "`lifetime` (1 = the first boot) if given, `times` times in a row. `match` may only use the detail keys the "
        "point carries (below).",
        "",
        "### Actions",
        "",
        "| action | where | does |",
        "|---|---|---|",
    ]
    for action, text in ACTION_DOCS.items():
        where = "every point" if action in UNIVERSAL_ACTIONS else ", ".join(f"`{p.name}`" for p in POINTS.values() if action in p.faults)
        out.append(f"| `{action}` | {where} | {text} |")
    out += ["", "### Crashes (`crash` of a rule, args of `crash_now`)", ""] + fields_table(CrashSpec)
    out += ["", "| power state | what survives |", "|---|---|"] + [f"| `{k}` | {v} |" for k, v in POWER_STATE_DOCS.items()]
    out += ["", "## Named points", "", "| point | layer | announced | `match` keys | faults besides crash, delay, cancel, corrupt |"]
    out += ["|---|---|---|---|---|"]
    for layer in LAYERS:
        for point in POINTS.values():
            if point.layer == layer:
                keys = ", ".join(f"`{k}`" for k in point.details)
                faults = ", ".join(f"`{f}`" for f in point.faults)
                out.append(f"| `{point.name}` | {layer} | {point.doc} | {keys} | {faults} |")
    out += ["", "On the storage machine only `fs.*`, `session.flush` and `persist.*` points are announced.", ""]
    out += ["## Config", ""] + fields_table(SimConfig)
    out += ["", "## Expectation (`expect`)", ""] + fields_table(Expectation)
    out += ["", "## Invariants", "", "| invariant | must hold |", "|---|---|"] + [f"| `{k}` | {v} |" for k, v in INVARIANTS.items()]
    out += ["", "## Mutants", "", "| mutant | the bug |", "|---|---|"] + [f"| `{k}` | {v} |" for k, v in sorted(CATALOGUE.items())]
    return "\n".join(out) + "\n"
