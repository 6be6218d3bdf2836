"""``dsh-sim mutants --tool``: mutmut over the durability modules, with dsh-sim as the test command.

Why mutmut (3.x) and not cosmic-ray — measured on ``runtime/session/repair.py`` with the same
test command (``tests_mutation``, :mod:`dsh_sim.mutation.harness`), on the shared 2-core machine:

* mutmut: 231 mutants in 5 min 31 s wall with 2 children, 0.76 CPU-s per mutant (stats
  collection and the clean run included).  It forks each mutant from a process that has already
  imported trio, Hypothesis and the simulator and collected the tests, and runs only the test
  items that reached the mutated function (recorded once, by its trampolines).
* cosmic-ray: 16 of its 112 mutants (a random sample) in 3 min 14 s, 4.8 CPU-s per mutant,
  one at a time (the ``local`` distributor; parallel runs need ``http`` workers, each with its own
  copy of the tree).  Every mutant starts a new interpreter and pytest session and runs the
  whole command, and it edits the file *in place*, so a killed run can leave a mutated file
  behind.

Both worked with the simulator (trio in worker threads, the editable install): mutmut puts its
``mutants/`` copy first on ``sys.path``, cosmic-ray needs the copy's root on ``PYTHONPATH``.  The
cost of mutmut's speed: it mutates only inside functions (module constants and class bodies
such as attrs defaults are not mutated), and its trampolines wrap every function of a mutated
module (a catalogue mutant, which swaps code objects, cannot be combined with it — the harness
never enables one).

The job works in ``reports/mutation/work`` (gitignored): a copy of the tree (mtimes kept, so
mutmut's cache stays valid) with its own ``pyproject.toml`` naming the modules to mutate.  mutmut
records each verdict as it goes, so a stopped run continues where it stopped; a changed
function's mutants are re-tested, the others keep their verdicts.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from dsh_sim.errors import InputError
from dsh_sim.inputs import read_json

# Durability-critical modules, in the order of the issue: the priority set first.
PRIORITY = (
    "runtime/persistence/durable.py",
    "runtime/persistence/handles.py",
    "runtime/persistence/write_behind.py",
    "runtime/persistence/log_format.py",
    "runtime/persistence/log_reader.py",
    "runtime/persistence/log_records.py",
    "runtime/persistence/zstd_frames.py",
    "runtime/session/repair.py",
    "runtime/agent/checkpoint.py",
    "runtime/tools/scheduler.py",
    "runtime/tools/registry.py",
    "runtime/agent/resume.py",
)
# The write path, recovery and the barrier: what the run measured in docs/mutation-testing.md covers.
CORE = (
    "runtime/persistence/durable.py",
    "runtime/persistence/handles.py",
    "runtime/persistence/write_behind.py",
    "runtime/persistence/zstd_frames.py",
    "runtime/session/repair.py",
    "runtime/agent/checkpoint.py",
    "runtime/agent/resume.py",
)
REST = (
    "runtime/persistence/backend.py",
    "runtime/persistence/store.py",
    "runtime/persistence/lease.py",
    "runtime/persistence/locate.py",
    "runtime/persistence/publication.py",
    "runtime/persistence/migration.py",
    "runtime/persistence/v0_format.py",
    "runtime/persistence/v0_records.py",
    "runtime/persistence/header.py",
    "runtime/persistence/layout.py",
    "runtime/persistence/errors.py",
    "runtime/persistence/context.py",
    "runtime/session/events.py",
    "runtime/session/session.py",
    "runtime/session/lossless.py",
    "runtime/agent/approval.py",
    "runtime/tools/results.py",
)
# The route: what the runtime decides and when (the pipeline, approval, cancellation, the
# scheduler's slots, the write-behind window, the lease, publication).  The sandbox and the
# file/shell tools are left to their own escape-probe tests: no scenario reaches them.
ROUTE = (
    "runtime/agent/loop.py",
    "runtime/agent/hooks.py",
    "runtime/agent/approval.py",
    "runtime/agent/checkpoint.py",
    "runtime/agent/resume.py",
    "runtime/agent/runtime.py",
    "runtime/agent/signal.py",
    "runtime/tools/scheduler.py",
    "runtime/tools/registry.py",
    "runtime/tools/results.py",
    "runtime/persistence/write_behind.py",
    "runtime/persistence/lease.py",
    "runtime/persistence/publication.py",
)
COPIED = ("runtime", "dsh_sim", "scenarios", "tests_mutation")
DEFAULT_WORKDIR = "reports/mutation/work"

# mutmut's exit codes, as its ``stats.status_by_exit_code`` reads them (kept here so that reading
# a finished run's results needs no import of mutmut).
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped", 36: "timeout"}
STATUS.update(dict.fromkeys((-24, 24, 152, 255), "timeout"))
STATUS.update(dict.fromkeys((-11, -9), "segfault"))


def status_of(exit_code: int | None) -> str:
    if exit_code is None:
        return "not checked"
    return STATUS.get(exit_code, "suspicious")


def _sync_tree(src: Path, dst: Path) -> None:
    """Copy ``src`` over ``dst`` keeping mtimes; files that did not change keep theirs (mutmut
    regenerates a module's mutants only when its source is newer than the mutated copy)."""
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = [d for d in dirnames if d not in {"__pycache__", "found"}]
        rel = Path(dirpath).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            source, target = Path(dirpath) / name, dst / rel / name
            stat = source.stat()
            if target.exists() and target.stat().st_size == stat.st_size and target.stat().st_mtime == stat.st_mtime:
                continue
            shutil.copy2(source, target)


def config_text(modules: Sequence[str]) -> str:
    mods = ", ".join(json.dumps(m) for m in modules)
    return (
        "# written by dsh-sim mutants --tool (dsh_sim/mutation/tool.py); edits are overwritten\n"
        "[tool.mutmut]\n"
        'source_paths = ["runtime"]\n'
        f"only_mutate = [{mods}]\n"
        'pytest_add_cli_args_test_selection = ["tests_mutation"]\n'
        'pytest_add_cli_args = ["-p", "no:cacheprovider"]\n'
        f"also_copy = {json.dumps(list(COPIED[1:]))}\n"
        "use_setproctitle = false\n"
    )


def prepare(root: Path, workdir: Path, modules: Sequence[str]) -> None:
    """Lay out ``workdir``: the tree's copy and a ``pyproject.toml`` that names the modules."""
    unknown = [m for m in modules if not (root / m).is_file()]
    if unknown:
        raise FileNotFoundError(f"no such module(s): {', '.join(unknown)}")
    workdir.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        _sync_tree(root / name, workdir / name)
    # mutmut copies also_copy trees into mutants/ once; refresh the harness and scenarios there
    for name in COPIED[1:]:
        if (workdir / "mutants" / name).exists():
            _sync_tree(root / name, workdir / "mutants" / name)
    text = config_text(modules)
    path = workdir / "pyproject.toml"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
        # mutmut maps functions to test items only for the modules mutated when it collected its
        # stats; with other modules it would call every new function's mutants "no tests".  The
        # verdicts (in the .meta files) stay.
        (workdir / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)


DSH_REFERENCE = "dsh-reference.jsonl.zst"


def ensure_dsh_reference(workdir: Path) -> Path | None:
    """The real DSH's readings of the differential corpus (:mod:`dsh_sim.dsh.reference`), recorded
    once per work directory when the pinned DSH is installed (``dsh-sim dsh setup``): the test
    command then judges the runtime's v0 reader and migration against them, with no Node."""
    from dsh_sim.dsh.install import installation
    from dsh_sim.dsh.reference import record

    path = workdir / DSH_REFERENCE
    if path.exists():
        return path
    install = installation()
    if install is None:
        return None
    record(install, str(path))
    return path


def harness_fingerprint(root: Path) -> str:
    """A hash of the test command's code (``tests_mutation/*.py`` and the harness module).

    The corpus and its progress reference are data, not part of it: a scenario added to kill a
    survivor only adds checks, so every kill stands; ``--retest-survivors`` re-tests the rest."""
    digest = hashlib.sha256()
    files = sorted((root / "tests_mutation").glob("*.py")) + [root / "dsh_sim" / "mutation" / "harness.py"]
    for path in files:
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _metas(workdir: Path) -> list[Path]:
    return sorted((workdir / "mutants" / "runtime").rglob("*.py.meta")) if (workdir / "mutants").exists() else []


def reset_if_harness_changed(root: Path, workdir: Path) -> bool:
    """mutmut only warns when the test command changes; a verdict of another test command is
    not one of this one, so every verdict is reset (the mutants themselves are kept)."""
    mark = workdir / "harness.sha"
    now = harness_fingerprint(root)
    before = mark.read_text().strip() if mark.exists() else None
    if before == now:
        return False
    for meta in _metas(workdir):
        data = json.loads(meta.read_text())
        data["exit_code_by_key"] = dict.fromkeys(data["exit_code_by_key"])
        data["durations_by_key"] = {}
        meta.write_text(json.dumps(data, indent=4))
    (workdir / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    mark.write_text(now + "\n")
    return before is not None


def reach_fingerprint(root: Path) -> str:
    """A hash of everything that decides which test item reaches which runtime function: the
    simulator's code and the scenarios (a new reader case or scenario reaches new functions)."""
    digest = hashlib.sha256()
    for base in ("dsh_sim", "scenarios"):
        for path in sorted((root / base).rglob("*")):
            if path.is_file() and path.suffix in (".py", ".json") and "found" not in path.parts:
                digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def refresh_reach_if_changed(root: Path, workdir: Path) -> bool:
    """mutmut runs a mutant only against the test items its stats saw reach the function; after
    the simulator or the corpus changed, that map is stale (a survivor would not meet the new
    case that reaches it), so the stats are collected again.  Verdicts are kept."""
    mark = workdir / "reach.sha"
    now = reach_fingerprint(root)
    before = mark.read_text().strip() if mark.exists() else None
    if before == now:
        return False
    (workdir / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    mark.write_text(now + "\n")
    return before is not None


def all_mutants(workdir: Path) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for meta in _metas(workdir):
        out.update(json.loads(meta.read_text())["exit_code_by_key"])
    return out


def choose_sample(workdir: Path, size: int, seed: int) -> list[str]:
    """A uniform random sample of the generated mutants, stratified by module (each module gets
    its share, at least one), kept in ``sample.json`` so a stopped run continues the same sample."""
    path = workdir / "sample.json"
    if path.exists():
        saved = json.loads(path.read_text())
        if saved["size"] == size and saved["seed"] == seed:
            return list(saved["names"])
    names = sorted(all_mutants(workdir))
    by_module: dict[str, list[str]] = {}
    for name in names:
        by_module.setdefault(name.rpartition(".")[0], []).append(name)
    rng = random.Random(seed)
    chosen: list[str] = []
    for _, group in sorted(by_module.items()):
        share = max(1, round(size * len(group) / max(1, len(names))))
        chosen += rng.sample(group, min(share, len(group)))
    path.write_text(json.dumps({"size": size, "seed": seed, "names": sorted(chosen)}, indent=1))
    return sorted(chosen)


def survivors(workdir: Path) -> list[str]:
    """Mutants (of the sample, if sampled) that no check killed: survived, or reached by no test."""
    sample = sample_names(workdir)
    return sorted(
        name
        for name, code in all_mutants(workdir).items()
        if status_of(code) in ("survived", "no tests") and (sample is None or name in sample)
    )


def sample_names(workdir: Path) -> set[str] | None:
    path = workdir / "sample.json"
    return set(json.loads(path.read_text())["names"]) if path.exists() else None


def run(workdir: Path, max_children: int, names: Sequence[str] = ()) -> int:
    """Run (or continue) ``mutmut run`` in ``workdir``; its progress goes to ``mutmut.log``.
    With ``names``, only those mutants (mutmut re-tests a named mutant even if it has a verdict,
    so pass only the undecided ones)."""
    mutmut = Path(sys.executable).with_name("mutmut")
    command = [str(mutmut) if mutmut.exists() else "mutmut", "run", "--max-children", str(max_children), *names]
    env = {**os.environ, "DSH_SIM_ROOT": str(workdir / "mutants"), "PYTHONDONTWRITEBYTECODE": "1"}
    if (workdir / DSH_REFERENCE).exists():
        env["DSH_SIM_DSH_REFERENCE"] = str(workdir / DSH_REFERENCE)
    with open(workdir / "mutmut.log", "ab") as log:
        return subprocess.call(command, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)


@attrs.frozen
class Mutant:
    name: str  # mutmut's key, e.g. runtime.session.repair.x_verdicts__mutmut_2
    module: str  # runtime/session/repair.py
    function: str
    status: str
    diff: str = ""
    line: int | None = None

    @property
    def short(self) -> str:
        return self.name.rpartition(".")[2]


@contextlib.contextmanager
def _cwd(path: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def _function_lines(source: str) -> dict[str, int]:
    """First line of the body's ``def`` of every function and method, keyed as mutmut mangles them."""
    out: dict[str, int] = {}
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[f"x_{node.name}"] = node.lineno
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out[f"xǁ{node.name}ǁ{item.name}"] = item.lineno
    return out


def _hunk_line(diff: str) -> int | None:
    for line in diff.splitlines():
        if line.startswith("@@"):
            return int(line.split()[1].lstrip("-").split(",")[0])
    return None


def collect(workdir: Path, modules: Sequence[str], *, diffs: bool = True) -> list[Mutant]:
    """Every mutant of ``modules`` (of the sample, if the run was sampled) with its verdict;
    survivors (and other non-kills) with their diff."""
    sample = sample_names(workdir)
    out = []
    for module in modules:
        meta = workdir / "mutants" / (module + ".meta")
        if not meta.exists():
            continue
        codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
        starts = _function_lines((workdir / module).read_text())
        for name, code in sorted(codes.items(), key=lambda kv: _natural(kv[0])):
            if sample is not None and name not in sample:
                continue
            status = status_of(code)
            mangled = name.rpartition(".")[2].rpartition("__mutmut_")[0]
            function = mangled.replace("ǁ", ".").removeprefix("x.").removeprefix("x_")
            diff, line = "", None
            if diffs and status not in ("killed", "timeout", "segfault", "not checked"):
                diff = _diff(workdir, name, module)
                offset = _hunk_line(diff)
                if offset is not None and mangled in starts:
                    line = starts[mangled] + offset - 1
            out.append(Mutant(name, module, function, status, diff, line))
    return out


def _natural(name: str) -> tuple[str, int]:
    head, _, number = name.rpartition("_")
    return head, int(number) if number.isdigit() else 0


def _diff(workdir: Path, name: str, module: str) -> str:
    from mutmut.mutation.diff_apply import get_diff_for_mutant  # type: ignore[import-not-found,unused-ignore]  # mutmut is an optional extra (no types)

    with _cwd(workdir):
        try:
            return str(get_diff_for_mutant(name, path=module))
        except (FileNotFoundError, ValueError) as err:
            return f"(no diff: {err})"


def load_triage(path: Path) -> dict[str, dict[str, Any]]:
    """The committed triage: mutant key → ``{"class": ..., "reason": ...}`` (missing file: empty)."""
    if not path.exists() and not path.is_symlink():
        return {}
    document = read_json(str(path), "triage file")  # regular files only, bounded: /dev/zero is refused, not read forever
    data = document.get("mutants") if isinstance(document, dict) else None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise InputError(f'{path}: not a triage file: expected {{"mutants": {{KEY: {{"class": ..., "reason": ...}}}}}}')
    return data
