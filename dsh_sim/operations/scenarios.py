"""Scenario files: find, load, validate, describe (schema, reference, named points), write.

Here because every other operation starts from a scenario file, and the authoring commands
(``validate``, ``schema``, ``reference``, ``new``, ``points``) only read or write them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import attrs

from dsh_sim.engine.points import LAYERS, POINTS, UNIVERSAL_ACTIONS, PointSpec
from dsh_sim.errors import InputError
from dsh_sim.inputs import read_regular
from dsh_sim.scenario import files
from dsh_sim.scenario.files import MAX_SCENARIO_BYTES, discover
from dsh_sim.scenario.model import Scenario, ScenarioError

__all__ = [
    "PointTable",
    "Target",
    "Validation",
    "expand",
    "load",
    "new_scenario",
    "points",
    "reference",
    "scenario_of",
    "schema",
    "validate",
]

Target = str | Scenario


def expand(paths: Sequence[str]) -> list[str]:
    """The scenario files named by ``paths`` (a directory means every ``*.json`` under it)."""
    out: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            out.extend(discover(path))
        elif os.path.exists(path):
            out.append(path)
        else:
            raise InputError(f"{path}: no such file or directory")
    if not out:
        raise InputError(f"{', '.join(paths)}: no scenario files (*.json) here")
    return out


def load(path: str) -> Scenario:
    """The scenario in ``path``, or :class:`~dsh_sim.scenario.model.ScenarioError` (an
    :class:`~dsh_sim.errors.InputError`) naming the file, the JSON path and the problem."""
    return files.load(path)


def scenario_of(target: Target) -> tuple[Scenario, str | None]:
    """The scenario ``target`` is or names, and the file it came from (``None``: given loaded)."""
    return (target, None) if isinstance(target, Scenario) else (load(target), target)


@attrs.frozen
class Validation:
    """One scenario file checked: every problem with its JSON path, and notes worth knowing."""

    path: str
    scenario: Scenario | None
    problems: tuple[str, ...]  # "FILE: $.json.path: problem" lines
    notes: tuple[str, ...] = ()  # valid, but worth knowing (no recorded digest...)

    @property
    def ok(self) -> bool:
        """No problem: the file is a valid scenario."""
        return not self.problems


def validate(path: str) -> Validation:
    """Load ``path`` and report every problem (not only the first) with its JSON path; a file
    that cannot be read at all (missing, a FIFO, too large) is bad input, raised."""
    read_regular(path, MAX_SCENARIO_BYTES, "scenario file")
    try:
        scenario = load(path)
    except ScenarioError as err:
        return Validation(path, None, err.problems)
    except InputError as err:
        return Validation(path, None, (str(err),))
    notes = []
    if scenario.trace_digest is None:
        notes.append(f"{path}: no trace digest recorded: replay cannot check determinism (dsh-sim replay --update-digest records it)")
    return Validation(path, scenario, (), tuple(notes))


def schema() -> dict[str, Any]:
    """The JSON Schema of scenario files (generated from the typed model)."""
    from dsh_sim.scenario.schema import scenario_schema

    return scenario_schema()


def reference() -> str:
    """The scenario language reference page (Markdown, generated from the registries)."""
    from dsh_sim.authoring.reference import reference as render

    return render()


def new_scenario(tool: str = "pay", boundary: str = "2→3", crash: str = "kill", name: str | None = None) -> str:
    """A scenario file (text) with a crash at ``boundary`` of a ``tool`` call."""
    from dsh_sim.authoring.template import template
    from dsh_sim.scenario.files import dumps

    return dumps(template(tool, boundary, crash, name))


@attrs.frozen
class PointTable:
    """The named points — every place a scenario's fault plan may inject a fault or a crash —
    with the layers they are grouped by and the actions every point allows."""

    points: tuple[PointSpec, ...]  # name, layer, doc, faults (beyond the universal actions), match keys
    layers: tuple[str, ...]
    universal_actions: tuple[str, ...]

    def in_layer(self, layer: str) -> tuple[PointSpec, ...]:
        """The points of one layer, in registry order."""
        return tuple(p for p in self.points if p.layer == layer)

    def rows(self) -> list[dict[str, Any]]:
        """One JSON object per point (what ``dsh-sim points --json`` prints)."""
        return [attrs.asdict(p) for p in self.points]


def points() -> PointTable:
    """The named point registry (:mod:`dsh_sim.engine.points`) as typed rows."""
    return PointTable(tuple(POINTS.values()), LAYERS, UNIVERSAL_ACTIONS)
