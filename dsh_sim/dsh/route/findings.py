"""What the route runs found about the published DSH route, and the differences explained.

A violation or difference carries a finding id when it is an instance of one documented here;
anything else is unexplained and fails the run.  A finding that is DSH's has a standalone
reproduction under ``js/repros/`` (Node, the published packages, the real file system, a real
kill) that exits 1 while the behaviour is there and 0 once it is fixed.
"""

from __future__ import annotations

import os

import attrs

from dsh_sim.dsh.install import js_dir


@attrs.frozen
class RouteFinding:
    """A documented behaviour of DSH's route: who is right, why, and how to reproduce it."""

    id: str
    title: str
    right: str  # "dsh-sim", "DSH", or "both" (a difference neither runtime is wrong about)
    why: str
    repro: str | None = None  # file under js/repros/

    def repro_path(self) -> str | None:
        return None if self.repro is None else os.path.join(js_dir(), "repros", self.repro)


ROUTE_FINDINGS: dict[str, RouteFinding] = {
    f.id: f
    for f in (
        RouteFinding(
            "DSH-8",
            "A log a killed writer left partly unsynced is resumed without being made durable",
            "dsh-sim",
            "DSH publishes a new log by fsyncing a temp file, hard-linking it to the log's name and fsyncing the session "
            "directory, and appends by write + fsync. Killed between the link and the directory fsync, the name exists "
            "only in the page cache; killed between a write and its fsync, so do the batch's bytes. The next process "
            "loads the log as the page cache shows it and builds on it — it repairs, appends, acknowledges, stops "
            "cleanly — but never fsyncs the directory, and fsyncs the file only when it appends; a power loss after "
            "the clean stop removes the whole session (the name) or events it held (the bytes), and the temp file stays "
            "beside the log. dsh-sim's runtime makes a log it did not write durable and reachable before building on it "
            "(runtime/persistence/durable.py: make_durable). The reproduction shows the name case on a real file system.",
            "DSH-8.mjs",
        ),
        RouteFinding(
            "ROUTE-1",
            "The runs differ only in concurrency-safe reads",
            "both",
            "Both runtimes run parallel-safe calls in a bounded rolling pool; the order in which they reach a read-only "
            "service, and which of them have started or finished when a crash lands, is the schedule's (trio's in "
            "dsh-sim, the event loop's in DSH). Set the reads aside and the verdicts, results, calls and every applied "
            "effect agree.",
        ),
    )
}
