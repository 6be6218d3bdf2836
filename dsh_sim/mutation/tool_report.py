"""The survivor report of ``dsh-sim mutants --tool``: counts per module, each survivor triaged.

A mutant mutmut could not get killed is one of three things, and the committed triage
(``benchmarks/mutation-triage.json``, keyed by mutmut's mutant name) says which and why:

* ``equivalent`` — it cannot change what the runtime does (dead code, a default never used, an
  optimisation, a value nobody reads);
* ``not-relevant`` — it changes something observable that no durability property is about (the
  text of an error or log message, a human-readable repr);
* ``gap`` — a durability-relevant change dsh-sim does not notice; the reason names the check or
  scenario that would kill it.

The kill rate the issue asks for is ``killed / (total − equivalent)``: a timeout counts as a kill
(the mutant hung the runtime, which the harness reports as a hang), and so does mutmut's
"segfault" (its name for a test process killed by a signal: SIGKILL after the CPU limit, an
endless loop); ``no tests`` (no test item reached the function) counts as a survivor.  A survivor without a triage entry is ``untriaged`` and
makes the report say so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from dsh_sim.mutation.tool import Mutant

CLASSES = ("equivalent", "not-relevant", "gap")
KILLS = ("killed", "timeout", "segfault")


def triaged(mutant: Mutant, triage: dict[str, dict[str, Any]]) -> tuple[str, str]:
    entry = triage.get(mutant.name)
    if entry is None:
        return "untriaged", ""
    klass = entry.get("class", "untriaged")
    if klass not in CLASSES:
        raise ValueError(f"triage of {mutant.name}: unknown class {klass!r} (one of {', '.join(CLASSES)})")
    return klass, str(entry.get("reason", ""))


def document(mutants: Sequence[Mutant], triage: dict[str, dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    modules: dict[str, Counter[str]] = {}
    survivors = []
    for m in mutants:
        counts = modules.setdefault(m.module, Counter())
        counts["total"] += 1
        counts[m.status] += 1
        if m.status in KILLS or m.status == "not checked":
            continue
        klass, reason = triaged(m, triage)
        counts[klass] += 1
        survivors.append(
            {
                "name": m.name,
                "module": m.module,
                "function": m.function,
                "line": m.line,
                "status": m.status,
                "class": klass,
                "reason": reason,
                "diff": m.diff,
            }
        )
    totals: Counter[str] = Counter()
    for counts in modules.values():
        totals.update(counts)
    return {
        "meta": meta,
        "modules": {name: dict(counts) for name, counts in modules.items()},
        "totals": dict(totals),
        "kill_rate": kill_rate(totals),
        "survivors": survivors,
    }


def kill_rate(counts: Counter[str] | dict[str, int]) -> float | None:
    """killed / (total − equivalent), timeouts and signal deaths counted as kills, unchecked mutants left out."""
    checked = counts.get("total", 0) - counts.get("not checked", 0) - counts.get("equivalent", 0)
    if checked <= 0:
        return None
    return round(sum(counts.get(k, 0) for k in KILLS) / checked, 4)


_COLUMNS = ("total", "killed", "timeout", "segfault", "survived", "no tests", "equivalent", "not-relevant", "gap", "untriaged")


def markdown(doc: dict[str, Any]) -> str:
    meta = doc["meta"]
    rate = doc["kill_rate"]
    lines = [
        "# Mutation testing: survivors of dsh-sim's own methods",
        "",
        f"Tool: mutmut {meta.get('mutmut', '?')}; test command: `pytest -x tests_mutation` (corpus replay judged by "
        "every invariant and oracle and by the progress check, fixed-seed fuzz of both machines, bounded explore — `dsh_sim/mutation/harness.py`). "
        f"Written by `dsh-sim mutants --tool` on {meta.get('started', '?')}"
        + (f", run time {meta['seconds']} s" if meta.get("seconds") is not None else "")
        + ".",
        "",
        (
            f"Modules: {', '.join(f'`{m}`' for m in meta.get('modules', []))}. "
            + (
                f"A stratified random sample of {meta['sample']} of the {meta.get('generated', '?')} mutants mutmut generated "
                "(`--sample`): the counts below are of the sample."
                if meta.get("sample")
                else f"All {meta.get('generated', '?')} mutants mutmut generated."
            )
        ),
        "",
        f"**Kill rate: {rate:.1%}** of non-equivalent mutants (killed / (total − equivalent); timeouts and signal deaths count as kills)."
        if rate is not None
        else "**Kill rate:** no mutant checked yet.",
        "",
        "| module | " + " | ".join(_COLUMNS) + " | kill rate |",
        "|---|" + "---:|" * (len(_COLUMNS) + 1),
    ]
    for name, counts in sorted(doc["modules"].items()):
        module_rate = kill_rate(counts)
        cells = " | ".join(str(counts.get(c, 0)) for c in _COLUMNS)
        lines.append(f"| `{name}` | {cells} | {'' if module_rate is None else f'{module_rate:.1%}'} |")
    totals = doc["totals"]
    lines.append("| **all** | " + " | ".join(str(totals.get(c, 0)) for c in _COLUMNS) + f" | {'' if rate is None else f'{rate:.1%}'} |")
    lines += [
        "",
        "Survivor classes: `equivalent` (cannot change behaviour), `not-relevant` (observable, but no durability "
        "property is about it), `gap` (dsh-sim should notice it; the reason says how).",
        "",
    ]
    by_module: dict[str, list[dict[str, Any]]] = {}
    for s in doc["survivors"]:
        by_module.setdefault(s["module"], []).append(s)
    for module, survivors in sorted(by_module.items()):
        lines += [f"## `{module}`", ""]
        for s in survivors:
            where = f"line {s['line']}, " if s["line"] else ""
            short = s["name"].rpartition(".")[2]
            lines.append(f"### `{short}` — {s['class']} ({where}`{s['function']}`, {s['status']})")
            lines.append("")
            if s["reason"]:
                lines += [s["reason"], ""]
            body = [d for d in s["diff"].splitlines() if not d.startswith(("---", "+++"))]
            lines += ["```diff", *body, "```", ""]
    return "\n".join(lines).rstrip() + "\n"
