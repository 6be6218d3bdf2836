"""The run's own results document (kind ``campaign``): who ran it, how, and where the time went.

The task documents say what each task found; this one says what the report needs to be
reproduced and timed truthfully: the run id, the campaign seed, the submitting command line
(and the one that resumes it), the executor, and per phase — a kind of task (``replay``,
``explore``, ``fuzz``, ``mutants``) or the submitter's own ``dsh`` phase — its wall time as the
submitter saw it (first task started to last task finished) and its CPU time (each task's
process and the children it waited for, measured where the task ran; the DSH phase's in the
submitter, Node included).  The sum of the task documents' ``seconds`` is neither: it leaves
out the reader differential, the sweep, the re-checks, the DSH phase and the waiting, and adds
up tasks that ran side by side.

Each execution of the run (the first, then every ``--resume``) is one entry of
``executions``; the run's ``wall_seconds``, ``cpu_seconds`` and ``phases`` are their sums (a
resumed run's wall is the time it actually ran, not the pause between).  The document is the
run directory's :data:`FILE` (``results/`` keeps one document per task), and ``dsh-sim report
--from RUN`` reads it with the run's results.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import time
from collections.abc import Mapping, Sequence
from typing import Any

from dsh_sim.campaign.events import Event, Finished, Started
from dsh_sim.campaign.rundir import RUN_DOCUMENT, as_died
from dsh_sim.campaign.tasks import Campaign
from dsh_sim.campaign.work import cpu_now
from dsh_sim.errors import InputError
from dsh_sim.evidence.document import CampaignRecord, DocumentError, ResultsDocument, read_document, structure_as
from dsh_sim.evidence.results import meta

FILE = RUN_DOCUMENT  # in the run directory, beside campaign.json (the plan) and status.json
NAME = "campaign"  # its meta.task: one per run however often the run is merged
KIND = "campaign"
PHASES = ("replay", "explore", "fuzz", "mutants", "dsh")


def command(argv: Sequence[str]) -> str:
    """The command line as one would type it again."""
    return shlex.join(["dsh-sim", *argv])


class Clock:
    """Times one execution of a run from the submitter: the phases' wall from the task events,
    their CPU from the task results, the DSH phase around its call."""

    def __init__(self, kinds: Mapping[str, str]) -> None:
        self.kinds = dict(kinds)  # task id -> kind
        self.started = time.monotonic()
        self.first: dict[str, float] = {}  # kind -> first start (seconds since this execution began)
        self.last: dict[str, float] = {}  # kind -> last finish
        self.cpu: dict[str, float] = {}
        self.tasks: dict[str, int] = {}
        self.skipped: dict[str, str] = {}  # phase -> why it did not run

    def now(self) -> float:
        return time.monotonic() - self.started

    def _began(self, kind: str, at: float) -> None:
        self.first[kind] = min(self.first.get(kind, at), at)

    def see(self, event: Event) -> None:
        if isinstance(event, Started) and event.task in self.kinds:
            self._began(self.kinds[event.task], self.now())
        elif isinstance(event, Finished):
            result, at = event.result, self.now()
            self._began(result.kind, max(0.0, at - result.seconds))  # its start, had the Started message been lost
            self.last[result.kind] = max(self.last.get(result.kind, at), at)
            self.cpu[result.kind] = self.cpu.get(result.kind, 0.0) + result.cpu_seconds
            self.tasks[result.kind] = self.tasks.get(result.kind, 0) + 1

    @contextlib.contextmanager
    def phase(self, kind: str) -> Any:
        """Time a phase the submitter runs itself (the DSH phase): wall and CPU, children included."""
        begun, cpu = self.now(), cpu_now()
        self._began(kind, begun)
        try:
            yield
        finally:
            self.last[kind] = self.now()
            self.cpu[kind] = self.cpu.get(kind, 0.0) + cpu_now() - cpu

    def execution(self, argv: Sequence[str], executor: str, state: str) -> dict[str, Any]:
        phases = {
            kind: {
                "wall_seconds": round(self.last[kind] - self.first[kind], 3),
                "cpu_seconds": round(self.cpu.get(kind, 0.0), 3),
                "tasks": self.tasks.get(kind, 0),
            }
            for kind in PHASES
            if kind in self.first and kind in self.last
        }
        return {
            "argv": list(argv),
            "command": command(argv),
            "executor": executor,
            "state": state,
            "wall_seconds": round(self.now(), 3),
            "cpu_seconds": round(sum(p["cpu_seconds"] for p in phases.values()), 3),
            "phases": phases,
        }


def skipped_phases(campaign: Campaign) -> dict[str, str]:
    return {kind: f"--skip {kind}" for kind in campaign.options.skip}


def document(
    run_id: str, campaign: Campaign, execution: dict[str, Any], before: dict[str, Any] | None, skipped: Mapping[str, str]
) -> ResultsDocument:
    """The run's campaign document: ``before`` (its previous executions, if resumed) plus this one."""
    executions = [*(before or {}).get("campaign", {}).get("executions", []), execution]
    phases: dict[str, dict[str, Any]] = {}
    for ex in executions:
        for kind, p in ex.get("phases", {}).items():
            slot = phases.setdefault(kind, {"wall_seconds": 0.0, "cpu_seconds": 0.0, "tasks": 0})
            for key in slot:
                slot[key] = round(slot[key] + p.get(key, 0), 3)
    first_argv = executions[0]["argv"]
    body = {
        "run": run_id,
        "seed": campaign.options.seed,
        "argv": first_argv,
        "command": command(first_argv),
        "resume": command(["run", "--resume", run_id]),
        "executor": execution["executor"],
        "state": execution["state"],
        "tasks": len(campaign.tasks),
        "wall_seconds": round(sum(ex["wall_seconds"] for ex in executions), 3),
        "cpu_seconds": round(sum(ex["cpu_seconds"] for ex in executions), 3),
        "phases": {kind: phases[kind] for kind in PHASES if kind in phases},
        "skipped": dict(skipped),
        "executions": executions,
    }
    record = structure_as(body, CampaignRecord)
    return ResultsDocument(meta=meta(KIND, run=run_id, task=NAME, seed=campaign.options.seed, argv=list(first_argv)), campaign=record)


def read_before(run_dir: str) -> dict[str, Any] | None:
    """This run's campaign document from its previous executions, as written (None: first
    execution); one that is not a campaign record is refused in one line naming it."""
    from dsh_sim.inputs import read_json

    path = os.path.join(run_dir, FILE)
    if not os.path.isfile(path):
        return None
    raw = read_json(path, "campaign record")
    try:
        doc = read_document(raw)
    except DocumentError as err:
        raise InputError(f"{path}: not a campaign record: {err}") from None
    if doc.campaign is None:
        raise InputError(f"{path}: not a campaign record: it has no 'campaign'")
    return as_died(doc).to_json()  # (read when this execution starts: an earlier one still "running" died)
