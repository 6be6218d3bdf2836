"""The ``dsh-sim`` command line.

Every subcommand lives in :mod:`dsh_sim.cli.commands`, a thin layer over :mod:`dsh_sim.api`:
it parses the flags, calls the api, prints the result and picks the exit status.
Bad input — a flag out of range, an unreadable or invalid file, an output path that cannot
be written — gets one line on stderr naming it, and exit status 2, before anything runs; a
failed check exits 1.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import NoReturn

from dsh_sim import __version__
from dsh_sim.cli.commands.common import EXIT_USAGE, CliError
from dsh_sim.engine.vocabulary import BOUNDARIES, BOUNDARY_ALIASES, MACHINES
from dsh_sim.errors import InputError

PARTS = ("replay", "explore", "fuzz", "mutants", "dsh")  # the parts of a campaign (dsh_sim.campaign.plan.PARTS) and the DSH phase

MAX_BUDGET = 7 * 86_400.0  # seconds
MAX_COUNT = 10_000_000


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {one_line(message)} (see {self.prog} --help)\n")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or not 0 <= value <= MAX_BUDGET:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds in [0, {MAX_BUDGET:g}], got {text!r}")
    return value


def _count(lo: int, hi: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be in [{lo}, {hi}], got {value}")
        return value

    return parse


def _lazy(module: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        import importlib

        command: Callable[[argparse.Namespace], int] = importlib.import_module(f"dsh_sim.cli.commands.{module}").main
        return command(args)

    return run


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="dsh-sim", description="Deterministic crash-testing harness for the DSH agent-runtime durability route.")
    parser.add_argument("--version", action="version", version=f"dsh-sim {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    seed = _count(0, 2**63 - 1)

    p = sub.add_parser("run", help="the main job: replay + explore the corpus, fuzz, kill the mutants, write the report")
    p.add_argument("--budget", type=_seconds, default=None, help="fuzzing seconds per worker (default 60), shared by the fuzz shards")
    p.add_argument(
        "--workers",
        type=_count(1, 64),
        default=None,
        help="embedded workers: 1 (default) runs in this process, N > 1 on a local Dask cluster of N processes",
    )
    p.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT", help="run the campaign on this existing Dask cluster instead")
    p.add_argument(
        "--cluster-patience",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="on a Dask cluster: how long a run waits with no worker, or no scheduler, before it ends incomplete (default 20)",
    )
    p.add_argument(
        "--scenarios",
        nargs="+",
        default=None,
        metavar="PATH",
        help="scenario files/directories (default: the committed corpus, scenarios/starter and scenarios/regressions)",
    )
    p.add_argument("--out", default="reports", help="report directory; each run writes under OUT/runs/ID (default reports/)")
    p.add_argument(
        "--from",
        dest="inputs",
        nargs="*",
        default=[],
        metavar="RUN",
        help="also merge these runs (ids under OUT/runs) or result files/directories",
    )
    p.add_argument(
        "--resume", default=None, metavar="RUN", help="finish an interrupted run (its id, or latest): only its unfinished tasks run"
    )
    p.add_argument("--seed", type=seed, default=None, help="campaign seed; each shard's seed is split from it (default: random, printed)")
    p.add_argument(
        "--examples", type=_count(1, MAX_COUNT), default=None, help="fuzz each shard for this many examples (reproducible counts)"
    )
    p.add_argument(
        "--steps", type=_count(1, MAX_COUNT), default=None, help="rules per fuzz example at most (default: the fuzz profile's, 50)"
    )
    p.add_argument("--fuzz-shards", type=_count(1, 256), default=None, help="fuzz shards, 3 durability to 1 storage (default 4)")
    p.add_argument("--bound", type=_count(1, MAX_COUNT), default=None, help="explore: sample above this many states per point")
    p.add_argument("--skip", action="append", choices=PARTS, default=[], help="leave out a part of the campaign (repeatable)")
    p.add_argument(
        "--rechecks",
        type=_count(0, MAX_COUNT),
        default=None,
        help="scenarios re-run in two fresh processes to check determinism (default 2)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout (progress as plain lines on stderr)")
    p.set_defaults(func=_lazy("run_cmd"))

    p = sub.add_parser("fuzz", help="fuzz a state machine; save, shrink and print what it finds")
    p.add_argument("--machine", choices=MACHINES, default="durability")
    p.add_argument("--budget", type=_seconds, default=60.0, help="seconds (default 60)")
    p.add_argument("--examples", type=_count(1, MAX_COUNT), default=None, help="stop after this many examples")
    p.add_argument("--steps", type=_count(1, MAX_COUNT), default=None, help="rules per example at most (default: the fuzz profile's, 50)")
    p.add_argument("--seed", type=seed, default=None, help="search seed (default: random, printed)")
    p.add_argument("--compression", choices=("zstd", "none"), default="zstd")
    p.add_argument("--no-checkpoint-policy", action="store_true", help="fuzz a runtime without the checkpoint policy mounted")
    p.add_argument("--mutant", action="append", default=[], help="enable a durability mutant (see dsh-sim mutants --list)")
    p.add_argument(
        "--runtime",
        choices=("dsh-sim", "dsh-route"),
        default="dsh-sim",
        help="dsh-route: draw scenarios the published DSH route can express, run each on it and on dsh-sim's runtime, shrink a failure",
    )
    p.add_argument(
        "--route-policy", default=None, metavar="FILE", help="--runtime dsh-route: a Cordis plugin (.mjs) replacing DSH's checkpoint policy"
    )
    p.add_argument(
        "--route-tools", default=None, metavar="FILE", help="--runtime dsh-route: a Cordis plugin (.mjs) replacing the world tools"
    )
    p.add_argument(
        "--route-plugin", action="append", default=[], metavar="FILE", help="--runtime dsh-route: one more Cordis plugin (.mjs) in the app"
    )
    p.add_argument("--found-dir", default="scenarios/found", help="where found scenarios are saved")
    p.add_argument("--results", default=None, help="write a results document here")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--against",
        choices=("dsh",),
        default=None,
        help="dsh: also read every recovered crash image with the published DSH (Node; dsh-sim dsh setup) and report any unexplained difference",
    )
    p.set_defaults(func=_lazy("fuzz_cmd"))

    p = sub.add_parser("replay", help="replay scenario files without Hypothesis and check outcome and digest")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--update-digest", action="store_true", help="record the current trace digest in passing scenarios")
    p.add_argument("--trace-out", default=None, help="write the trace records (JSON lines) here")
    p.add_argument("--check-determinism", action="store_true", help="replay in two fresh processes (different PYTHONHASHSEED) and compare")
    p.add_argument(
        "--against",
        choices=("dsh",),
        default=None,
        help="dsh: also read every recovered crash image with the published DSH (Node; dsh-sim dsh setup) and report any unexplained difference",
    )
    p.add_argument(
        "--runtime",
        choices=("dsh-sim", "dsh-route"),
        default="dsh-sim",
        help="dsh-route: run the scenarios on the published DSH route (agent loop, checkpoint policy, tools, JSONL store; Node, on SimFS) "
        "and compare each with dsh-sim's runtime",
    )
    p.add_argument("--no-differential", action="store_true", help="--runtime dsh-route: do not run dsh-sim's runtime beside it")
    p.add_argument(
        "--route-policy", default=None, metavar="FILE", help="--runtime dsh-route: a Cordis plugin (.mjs) replacing DSH's checkpoint policy"
    )
    p.add_argument(
        "--route-tools", default=None, metavar="FILE", help="--runtime dsh-route: a Cordis plugin (.mjs) replacing the world tools"
    )
    p.add_argument(
        "--route-plugin", action="append", default=[], metavar="FILE", help="--runtime dsh-route: one more Cordis plugin (.mjs) in the app"
    )
    p.set_defaults(func=_lazy("replay_cmd"))

    p = sub.add_parser("explore", help="check every crash state of a scenario (systematic exploration)")
    p.add_argument("files", nargs="+", metavar="SCENARIO")
    p.add_argument("--crash", choices=("kill", "power", "both"), default="both", help="which deaths to explore (default both)")
    p.add_argument(
        "--model",
        choices=("prefix", "reorder"),
        default="prefix",
        help="power-loss model: unsynced writes land as a prefix (torn at codec-aware points) or as any subset (default prefix)",
    )
    p.add_argument("--bound", type=_count(1, MAX_COUNT), default=None, help="sample above this many states per point (default: exhaustive)")
    p.add_argument("--found-dir", default="scenarios/found", help="where scenarios replaying violations are saved")
    p.add_argument("--results", default=None, help="write a results document here (one per scenario: suffix added)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--runtime",
        choices=("dsh-sim", "dsh", "dsh-route"),
        default="dsh-sim",
        help="dsh: crash the published DSH writer (Node, on SimFS) at every filesystem operation of the scenario's session shape; "
        "dsh-route: crash the published DSH route (agent loop, checkpoint policy, tools, store) at every point of the scenario",
    )
    p.add_argument(
        "--against",
        choices=("dsh",),
        default=None,
        help="dsh: also read every recovered crash image with the published DSH (Node; dsh-sim dsh setup) and report any unexplained difference",
    )
    p.add_argument(
        "--no-differential", action="store_true", help="--runtime dsh-route: do not replay each kill on dsh-sim's runtime to compare"
    )
    p.set_defaults(func=_lazy("explore_cmd"))

    p = sub.add_parser(
        "sweep", help="put an I/O error and a cancellation at every position of every durability sequence of a scenario (failure paths)"
    )
    p.add_argument("files", nargs="+", metavar="SCENARIO")
    p.add_argument("--found-dir", default="scenarios/found", help="where scenarios replaying violations are saved")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_lazy("sweep_cmd"))

    p = sub.add_parser("validate", help="check scenario files against the scenario language; every problem with its JSON path")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_lazy("authoring_cmd"), action="validate")

    p = sub.add_parser("schema", help="print (or write) the JSON Schema of scenario files")
    p.add_argument("--out", default=None, help="write it here instead of stdout")
    p.set_defaults(func=_lazy("authoring_cmd"), action="schema")

    p = sub.add_parser("reference", help="print (or write) the scenario language reference (Markdown)")
    p.add_argument("--out", default=None, help="write it here instead of stdout")
    p.set_defaults(func=_lazy("authoring_cmd"), action="reference")

    p = sub.add_parser("new", help="write a scenario template: a crash at a boundary of one tool call")
    p.add_argument("--tool", default="pay", help="the tool whose call is crashed (default pay)")
    p.add_argument(
        "--boundary",
        choices=(*BOUNDARIES, *BOUNDARY_ALIASES),
        default="2→3",
        help="where among the four moments (default 2→3; 2-3 is the same)",
    )
    p.add_argument("--crash", choices=("kill", "power"), default="kill", help="kill (default) or power loss (unsynced writes dropped)")
    p.add_argument("--name", default=None, help="scenario name (default from the choices)")
    p.add_argument("--out", default=None, help="file to write (default: print to stdout); never overwrites")
    p.set_defaults(func=_lazy("authoring_cmd"), action="new")

    p = sub.add_parser("report", help="write coverage.json/.md/.html from result documents")
    p.add_argument("--out", default="reports")
    p.add_argument(
        "--from",
        dest="inputs",
        nargs="*",
        default=None,
        metavar="RUN",
        help="runs (ids under OUT/runs, or latest) or result files/directories, merged (default: the latest run)",
    )
    p.set_defaults(func=_lazy("report_cmd"))

    p = sub.add_parser("mutants", help="harness self-test: run fuzz, explore and the corpus against known durability bugs")
    p.add_argument("--budget", type=_seconds, default=20.0, help="seconds of fuzzing per mutant (default 20)")
    p.add_argument("--only", action="append", default=[], help="run only these mutants")
    p.add_argument("--list", action="store_true", help="list the catalogue and exit")
    p.add_argument("--results", default=None, help="write a results document (kill matrix) here")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--tool", action="store_true", help="mutation testing with mutmut over the durability modules (slow; resumable)")
    p.add_argument(
        "--modules", default="core", help="with --tool: core | priority | route | rest | all | comma-separated module paths (default core)"
    )
    p.add_argument("--max-children", type=_count(1, 64), default=2, help="with --tool: mutants tested in parallel (default 2)")
    p.add_argument("--workdir", default="reports/mutation/work", help="with --tool: mutmut's working copy (resumable state)")
    p.add_argument(
        "--sample", type=_count(0, MAX_COUNT), default=0, help="with --tool: test a stratified random sample of this many mutants"
    )
    p.add_argument("--seed", type=seed, default=1, help="with --tool --sample: the sample's seed (default 1)")
    p.add_argument(
        "--retest-survivors", action="store_true", help="with --tool: re-test only the survivors (after adding scenarios or checks)"
    )
    p.add_argument("--report-only", action="store_true", help="with --tool: write the survivor report of the run so far, test nothing")
    p.add_argument("--triage", default="benchmarks/mutation-triage.json", help="with --tool: the committed survivor triage")
    p.add_argument(
        "--snapshot", default=None, help="with --tool: also write the Markdown report here (e.g. benchmarks/mutation-survivors.md)"
    )
    p.set_defaults(func=_lazy("mutants_cmd"))

    p = sub.add_parser("inspect", help="read a session log; print events, torn tail, and what a resume would append")
    p.add_argument("path", metavar="PATH", help="a session directory or a log file")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_lazy("inspect_log"))

    p = sub.add_parser("repair", help="commit the closers a resume would append (real filesystem)")
    p.add_argument("path", metavar="PATH")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_lazy("repair"))

    p = sub.add_parser("migrate", help="publish the current (v3) generation of a historical session log")
    p.add_argument("path", metavar="PATH")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_lazy("migrate"))

    p = sub.add_parser("demo", help="run one scripted agent session on the real filesystem")
    p.add_argument("--root", default="dsh-demo", help="persistence root (default ./dsh-demo)")
    p.add_argument("--workspace", default=None, help="tool workspace (default ROOT/workspace)")
    p.add_argument("--session", default="demo", help="session id (default demo)")
    p.add_argument("--script", default=None, help="model script JSON (default: the packaged example)")
    p.add_argument("--prompt", default="Write a note and read it back.")
    p.add_argument("--compression", choices=("zstd", "none"), default="zstd")
    p.set_defaults(func=_lazy("demo"))

    p = sub.add_parser("dsh", help="differential mode: the published DSH packages side by side with dsh-sim")
    dsh = p.add_subparsers(dest="dsh_command", required=True, metavar="DSH_COMMAND")
    q = dsh.add_parser("setup", help="install the pinned DSH npm packages into the cache (once)")
    q.add_argument("--force", action="store_true", help="reinstall even if the cache is complete")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q = dsh.add_parser("diff", help="read logs with the real DSH and with dsh-sim; print every difference")
    q.add_argument("paths", nargs="+", metavar="PATH", help="log files, session directories, or directories holding them")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.add_argument("--findings", default="reports/dsh-findings.md", help="where the findings report goes (default reports/dsh-findings.md)")
    q.add_argument("--workers", type=_count(1, 64), default=2, help="Node bridges reading at once (default 2)")
    q = dsh.add_parser("generate", help="write a corpus of logs written and damaged by the real DSH")
    q.add_argument("out", metavar="DIR")
    q.add_argument("--seed", type=_count(0, 2**63 - 1), default=1, help="seed of the damage choices (default 1)")
    q.add_argument("--held-out", action="store_true", help="the held-out variant (other sizes, cuts and seeds)")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    for q in dsh.choices.values():
        q.add_argument("--home", default=None, help="install directory (default $DSH_SIM_DSH_HOME or ~/.cache/dsh-sim/dsh-<version>)")
    p.set_defaults(func=_lazy("dsh_cmd"))

    p = sub.add_parser(
        "readers", help="reader differential: every runtime read entry point against the spec's reader, on cut and damaged logs"
    )
    p.add_argument("--seed", type=_count(0, 2**63 - 1), default=1, help="seed of the sampled damage and windows (default 1)")
    p.add_argument("--sample", action="store_true", help="the seeded sample of the mutation test command, not every tear")
    p.add_argument(
        "--scenarios", nargs="+", default=None, metavar="FILE", help="scenarios whose logs join the cases (default: two of the corpus)"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_lazy("readers_cmd"))

    p = sub.add_parser("points", help="list the named points (where faults and crashes can be injected)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--runtime", choices=("dsh-sim", "dsh-route"), default="dsh-sim", help="dsh-route: the DSH route host's points")
    p.set_defaults(func=_lazy("points_cmd"))
    return parser


def _tolerant_streams() -> None:
    """Text a log or a scenario holds (a lone surrogate, say) is printed escaped, never a
    UnicodeEncodeError halfway through the output."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


_CONTROL = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F)} | {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}


def one_line(message: object) -> str:
    """A refusal as exactly one line: a file name or value holding a line break (or a
    terminal escape) is shown escaped, never as a second line of its own."""
    return str(message).translate(_CONTROL)


def main(argv: list[str] | None = None) -> int:
    _tolerant_streams()
    args = build_parser().parse_args(argv)
    args.command_line = list(sys.argv[1:] if argv is None else argv)  # what was typed: a campaign records it
    try:
        return int(args.func(args) or 0)
    except CliError as err:
        print(f"dsh-sim: {one_line(err)}", file=sys.stderr)
        return err.code
    except InputError as err:
        print(f"dsh-sim: {one_line(err)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("dsh-sim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_USAGE
    except OSError as err:  # an output that failed after all (disk full, a mount gone read-only)
        where = f"{err.filename}: " if err.filename else ""
        print(f"dsh-sim: {one_line(where)}{one_line(err.strerror or err)}", file=sys.stderr)
        return EXIT_USAGE
