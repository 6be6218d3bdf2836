"""Every import points down the layer order, and no modules import each other in a circle.

The order is written once, here, top to bottom (DESIGN.md, "Layout"); a module belongs to the
first layer whose prefix names it.  Every import counts — at module level, inside a function
(a lazy import is still a dependency) and under ``TYPE_CHECKING`` (a type names what a module
is about) — except one of a module's own layer's siblings, which the circle check judges.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator

import pytest

from tests.support.paths import ROOT

LAYERS: tuple[tuple[str, ...], ...] = (
    ("dsh_sim.__main__",),
    ("dsh_sim.cli",),
    ("dsh_sim.api", "dsh_sim.pytest_plugin"),
    ("dsh_sim.campaign",),
    ("dsh_sim.operations",),
    ("dsh_sim.report", "dsh_sim.authoring"),
    ("dsh_sim.mutation",),
    ("dsh_sim.drivers", "dsh_sim.dsh"),
    ("dsh_sim.evidence",),
    ("dsh_sim.scenario",),
    ("dsh_sim.engine", "dsh_sim.mutants"),
    ("dsh_sim.adapters", "dsh_sim.sessionlogs"),
    ("dsh_sim.errors", "dsh_sim.inputs", "dsh_sim.outputs", "dsh_sim.children", "dsh_sim"),
    ("runtime",),
)


def _modules() -> dict[str, str]:
    out = {}
    for package in ("runtime", "dsh_sim"):
        for dirpath, _, filenames in os.walk(os.path.join(ROOT, package)):
            for name in filenames:
                if name.endswith(".py"):
                    path = os.path.join(dirpath, name)
                    dotted = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                    out[dotted.removesuffix(".__init__")] = path
    return out


MODULES = _modules()


def layer_of(module: str) -> int:
    for index, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return index
    raise AssertionError(f"{module} is in no layer: add it to LAYERS")


def imports_of(module: str) -> Iterator[tuple[str, int]]:
    """The project modules ``module`` imports, with the line of each import."""
    path = MODULES[module]
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for name in names:
            target = _project_module(name)
            if target is not None and target != module:
                yield target, node.lineno


def _project_module(name: str) -> str | None:
    """The longest project module that ``name`` is or lies in (``a.b.c`` may name ``c`` in ``a.b``)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


GRAPH = {module: sorted({target for target, _ in imports_of(module)}) for module in MODULES}


def test_every_module_is_in_a_layer() -> None:
    for module in MODULES:
        layer_of(module)


def test_every_import_points_down() -> None:
    upward = []
    for module in sorted(MODULES):
        for target, line in imports_of(module):
            if layer_of(target) < layer_of(module):
                upward.append(f"{module}:{line} imports {target} ({'/'.join(LAYERS[layer_of(target)])} is above)")
    assert not upward, "\n".join(upward)


def test_the_runtime_never_imports_the_simulator() -> None:
    assert not [(m, t) for m, targets in GRAPH.items() if m.startswith("runtime") for t in targets if t.startswith("dsh_sim")]


def circles(graph: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_modules_import_each_other_in_a_circle() -> None:
    # a package's __init__ that hands its modules' names on is not a circle with them
    graph = {m: [t for t in targets if not (MODULES[t].endswith("__init__.py") and m.startswith(t + "."))] for m, targets in GRAPH.items()}
    assert circles(graph) == []


@pytest.mark.parametrize(
    ("graph", "expected"),
    [({"a": ["b"], "b": ["a"], "c": ["a"]}, [["a", "b"]]), ({"a": ["b"], "b": ["c"], "c": []}, [])],
)
def test_the_circle_finder_finds_circles(graph: dict[str, list[str]], expected: list[list[str]]) -> None:
    assert circles(graph) == expected


def test_an_upward_import_is_found(tmp_path: object) -> None:
    """The check can fail: the engine importing the evidence layer is an upward edge."""
    assert layer_of("dsh_sim.evidence.checker") < layer_of("dsh_sim.engine.machine")
