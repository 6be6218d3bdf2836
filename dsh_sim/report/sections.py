"""HTML sections of the report that are plain tables (everything but matrices and charts).

Each function returns one ``<section>``; together with :mod:`dsh_sim.report.page` they
follow the order of coverage.md.  Rows that need attention carry a class (``unmet``,
``bad``, ``warn``) so both the eye and a test can find them.
"""

from __future__ import annotations

from collections.abc import Sequence

from dsh_sim.evidence.records import KillRow
from dsh_sim.evidence.view import CoverageView, Requirement
from dsh_sim.report import kills as kill_model
from dsh_sim.report import model, runs, svg
from dsh_sim.report.htmlkit import (
    attrs,
    breakable_ident,
    code,
    details,
    esc,
    ident,
    num,
    pill,
    section,
    table,
    td,
    tr,
)


def requirements(status: Sequence[Requirement]) -> str:
    # Unmet first (stable within each group): what is missing is what a maintainer needs.
    ordered = sorted(status, key=lambda s: s.met)
    rows = [
        tr(
            td(s.kind) + td(s.row) + td(s.col) + num(s.hits) + td(raw=pill("met", "good") if s.met else pill("UNMET", "bad")),
            cls="met" if s.met else "unmet",
        )
        for s in ordered
    ]
    met = sum(1 for s in status if s.met)
    why = f'{met}/{len(status)} met. Each "sometimes" cell must be hit at least once, or a whole class of crash became unreachable.'
    return section(
        "requirements", "Requirements", why, table(["kind", "row", "column", "hits", "status"], rows, id_="requirements", num_cols=(3,))
    )


def points(view: CoverageView) -> str:
    rows_data = model.point_rows(view)
    chart = svg.progress_chart([(p.name, p.explored, p.possible) for p in rows_data], "explored vs possible crash states per named point")
    rows = []
    for p in rows_data:
        below = p.explored < p.possible
        explored = num(f"{p.explored:,}/{p.possible:,}" if p.possible else "—", "sampled" if below else "")
        sampled = num(p.sampled, "sampled") if p.sampled else num("—")
        cells = td(raw=ident(p.name)) + td(p.layer) + explored + sampled + num(p.hits) + td(p.doc, cls="muted")
        rows.append(tr(cells, cls=None if (p.possible or p.hits) else "warn", data_point=p.name))
    header = ["point", "layer", "explored/possible", "sampled at", "hits (fuzz)", "what happens there"]
    body = f'<div class="charts">{chart}</div>' + table(header, rows, id_="points", num_cols=(2, 3, 4))
    why = (
        "Systematic exploration proves the states it enumerates (explored/possible); above the bound it samples them"
        ' ("sampled at" = recorded points where it did). Fuzzing samples beyond (hits). Amber rows were neither explored nor hit.'
    )
    return section("points", "Named points", why, body)


def torn(view: CoverageView) -> str:
    rows = [
        tr(td(raw=ident(c)) + num(n) + td("required" if req else "", cls="muted"), cls="unmet" if req and not n else None)
        for c, n, req in model.torn_rows(view)
    ]
    return section(
        "torn",
        "Torn-write classes",
        "Where a power cut tore the log, by codec structure (zstd frames and blocks, JSONL lines).",
        table(["class", "cases", ""], rows, id_="torn-classes", num_cols=(1,)),
    )


def invariants(view: CoverageView) -> str:
    rows = []
    for inv in model.invariant_rows(view):
        cls = "bad" if inv.violations else ("warn" if not inv.checks else None)
        if inv.not_run:
            counts = td(f"not run: {inv.not_run}", cls="muted", colspan=2)
        else:
            counts = num(inv.checks) + num(inv.violations)
        rows.append(tr(td(raw=ident(inv.name)) + counts + td(inv.description), cls=cls, data_invariant=inv.name))
    why = "How many times each invariant was evaluated; amber = never checked in these runs (it proved nothing), red = violated."
    return section(
        "invariants",
        "Invariants checked",
        why,
        table(["invariant", "checks", "violations", "what must hold"], rows, id_="invariants", num_cols=(1, 2)),
    )


def violations(view: CoverageView) -> str:
    found = view.violations
    if not found:
        body = '<p class="none">None.</p>'
    else:
        rows = [
            tr(
                td(raw=ident(v.invariant))
                + td(v.source or "—")
                + td(v.message)
                + td(raw=code(v.scenario) if v.scenario else '<span class="muted">not saved</span>'),
                cls="bad",
            )
            for v in found
        ]
        body = table(["invariant", "source", "message", "replayable scenario"], rows, id_="violations")
    return section(
        "violations",
        f"Violations ({len(found)})",
        "Each saved scenario is a replayable file that reproduces the failure deterministically.",
        body,
    )


def determinism(view: CoverageView) -> str:
    checks = view.determinism
    if not checks:
        body = '<p class="muted">No re-check recorded.</p>'
    else:
        words = model.determinism_words(view)
        rows = []
        for d in checks:
            same = bool(d.same)
            digests = [
                td(raw=f"<span{attrs(class_='mono', title=digest)}>{esc(str(digest)[:16])}</span>")
                for digest in (d.digest_a or "", d.digest_b or "")
            ]
            how = td(str(d.how if d.how is not None else ""))
            rows.append(
                tr(
                    td(raw=code(d.scenario)) + how + "".join(digests) + td(raw=pill("same", "good") if same else pill("DIVERGED", "bad")),
                    cls=None if same else "bad",
                )
            )
        bad = sum(1 for d in checks if not d.same)
        listing = table(["scenario", "how", "digest (run a)", "digest (run b)", "result"], rows, id_="determinism")
        body = f'<p id="determinism-summary">{esc(words)}.</p>' + details(
            f"every digest ({len(checks)} rows{f', {bad} diverged' if bad else ''})", listing, id_="determinism-details"
        )
    why = "The same scenario run twice must produce the same trace digest: each replay against the digest recorded beside it, and a few again in two fresh interpreters."
    return section("determinism", "Determinism re-checks", why, body)


def campaign(view: CoverageView) -> str:
    """The campaign runs behind the numbers: run id, seed, the command that ran each and the
    one that resumes it, and the time per phase (wall as the submitter saw it, CPU)."""
    camps = runs.campaigns(view)
    wall, cpu = runs.time_spent(view)
    if not camps:
        body = (
            f'<p class="muted">No campaign record in these results (documents of dsh-sim replay, explore or fuzz runs): '
            f"time spent {esc(model.fmt_seconds(wall))} is their own seconds added up. Seeds and commands: see Runs below.</p>"
        )
        return section("campaign", "Campaign", "Where these numbers came from.", body)
    rows = [
        tr(
            td(raw=code(c.run))
            + num(c.seed)
            + td(c.state)
            + td(c.executor)
            + num(model.fmt_seconds(c.wall_seconds))
            + num(model.fmt_seconds(c.cpu_seconds))
            + td(raw=code(c.command) + "<br>" + '<span class="muted">resume: </span>' + code(c.resume)),
            data_run=c.run,
        )
        for c in camps
    ]
    body = table(["run", "seed", "state", "executor", "wall", "CPU", "command"], rows, id_="campaigns", num_cols=(1, 4, 5))
    phases = []
    for p in runs.phase_rows(view):
        if p.skipped:
            phases.append(tr(td(p.phase) + td(f"skipped: {p.skipped}", cls="muted", colspan=3), cls="warn", data_phase=p.phase))
        else:
            phases.append(
                tr(
                    td(p.phase) + num(model.fmt_seconds(p.wall_seconds)) + num(model.fmt_seconds(p.cpu_seconds)) + num(runs.phase_tasks(p)),
                    data_phase=p.phase,
                )
            )
    body += "<h3>Time per phase</h3>" + table(["phase", "wall", "CPU", "tasks"], phases, id_="phases", num_cols=(1, 2, 3))
    why = (
        f"Wall {model.fmt_seconds(wall)}, CPU {model.fmt_seconds(cpu)} in all. A phase's wall runs from its first task's start to its last "
        "task's end as the submitter saw them (phases overlap on several workers); its CPU is its tasks' processes and their children's."
    )
    return section("campaign", "Campaign: runs, seeds, commands, time", why, body)


def readers(view: CoverageView) -> str:
    """The reader differential: every runtime read entry point against the spec's reader."""
    rows_data = view.readers
    if not rows_data:
        return section("readers", "Reader differential", _not_in(view, "the reader differential"), "")
    rows = [
        tr(
            num(f"{r.cases:,}") + num(f"{r.checks:,}") + num(r.mismatches, "bad" if r.mismatches else "")
            + num(model.fmt_seconds(r.seconds)) + td(", ".join(r.scenarios) or "—", cls="muted"),
            cls="bad" if r.mismatches else None,
        )
        for r in rows_data
    ]  # fmt: skip
    why = "Every runtime read entry point against the spec's reader, over the reader scenarios' logs cut at every byte, damaged and bloated. A mismatch is a violation."
    return section(
        "readers",
        "Reader differential",
        why,
        table(["cases", "checks", "mismatches", "time", "logs of"], rows, id_="readers", num_cols=(0, 1, 2, 3)),
    )


def sweep(view: CoverageView) -> str:
    """The failure-path sweep: an I/O error and a cancellation at every durability position."""
    rows_data = view.sweep
    if not rows_data:
        return section("sweep", "Failure-path sweep", _not_in(view, "the failure-path sweep"), "")
    positions, swept = sum(int(r.positions) for r in rows_data), sum(int(r.runs) for r in rows_data)
    violated = sum(int(r.violations) for r in rows_data)
    seconds = sum(float(r.seconds) for r in rows_data)
    rows = [
        tr(
            td(raw=code(r.scenario)) + num(r.positions) + num(r.runs) + num(r.bridged)
            + num(r.not_applicable) + num(r.violations, "bad" if r.violations else "")
            + num(model.fmt_seconds(r.seconds)),
            cls="bad" if r.violations else None,
        )
        for r in rows_data
    ]  # fmt: skip
    listing = table(
        ["scenario", "positions", "runs", "went on past the fault", "ended early", "violations", "time"],
        rows,
        id_="sweep",
        num_cols=(1, 2, 3, 4, 5, 6),
    )
    head = (
        f'<p id="sweep-summary">{len(rows_data)} scenario(s) swept: {positions:,} positions, {swept:,} runs, '
        f"{violated} violation(s), {esc(model.fmt_seconds(seconds))}.</p>"
    )
    why = "An I/O error and a cancellation at every position of every durability sequence the sweep scenarios run; each violation is saved as a scenario."
    return section(
        "sweep", "Failure-path sweep", why, head + details(f"per scenario ({len(rows_data)} rows)", listing, id_="sweep-details")
    )


def _not_in(view: CoverageView, what: str) -> str:
    skipped = {str(k): str(v) for c in runs.campaigns(view) for k, v in c.skipped.items()}
    if "replay" in skipped:
        return f"Not run: {what} is part of the replay phase, skipped ({skipped['replay']})."
    return f"Not run in these results ({what} runs in dsh-sim run's replay phase)."


def _method_cell(kill: KillRow, method: str) -> str:
    """What one method did to one mutant: killed/missed, its time, the invariant that fired."""
    result = kill_model.method_result(kill, method)
    if result is None:
        return td("not run", cls="method muted", data_method=method)
    killed = bool(result.killed)
    body = pill("killed", "good") if killed else pill("missed", "na")
    body += f' <span class="t">{esc(model.fmt_seconds(result.seconds))}</span>'
    if killed and result.invariant:
        body += breakable_ident(result.invariant)
    cls = "method " + ("killed" if killed else "missed") + (" fastest" if killed and kill.method == method else "")
    return td(raw=body, cls=cls, data_method=method, title=kill_model.method_title(method, result))


def kill_matrix(view: CoverageView) -> str:
    kills = view.kill_matrix
    if not kills:
        return section(
            "kills",
            "Kill matrix",
            "Seeded durability bugs (mutants) the harness must catch.",
            '<p class="muted">No mutant run in these results.</p>',
        )
    methods = kill_model.methods(kills)
    rows = []
    for k in kills:
        killed = bool(k.killed)
        scenario = code(k.scenario) if k.scenario else '<span class="muted">—</span>'
        mutant = breakable_ident(k.mutant) + f'<div class="desc muted">{esc(k.description)}</div>'
        cells = td(raw=mutant) + td(raw=pill("killed", "good") if killed else pill("SURVIVED", "bad"))
        cells += "".join(_method_cell(k, m) for m in methods)
        cells += (
            td(model.fmt_value(k.method))
            + num(model.fmt_seconds(k.time_to_kill))
            + num(k.scenario_steps)
            + td(raw=scenario, cls="scenario")
        )
        rows.append(tr(cells, cls=None if killed else "bad", data_mutant=k.mutant))
    killed_n = sum(1 for k in kills if k.killed)
    medians = kill_model.median_by_method(kills)
    per_method = ", ".join(f"{m} {model.fmt_seconds(t)}" for m, t in medians.items())
    why = f"{killed_n}/{len(kills)} killed; median time to kill {model.fmt_seconds(kill_model.median_time_to_kill(kills))}"
    why += f" (per method, over the mutants it killed: {per_method})." if per_method else "."
    why += " A surviving mutant (red) is a durability bug the harness cannot see. The outlined cell is the fastest kill; shrunk steps = size of the scenario fuzzing saved, after shrinking."
    header = ["mutant (bug seeded)", "result", *methods, "fastest", "time to kill", "shrunk steps", "scenario"]
    first_num = 2 + len(methods) + 1
    return section("kills", "Kill matrix", why, table(header, rows, id_="kill-matrix", num_cols=(first_num, first_num + 1)))


def _run_cell(value: object) -> str:
    return td(model.fmt_value(value), cls="num" if isinstance(value, (int, float)) and not isinstance(value, bool) else None)


def run_table(view: CoverageView) -> str:
    """The result documents behind the numbers, one row per kind, with their seeds and seconds."""
    data = runs.runs_of(view)
    collapsed = runs.collapsed_runs(data)
    keys = runs.run_columns(collapsed)
    rows = [tr("".join(_run_cell(r.value(k)) for k in keys)) for r in collapsed]
    total = model.fmt_seconds(runs.total_seconds(data))
    seeds = model.fmt_value(runs.seeds(data)) or "—"
    body = (
        f"<p>{len(data)} result document(s), one row per kind; their own seconds add up to <b>{esc(total)}</b> (the work "
        f'each document timed, not the wall time of a run: see Campaign). Seeds: <span class="mono">{esc(seeds)}</span></p>'
    )
    if collapsed:
        body += details(f"per kind ({len(collapsed)} rows)", table(keys, rows, id_="runs"), id_="runs-details")
    return section(
        "runs", "Result documents, seeds and time", "The seed of every shard; with the Campaign block, what reproduces these numbers.", body
    )
