"""Write the lease and publication regression scenarios (scenarios/regressions/lease-*.json):
another process winning the race to open, at the first publication and at a boot; another
process's file at the name a first publication or a migration links.

Run: ``python tools/lease_scenarios.py`` then ``dsh-sim replay --update-digest scenarios/regressions/lease-*.json``.
"""

from __future__ import annotations

from typing import Any

from _scenario_files import arm, write_scenarios

APPEND_FLUSH = [{"op": "append", "args": {"count": 2}}, {"op": "flush"}]
AGAIN = [{"op": "crash_now"}, {"op": "boot"}, {"op": "append"}, {"op": "flush"}]

SCENARIOS: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "lease-race-lost-at-first-publication": (
        "another process takes the lock just as this one's first publication would: the flush is refused "
        "(SessionAlreadyOwnedError), nothing is published or left behind, and a later process creates the session",
        [arm("fs.flock", "contended", 1), {"op": "boot"}, *APPEND_FLUSH, *AGAIN],
    ),
    "lease-race-lost-at-boot": (
        "another process holds the session's lock when this one boots: it stays out (refused, nothing written); the next "
        "boot resumes the session with everything acknowledged before",
        [
            {"op": "boot"},
            *APPEND_FLUSH,
            {"op": "crash_now"},
            arm("fs.flock", "contended", 2),
            {"op": "boot"},
            {"op": "boot"},
            {"op": "append"},
            {"op": "flush"},
        ],
    ),
    "lease-foreign-file-at-first-publication": (
        "another process's file appears at the log's name just as the first publication links it: the publication refuses "
        "(SessionAlreadyExistsError) and never removes or overwrites that file",
        [arm("fs.link", "target_exists", 1), {"op": "boot"}, *APPEND_FLUSH],
    ),
    "lease-foreign-file-at-migration": (
        "another process's file appears at the v3 name just as a migration publishes there: the generations differ, the "
        "migration refuses (GenerationTargetConflictError) and leaves the file and the v0 source as they were",
        [{"op": "seed_v0", "args": {"turns": 1}}, arm("fs.link", "target_exists", 1), {"op": "boot"}],
    ),
}


def main() -> None:
    write_scenarios(
        {name: (description, {}, steps) for name, (description, steps) in SCENARIOS.items()},
        machine="storage",
        seed=3,
        generator="tools/lease_scenarios.py",
    )


if __name__ == "__main__":
    main()
