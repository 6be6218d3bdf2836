"""``dsh-sim mutants``: the kill matrix of the durability mutant catalogue; ``--tool``: mutmut."""

from __future__ import annotations

import importlib.util
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from dsh_sim import api
from dsh_sim.cli.commands.common import EXIT_OK, EXIT_VIOLATION, CliError, emit_json
from dsh_sim.drivers.selftest import summary
from dsh_sim.evidence.results import meta, write
from dsh_sim.mutants.catalogue import CATALOGUE
from dsh_sim.outputs import check_output_file, write_replacing


def _line(result: api.KillResult) -> str:
    fastest = result.fastest
    if fastest is None:
        return f"SURVIVED  {result.mutant:<42} (no method caught it)"
    method, m = fastest
    by = ", ".join(f"{name} {r.seconds:.1f}s" for name, r in result.methods.items() if r.killed)
    size = result.methods.get("fuzz")
    steps = f", shrunk to {size.scenario_steps} steps" if size and size.killed and size.scenario_steps else ""
    return f"killed    {result.mutant:<42} {m.invariant:<26} fastest: {method} {m.seconds:.1f}s  (by {by}{steps})"


def _modules(spec: str) -> tuple[str, ...]:
    from dsh_sim.mutation import tool

    groups = {
        "core": tool.CORE,
        "priority": tool.PRIORITY,
        "rest": tool.REST,
        "route": tool.ROUTE,
        "all": tuple(dict.fromkeys(tool.PRIORITY + tool.REST + tool.ROUTE)),
    }
    if spec in groups:
        return groups[spec]
    return tuple(m.strip() for m in spec.split(",") if m.strip())


def tool_main(args: Any) -> int:
    """Run (or continue) mutmut over the modules, then write the survivor report."""
    from dsh_sim.mutation import tool, tool_report

    root = Path.cwd()
    if not (root / "runtime").is_dir() or not (root / "tests_mutation").is_dir():
        raise CliError("dsh-sim mutants --tool runs from a clone of the repository (runtime/ and tests_mutation/ here)")
    if importlib.util.find_spec("mutmut") is None:
        raise CliError("dsh-sim mutants --tool needs mutmut: pip install -e '.[mutation]'")
    modules = _modules(args.modules)
    out = args.results or "reports/mutation/survivors.json"
    for path, flag in ((out, "--results"), (str(Path(out).with_suffix(".md")), "--results"), (args.snapshot, "--snapshot")):
        if path:
            check_output_file(path, flag)  # before mutmut runs for hours, not after
    triage = tool.load_triage(root / args.triage)
    workdir = root / args.workdir
    started = time.perf_counter()
    seconds = None
    if not args.report_only:
        try:
            tool.prepare(root, workdir, modules)
        except FileNotFoundError as err:
            raise CliError(str(err)) from None
        reference = tool.ensure_dsh_reference(workdir)
        if reference is None:
            print("the pinned DSH is not installed (dsh-sim dsh setup): the DSH reference items will skip", flush=True)
        if tool.reset_if_harness_changed(root, workdir):
            print("the test command changed since the last run: every verdict was reset", flush=True)
        names: list[str] = []
        if args.retest_survivors:
            names = tool.survivors(workdir)
            print(f"re-testing {len(names)} survivor(s)", flush=True)
        elif args.sample:
            if not tool.all_mutants(workdir):
                # mutmut writes the mutants (and collects its stats) before it looks at names;
                # a name that matches nothing makes it stop right there
                tool.run(workdir, args.max_children, ["__generate_only__"])
            decided = tool.all_mutants(workdir)
            names = [n for n in tool.choose_sample(workdir, args.sample, args.seed) if decided.get(n) is None]
            print(f"sample of {args.sample} mutants (seed {args.seed}): {len(names)} still to test", flush=True)
        else:
            (workdir / "sample.json").unlink(missing_ok=True)
        print(f"mutmut over {len(modules)} module(s) in {workdir} (progress: {workdir / 'mutmut.log'})", flush=True)
        code = tool.run(workdir, args.max_children, names) if names or not (args.sample or args.retest_survivors) else 0
        seconds = round(time.perf_counter() - started, 1)
        if code != 0:
            raise CliError(f"mutmut exited with status {code}; see {workdir / 'mutmut.log'}", EXIT_VIOLATION)
    mutants = tool.collect(workdir, modules)
    sample = tool.sample_names(workdir)
    extra = {
        "modules": list(modules),
        "mutmut": metadata.version("mutmut"),
        "seconds": seconds,
        "sample": len(sample) if sample is not None else None,
        "generated": len(tool.all_mutants(workdir)),
    }
    doc = tool_report.document(mutants, triage, meta("mutants-tool", **extra))
    write(doc, out)
    text = tool_report.markdown(doc)
    md = str(Path(out).with_suffix(".md"))
    write_replacing(md, text)
    if args.snapshot:
        write_replacing(args.snapshot, text)
    if args.json:
        emit_json(doc)
        return EXIT_OK
    totals = doc["totals"]
    rate = doc["kill_rate"]
    print(
        f"{totals.get('total', 0)} mutants: {totals.get('killed', 0)} killed, {totals.get('timeout', 0)} timeout, "
        f"{totals.get('survived', 0)} survived, {totals.get('no tests', 0)} not reached; "
        f"kill rate {'n/a' if rate is None else f'{rate:.1%}'} of non-equivalent"
    )
    print(
        f"survivors: {totals.get('equivalent', 0)} equivalent, {totals.get('not-relevant', 0)} not relevant, {totals.get('gap', 0)} gaps, {totals.get('untriaged', 0)} untriaged"
    )
    print(f"report: {out} and {md}")
    return EXIT_OK


TOOL_ONLY = ("report_only", "retest_survivors", "sample", "snapshot")


def main(args: Any) -> int:
    if getattr(args, "tool", False):
        if args.list:
            raise CliError("--list and --tool do not go together (--list prints the catalogue of the durability mutants)")
        if args.only:
            raise CliError("--only names catalogue mutants; with --tool use --modules")
        return tool_main(args)
    used = [name for name in TOOL_ONLY if getattr(args, name, None)]
    if used:
        raise CliError(f"--{used[0].replace('_', '-')} needs --tool (mutation testing with mutmut)")
    if args.list:
        for name, description in sorted(CATALOGUE.items()):
            print(f"{name:<42} {description}")
        return EXIT_OK
    if args.results:
        check_output_file(args.results, "--results")
    results = api.mutants(args.only, budget=args.budget, progress=None if args.json else lambda r: print(_line(r), flush=True))
    stats = summary(results)
    doc = {"meta": meta("mutants", budget=args.budget, **stats), "kill_matrix": [r.row() for r in results]}
    if args.results:
        write(doc, args.results)
    if args.json:
        emit_json(doc)
    else:
        print(f"{stats['killed']}/{stats['mutants']} mutants killed; median time-to-kill {stats['median_time_to_kill']}s")
        for survivor in stats["survivors"]:
            print(f"  survivor: {survivor}")
    return EXIT_OK if not stats["survivors"] else EXIT_VIOLATION
