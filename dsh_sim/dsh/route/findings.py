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
            "A log whose first publication was killed between link and directory fsync is resumed without making its name durable",
            "dsh-sim",
            "DSH publishes a new log by fsyncing a temp file, hard-linking it to the log's name and fsyncing the session "
            "directory. Killed between the link and that fsync, the name exists only in the page cache. The next process "
            "loads the log (its repair appends closers), appends and acknowledges, fsyncing the file but never the "
            "directory, so a power loss after the clean stop removes the whole session (and the temp file stays beside "
            "it). dsh-sim's runtime makes a log it did not publish durable and reachable before building on it "
            "(runtime/persistence/durable.py: make_durable).",
            "DSH-8.mjs",
        ),
        RouteFinding(
            "ROUTE-1",
            "The ledger differs only in reads by concurrency-safe calls",
            "both",
            "Both runtimes run parallel-safe calls in a bounded pool; the order in which they reach a read-only service, "
            "and whether one has reached it when a crash lands, is the schedule's. No applied effect differs.",
        ),
    )
}
