"""``dsh_sim.api`` is the one door: its public names are a deliberate list, each documented;
every command of the command line is a thin wrapper over one of its functions; and a type
checker outside the repository sees its types (``py.typed`` shipped).

Adding or removing a public name means editing :data:`PUBLIC` below — on purpose, as trio's
``test_exports`` makes it.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import os
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dsh_sim import api
from dsh_sim.cli.main import build_parser
from tests.support.paths import ROOT

PUBLIC = {
    # results and values
    "DemoRun",
    "DeterminismCheck",
    "DshCorpus",
    "DshDiff",
    "DshExploration",
    "DshExploreResult",
    "DshOracle",
    "DshSetup",
    "Explorations",
    "ExploreResult",
    "Explored",
    "FuzzRun",
    "Inspection",
    "KillMatrix",
    "KillResult",
    "LogDiff",
    "LogScan",
    "Migration",
    "MutationToolRun",
    "PointTable",
    "ReaderRun",
    "Repair",
    "ReplayResult",
    "ResultsDocument",
    "RouteDeterminism",
    "RouteExploration",
    "RouteExplorations",
    "RouteFinding",
    "RouteFuzzRun",
    "RouteReplay",
    "RouteReplays",
    "Report",
    "RunOutcome",
    "Sweep",
    "SweepResult",
    "Validation",
    # errors and constants
    "DSH_AGREES",
    "InputError",
    "MutationToolFailed",
    # operations
    "against_dsh",
    "check_determinism",
    "demo",
    "dsh_diff",
    "dsh_explore",
    "dsh_generate",
    "dsh_setup",
    "expand",
    "explore",
    "explore_files",
    "fuzz",
    "inspect",
    "load",
    "migrate",
    "mutant_catalogue",
    "mutants",
    "mutation_tool",
    "new_scenario",
    "points",
    "read_results",
    "readers",
    "reference",
    "repair",
    "replay",
    "route_determinism",
    "route_explore",
    "route_findings",
    "route_fuzz",
    "route_points",
    "route_replay",
    "report",
    "report_runs",
    "run",
    "scan_log",
    "schema",
    "sweep",
    "validate",
}

# every command (and dsh subcommand) of the parser -> the api function its module calls
COMMANDS = {
    "run": "run",
    "fuzz": "fuzz",
    "replay": "replay",
    "explore": "explore_files",
    "sweep": "sweep",
    "validate": "validate",
    "schema": "schema",
    "reference": "reference",
    "new": "new_scenario",
    "report": "report_runs",
    "mutants": "mutants",
    "inspect": "scan_log",
    "repair": "repair",
    "migrate": "migrate",
    "demo": "demo",
    "dsh setup": "dsh_setup",
    "dsh diff": "dsh_diff",
    "dsh generate": "dsh_generate",
    "readers": "readers",
    "points": "points",
}

# flags that take a command down another path -> the api function that path calls
FLAG_PATHS = {
    ("replay", "--check-determinism"): "check_determinism",
    ("replay", "--against"): "against_dsh",
    ("replay", "--runtime"): "route_replay",
    ("points", "--runtime"): "route_points",
    ("fuzz", "--runtime"): "route_fuzz",
    ("explore", "--runtime"): "dsh_explore",
    ("fuzz", "--against"): "against_dsh",
    ("mutants", "--list"): "mutant_catalogue",
    ("mutants", "--tool"): "mutation_tool",
}

# what a command module may import from the project: the api, the command line's own
# plumbing, the one error and the output-file checks for the flags it names
ALLOWED_IMPORTS = ("dsh_sim.api", "dsh_sim.cli", "dsh_sim.errors", "dsh_sim.outputs")


# -- (a) the public names ---------------------------------------------------------------------


def test_the_public_names_are_exactly_the_listed_ones() -> None:
    assert set(api.__all__) == PUBLIC
    assert len(api.__all__) == len(PUBLIC), "a name is listed twice in api.__all__"
    assert api.__all__ == sorted(api.__all__), "keep api.__all__ sorted"


def test_every_public_name_exists_and_is_documented() -> None:
    undocumented = []
    for name in api.__all__:
        obj = getattr(api, name)  # AttributeError: listed but missing
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and not (obj.__doc__ or "").strip():
            undocumented.append(name)
    assert not undocumented, f"public names without a docstring: {undocumented}"


def test_every_public_function_is_fully_annotated() -> None:
    missing = []
    for name in api.__all__:
        obj = getattr(api, name)
        if not inspect.isfunction(obj):
            continue
        wrapped = inspect.unwrap(obj)  # a context manager's generator function
        signature = inspect.signature(wrapped)
        missing += [f"{name}({p})" for p, param in signature.parameters.items() if param.annotation is inspect.Parameter.empty]
        if signature.return_annotation is inspect.Signature.empty:
            missing.append(f"{name} -> ?")
    assert not missing, f"parameters or returns without a type: {missing}"


def test_nothing_else_in_the_api_module_looks_public() -> None:
    """A name imported into ``dsh_sim.api`` without being listed would look public to
    ``from dsh_sim.api import *`` readers and to the docs: keep helpers private."""
    extra = sorted(
        name
        for name, obj in vars(api).items()
        if not name.startswith("_") and name not in PUBLIC and not inspect.ismodule(obj) and name != "annotations"
    )
    assert extra == []


# -- (b) every command is a thin wrapper over one api function --------------------------------


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def commands() -> dict[str, argparse.ArgumentParser]:
    """Every command and dsh subcommand of the parser, by its name as typed."""
    out = {}
    for name, sub in subcommands(build_parser()).items():
        inner = subcommands(sub)
        out.update({f"{name} {inner_name}": inner_sub for inner_name, inner_sub in inner.items()} if inner else {name: sub})
    return out


def module_of(command: str) -> str:
    """The command module ``dsh-sim COMMAND`` loads (``_lazy(module)`` keeps its name; a dsh
    subcommand's is its parent's)."""
    func: Callable[..., Any] = subcommands(build_parser())[command.split(maxsplit=1)[0]].get_default("func")
    cells = dict(zip(func.__code__.co_freevars, (cell.cell_contents for cell in func.__closure__ or ())))
    return f"dsh_sim.cli.commands.{cells['module']}"


def source_of(module: str) -> str:
    return Path(ROOT, *module.split(".")).with_suffix(".py").read_text(encoding="utf-8")


def test_the_mapping_names_every_command_of_the_parser() -> None:
    assert set(COMMANDS) == set(commands())
    flags = {(name, flag) for name, sub in commands().items() for action in sub._actions for flag in action.option_strings}
    assert set(FLAG_PATHS) <= flags


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_command_calls_its_api_function(command: str) -> None:
    function = COMMANDS[command]
    assert function in api.__all__ and callable(getattr(api, function))
    module = module_of(command)
    assert f"api.{function}(" in source_of(module), f"dsh-sim {command}: {module} does not call api.{function}"


def sources_behind(module: str) -> str:
    """A command module's source and that of the command modules it hands a path to (``--runtime
    dsh-route`` goes to ``route_cmd``): still only command modules, each calling the api."""
    text = source_of(module)
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.module == "dsh_sim.cli.commands":
            text += "".join(source_of(f"dsh_sim.cli.commands.{alias.name}") for alias in node.names)
    return text


@pytest.mark.parametrize(("command", "flag"), sorted(FLAG_PATHS))
def test_each_flag_path_calls_its_api_function(command: str, flag: str) -> None:
    function = FLAG_PATHS[(command, flag)]
    assert function in api.__all__
    assert f"api.{function}(" in sources_behind(module_of(command))


def project_imports(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module] if node.module != "dsh_sim" else [f"dsh_sim.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        out += [(name, node.lineno) for name in names if name.split(".")[0] in ("dsh_sim", "runtime")]
    return out


def test_command_modules_reach_the_library_only_through_the_api() -> None:
    """Computation lives behind the api: a command module imports the api and the command
    line's plumbing, never a driver, the campaign or the runtime."""
    commands_dir = Path(ROOT, "dsh_sim", "cli", "commands")
    reaching = [
        f"{path.name}:{line} imports {name}"
        for path in sorted(commands_dir.glob("*.py"))
        for name, line in project_imports(path)
        if not any(name == allowed or name.startswith(allowed + ".") for allowed in ALLOWED_IMPORTS)
    ]
    assert not reaching, "\n".join(reaching)


def test_the_import_check_can_fail(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from dsh_sim import api\nfrom dsh_sim.drivers.explore import explore\nimport runtime.agent\n")
    assert project_imports(probe) == [("dsh_sim.api", 1), ("dsh_sim.drivers.explore", 2), ("runtime.agent", 3)]


# -- (c) py.typed is shipped ------------------------------------------------------------------


def test_py_typed_is_in_the_package_and_its_data() -> None:
    assert Path(ROOT, "dsh_sim", "py.typed").is_file()
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        package_data = tomllib.load(handle)["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data["dsh_sim"]
    assert "py.typed" in package_data.get("runtime", []), "dsh_sim's types name the runtime's: it must be typed too"


# -- (d) a type checker outside the repository sees the api's types ---------------------------

CLIENT = """\
from dsh_sim import api

replayed: api.ReplayResult = api.replay("x.json")
swept: api.Sweep = api.sweep("x.json")
outcome: api.RunOutcome = api.run(budget=1.0, skip=["mutants"])
code: int = outcome.code
reveal_type(api.run)
reveal_type(api.replay("x.json").ok)
wrong: int = api.inspect("session")
"""


@pytest.mark.slow
def test_mypy_sees_the_api_types_as_an_installed_package(tmp_path: Path) -> None:
    """``dsh_sim`` and ``runtime`` on a site path outside the repository, as installed (PEP
    561: only a package with ``py.typed`` is type-checked from there)."""
    site = tmp_path / "site"
    site.mkdir()
    for package in ("dsh_sim", "runtime"):
        (site / package).symlink_to(Path(ROOT, package), target_is_directory=True)
    work = tmp_path / "work"
    work.mkdir()
    (work / "client.py").write_text(CLIENT)
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", os.devnull, "--python-executable", sys.executable, "client.py"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    out = done.stdout + done.stderr
    assert "missing library stubs or py.typed marker" not in out, out
    assert "Cannot find implementation or library stub" not in out, out
    assert 'Revealed type is "def (*, budget:' in out, out
    assert 'Revealed type is "bool"' in out, out
    errors = [line for line in out.splitlines() if ": error:" in line]
    # the one deliberate mistake is found: the types are real, not Any
    assert len(errors) == 1 and "client.py:9:" in errors[0] and "Inspection" in errors[0], out
