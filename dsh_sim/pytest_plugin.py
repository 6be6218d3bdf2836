"""Replay a project's scenario folders as pytest tests: one item per scenario file.

Installed with dsh-sim (a ``pytest11`` entry point); it does nothing until a project names its
folders, in one line of configuration::

    # pyproject.toml
    [tool.pytest.ini_options]
    dsh_sim_scenarios = ["scenarios/regressions"]

(or ``--dsh-sim-scenarios DIR`` on the command line).  Each ``*.json`` under those folders is
then a test item ``<file>::<scenario name>``, replayed exactly as ``dsh-sim replay`` replays it
(:func:`dsh_sim.api.replay`): it passes when the scenario's expectation holds and its recorded
trace digest is unchanged, and a failure names the invariant and prints the problems — the
violated invariant with its evidence, a digest that moved with the first record where the trace
parted.  The folders are collected even where ``testpaths`` leaves them out, unless pytest was
given explicit paths.  A file that is not a scenario fails its item with the one-line reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

INI = "dsh_sim_scenarios"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dsh-sim", "dsh-sim scenario replay")
    group.addoption(
        "--dsh-sim-scenarios",
        action="append",
        default=[],
        metavar="DIR",
        help="replay the scenario files (*.json) under DIR as test items (repeatable)",
    )
    parser.addini(INI, type="paths", default=[], help="folders whose scenario files (*.json) are replayed as test items")


FOLDERS = pytest.StashKey[list[Path]]()


def pytest_configure(config: pytest.Config) -> None:
    named = [Path(p).resolve() for p in config.getoption("dsh_sim_scenarios")]  # (relative to the working directory)
    config.stash[FOLDERS] = named + [Path(p).resolve() for p in config.getini(INI)]  # (relative to the ini file)


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    """The folders join what pytest collects, unless paths were named on the command line."""
    config = session.config
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        return
    for folder in config.stash[FOLDERS]:
        if folder.is_dir() and not any(_inside(folder, Path(a).resolve()) for a in config.args):
            config.args.append(str(folder))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    folders = parent.config.stash[FOLDERS]
    if folders and file_path.suffix == ".json" and any(_inside(file_path.resolve(), f) for f in folders):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


class ScenarioFile(pytest.File):
    """One scenario file: one item, named for the scenario it holds."""

    def collect(self) -> Iterator[pytest.Item]:
        from dsh_sim.errors import InputError
        from dsh_sim.scenario.files import load

        try:
            scenario = load(str(self.path))
        except InputError as err:  # (its message names the file)
            yield BadScenario.from_parent(self, name=self.path.stem, reason=str(err))
            return
        yield ScenarioItem.from_parent(self, name=scenario.name)


class ScenarioFailed(Exception):
    """A replay whose judgement found problems: the invariant (if any) and every problem."""

    def __init__(self, invariant: str | None, problems: tuple[str, ...]) -> None:
        super().__init__(invariant, problems)
        self.invariant, self.problems = invariant, problems


class ScenarioItem(pytest.Item):
    """Replays the file as ``dsh-sim replay`` does; passes when its judgement has no problem."""

    def runtest(self) -> None:
        from dsh_sim import api

        result = api.replay(str(self.path))
        if not result.ok:
            violated = sorted({v.invariant for v in result.run.violations})
            raise ScenarioFailed(", ".join(violated) or None, result.problems)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ScenarioFailed):
            err = excinfo.value
            violated = err.invariant or ""
            word = "invariants" if "," in violated else "invariant"
            head = f"scenario {self.name} ({self.path}): " + (f"{word} {violated} violated" if violated else "judgement failed")
            return "\n".join([head, *(f"  {line}" for p in err.problems for line in p.splitlines())])
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"scenario {self.name}"


class BadScenario(pytest.Item):
    """A file under a scenario folder that is not a valid scenario: its one-line reason."""

    def __init__(self, *, reason: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.reason = reason

    def runtest(self) -> None:
        raise ScenarioFailed(None, (self.reason,))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        return f"not a scenario: {self.reason}"

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"not a scenario: {self.path.name}"
