"""Scenario files: parse once into a typed :class:`~dsh_sim.scenario.model.Scenario`, save back.

:func:`load` reads through :mod:`dsh_sim.inputs` (regular files only, bounded size and
nesting), :func:`parse` structures the whole document with the codec and then runs the
whole-scenario checks; every problem is collected with its JSON path, and the
:class:`~dsh_sim.scenario.model.ScenarioError` names the file and the first of them.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from dsh_sim.errors import InputError, did_you_mean
from dsh_sim.inputs import read_json
from dsh_sim.outputs import write_new, write_replacing
from dsh_sim.scenario import checks
from dsh_sim.scenario.codec import converter, problems, to_json
from dsh_sim.scenario.model import FORMAT, VERSION, Scenario, ScenarioError

MAX_SCENARIO_BYTES = 16 * 1024 * 1024
KEYS = (
    "format",
    "version",
    "name",
    "description",
    "machine",
    "seed",
    "config",
    "fault_plan",
    "steps",
    "expect",
    "trace_digest",
    "mutants",
    "origin",
)


def _refuse(source: str, found: list[tuple[str, str]]) -> ScenarioError:
    lines = tuple(f"{source}: {path}: {message}" for path, message in found)
    more = f" (+{len(lines) - 1} more; dsh-sim validate lists them all)" if len(lines) > 1 else ""
    return ScenarioError(lines[0] + more, lines)


def parse(obj: Any, source: str = "<scenario>") -> Scenario:
    """The scenario ``obj`` describes, or a :class:`ScenarioError` with every problem."""
    if not isinstance(obj, dict):
        raise _refuse(source, [("$", "not a JSON object")])
    if obj.get("format") != FORMAT:
        raise _refuse(source, [("$.format", f'"format" must be "{FORMAT}"')])
    version = obj.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise _refuse(source, [("$.version", '"version" must be a positive integer')])
    if version > VERSION:
        raise _refuse(
            source,
            [("$.version", f"scenario format version {version} is newer than this dsh-sim reads (up to {VERSION}); upgrade dsh-sim")],
        )
    found = [
        ("$", f"unknown key {key!r}{did_you_mean(key, KEYS)} (a scenario has: {', '.join(KEYS)})")
        for key in sorted(k for k in obj if k not in KEYS)
    ]
    body = {k: v for k, v in obj.items() if k in KEYS and k not in ("format", "version")}
    if body.get("name") in (None, ""):
        body["name"] = os.path.splitext(os.path.basename(source))[0]
    if body.get("seed") is None:
        found.append(("$.seed", "required: a non-negative integer"))
    if "steps" not in body:
        found.append(("$.steps", 'required: a list of {"op": ..., "args": {...}} objects'))
    if found:
        raise _refuse(source, found)
    try:
        scenario: Scenario = converter.structure(body, Scenario)
    except Exception as err:
        raise _refuse(source, list(problems(err)) or [("$", str(err))]) from None
    cross = checks.check(scenario)
    if cross:
        raise _refuse(source, cross)
    return scenario


def load(path: str) -> Scenario:
    return parse(read_json(path, "scenario file", MAX_SCENARIO_BYTES), path)


def to_document(scenario: Scenario) -> dict[str, Any]:
    """The file's JSON object (key order as committed files have it)."""
    out: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "name": scenario.name,
        "description": scenario.description,
        "machine": scenario.machine,
        "seed": scenario.seed,
        "config": to_json(scenario.config),
        "fault_plan": to_json(scenario.fault_plan),
        "steps": to_json(scenario.steps),
        "expect": to_json(scenario.expect),
        "trace_digest": scenario.trace_digest,
    }
    if scenario.mutants:
        out["mutants"] = list(scenario.mutants)
    if scenario.origin:
        out["origin"] = scenario.origin
    return out


def dumps(scenario: Scenario) -> str:
    return json.dumps(to_document(scenario), indent=2, ensure_ascii=False) + "\n"


def save(scenario: Scenario, path: str, *, overwrite: bool = False) -> str:
    """Write a scenario file; never overwrites an existing file unless asked, never writes
    through a symbolic link (:mod:`dsh_sim.outputs`)."""
    try:
        if overwrite:
            write_replacing(path, dumps(scenario))
        else:
            write_new(path, dumps(scenario))
    except OSError as err:
        raise InputError(f"{path}: cannot write the scenario: {err.strerror}") from None
    return path


def discover(root: str) -> list[str]:
    """Every ``*.json`` scenario under ``root``, sorted (unreadable directories are refused)."""
    found = []

    def refuse(err: OSError) -> None:
        raise InputError(f"{err.filename}: cannot list: {err.strerror}")

    for dirpath, _, files in os.walk(root, onerror=refuse):
        for name in files:
            if name.endswith(".json"):
                found.append(os.path.join(dirpath, name))
    return sorted(found)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "._" else "-" for c in text).strip("-") or "x"


def found_name(scenario: Scenario) -> str:
    """A found scenario's file name: who found it, in what, which invariant, where, how, and a
    content hash — unique, and readable in a directory listing."""
    origin = scenario.origin
    invariant = scenario.expect.invariant or "violation"
    digest = hashlib.sha256(dumps(scenario).encode("utf-8", "backslashreplace")).hexdigest()[:8]
    if origin.get("found_by") == "explore":
        parts = ["explore", str(origin.get("scenario", scenario.name)), invariant, str(origin.get("point")), str(origin.get("crash"))]
    else:
        parts = [str(origin.get("found_by", "found")), scenario.machine, invariant]
    return "--".join(_slug(p) for p in parts) + f"--{digest}.json"


def save_found(scenario: Scenario, found_dir: str) -> str:
    """Save a found scenario under its :func:`found_name`; the same finding saved twice is one file."""
    path = os.path.join(found_dir, found_name(scenario))
    if os.path.exists(path):
        return path
    try:
        write_new(path, dumps(scenario))
    except FileExistsError:  # a concurrent run saved the same finding first: same name, same bytes
        pass
    except OSError as err:
        raise InputError(f"{path}: cannot write the scenario: {err.strerror}") from None
    return path


CORPUS_DIRS = ("starter", "regressions")  # the committed corpus under scenarios/


def corpus(root: str = "scenarios") -> tuple[list[str], list[tuple[str, int]]]:
    """The committed corpus (``root``/starter and ``root``/regressions), and what else lies
    under ``root`` that is *not* swept in — (directory, scenario files), e.g. untracked
    findings in ``scenarios/found`` — so a caller can say what it skipped."""
    files: list[str] = []
    skipped: list[tuple[str, int]] = []
    if not os.path.isdir(root):
        return files, skipped
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if not os.path.isdir(path):
            continue
        if name in CORPUS_DIRS:
            files.extend(discover(path))
        else:
            skipped.append((path, len(discover(path))))
    return files, skipped
