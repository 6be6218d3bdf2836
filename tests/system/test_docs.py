"""The documentation: the site builds strictly, the README stays short and its links resolve,
and the docs cover every command and every invariant the code has.

The site is built by MkDocs from ``docs/`` (``mkdocs.yml``); ``--strict`` turns every warning —
a broken link or anchor, a page missing from the nav, a docstring mkdocstrings cannot read —
into a failure, so this is the strict build CI runs (CI runs only the README's test command).
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import importlib.util
import io
import os
import re
import shlex
import subprocess
import sys
from typing import Any

import pytest

from dsh_sim.cli.main import build_parser
from dsh_sim.evidence.invariants.registry import INVARIANTS
from tests.support.paths import ROOT

DOCS = os.path.join(ROOT, "docs")
README = os.path.join(ROOT, "README.md")
MAX_README_LINES = 250


def read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands of ``parser`` by name (none when it has no subparsers)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_the_site_builds_strictly_with_the_api_page(tmp_path: Any) -> None:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None:
        pytest.fail("mkdocs and mkdocstrings come with the test extra: pip install -e '.[test,dsh]'")
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    api = site / "api" / "index.html"
    assert api.is_file(), sorted(p.name for p in site.iterdir())
    html = api.read_text(encoding="utf-8")
    for name in ("replay", "explore", "fuzz", "validate", "report"):
        assert f'id="dsh_sim.api.{name}"' in html, f"the API page does not document dsh_sim.api.{name}"
    assert ":class:" not in html  # Sphinx roles are rendered (docs/_griffe/sphinx_roles.py), not printed


def test_readme_is_short() -> None:
    lines = read(README).splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines (at most {MAX_README_LINES}): move detail to docs/"


def test_readme_relative_links_resolve() -> None:
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", read(README)):
        if target.startswith(("http://", "https://", "mailto:", "#")):
            continue
        if not os.path.exists(os.path.join(ROOT, target.split("#", 1)[0])):
            broken.append(target)
    assert not broken, f"README.md links to missing files: {broken}"


def options(parser: argparse.ArgumentParser) -> list[str]:
    return [o for action in parser._actions for o in action.option_strings if o.startswith("--") and o != "--help"]


def test_every_subcommand_and_flag_is_on_the_commands_page() -> None:
    """Each subcommand (and each of ``dsh-sim dsh``'s) is on docs/commands.md, in a section
    whose heading names it and which mentions every one of its flags."""
    page = read(os.path.join(DOCS, "commands.md"))
    sections = re.split(r"^### ", page, flags=re.MULTILINE)[1:]
    missing = []
    for name, sub in subcommands(build_parser()).items():
        inner = subcommands(sub)
        missing += [f"dsh-sim {name} {n}" for n in inner if f"dsh-sim {name} {n}" not in page]
        own = [text for text in sections if re.search(rf"\bdsh-sim {name}\b", text.splitlines()[0])]
        if not own:
            missing.append(f"### dsh-sim {name}")
            continue
        flags = options(sub) + [flag for parser in inner.values() for flag in options(parser)]
        missing += [f"dsh-sim {name} {flag}" for flag in flags if flag not in "\n".join(own)]
    assert not missing, f"docs/commands.md does not mention: {missing}"


def test_every_invariant_is_on_the_invariants_page() -> None:
    page = read(os.path.join(DOCS, "invariants.md"))
    missing = [name for name in INVARIANTS if f"`{name}`" not in page]
    assert not missing, f"docs/invariants.md does not mention: {missing}"


def shell_blocks(text: str) -> list[str]:
    return re.findall(r"^```(?:sh|bash|console)\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def test_every_command_line_in_the_docs_parses() -> None:
    """Each ``dsh-sim ...`` line of a shell block in the README and the docs is accepted by the
    parser (flags and choices as they are now); nothing runs."""
    pages = [README, *sorted(glob.glob(os.path.join(DOCS, "**", "*.md"), recursive=True))]
    checked, refused = 0, []
    for page in pages:
        for block in shell_blocks(read(page)):
            for line in block.splitlines():
                argv = shlex.split(line, comments=True)
                if not argv or argv[0] != "dsh-sim":
                    continue
                checked += 1
                try:
                    with contextlib.redirect_stdout(io.StringIO()):  # --help prints, then exits 0
                        build_parser().parse_args(argv[1:])
                except SystemExit as stop:
                    if stop.code not in (0, None):
                        refused.append(f"{os.path.relpath(page, ROOT)}: {line.strip()}")
    assert checked >= 20, checked
    assert not refused, "command lines the parser refuses:\n" + "\n".join(refused)
