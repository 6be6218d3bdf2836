"""Write the write-behind timing regression scenarios (scenarios/regressions/window-*.json): a
stream of events across one fixed window, a failed background write followed by events and no
flush, a window that expires while a slow write is in flight, and a barrier at the very instant
a window expires.

Run: ``python tools/window_scenarios.py`` then ``dsh-sim replay --update-digest scenarios/regressions/window-*.json``.
"""

from __future__ import annotations

from typing import Any

from _scenario_files import arm, write_scenarios


def append(count: int = 1) -> dict[str, Any]:
    return {"op": "append", "args": {"count": count}}


def advance(seconds: float) -> dict[str, Any]:
    return {"op": "advance", "args": {"seconds": seconds}}


BOOT = {"op": "boot"}

SCENARIOS: dict[str, tuple[str, dict[str, Any], list[dict[str, Any]]]] = {
    "window-stream-across-one-fixed-window": (
        "events keep arriving every 80 ms for a second, with no flush: the window the first one armed expires 200 ms later "
        "and takes exactly the queue of that instant; the next event arms the next window — a debounce that re-arms on every "
        "event would hold the first write back until the stream stops",
        {},
        [BOOT] + [step for _ in range(12) for step in (append(), advance(0.08))] + [advance(0.3)],
    ),
    "window-failed-write-then-events-without-flush": (
        "a background write fails (EIO); retries pause; 300 ms later new events arrive, and the window they arm writes the "
        "retained batch and them together — without any flush; later events get windows of their own",
        {},
        [
            BOOT,
            append(2),
            arm("fs.write", "error", errno="EIO"),
            advance(0.25),
            advance(0.3),
            append(1),
            advance(0.25),
            append(1),
            advance(0.25),
        ],
    ),
    "window-expires-while-slow-write-in-flight": (
        "on a slow disk (fsync 0.3 s) events arrive while a window's write is in flight (the first publication: until 2.0 s): "
        "their window expires during it, so their batch starts the moment that write ends and does not hold the event that "
        "arrives 100 ms later — a window re-armed behind the write would",
        {"fsync_latency": 0.3},
        [BOOT, append(1), advance(0.25), append(2), advance(0.1), append(1), advance(1.75), append(1), advance(1.0)],
    ),
    "window-flush-waits-for-the-write-in-flight": (
        "on a slow disk a window's write is in flight when the application flushes with nothing else pending: the flush "
        "must wait for that write (its events are durable when it returns), not return at once",
        {"fsync_latency": 0.3},
        [BOOT, append(1), {"op": "flush"}, append(1), advance(0.21), {"op": "flush"}, append(1), advance(0.21), {"op": "flush"}],
    ),
    "window-flush-during-a-failing-write": (
        "on a slow disk the application flushes, with nothing pending, while a window's write is in flight — and that write "
        "fails (fsync EIO): the flush must wait for it and then write the retained batch itself, so that what it returns "
        "over is durable (a flush that skips its barrier because nothing is pending returns over a lost batch)",
        {"fsync_latency": 0.3},
        [
            BOOT,
            append(1),
            {"op": "flush"},
            append(1),
            arm("fs.fsync", "fsync_fail", errno="EIO"),
            advance(0.25),
            {"op": "flush"},
            advance(0.3),
        ],
    ),
}


def main() -> None:
    write_scenarios(SCENARIOS, machine="storage", seed=3, generator="tools/window_scenarios.py")


if __name__ == "__main__":
    main()
