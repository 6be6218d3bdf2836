"""How fast ``dsh-sim run`` answers SIGTERM in each phase: the seconds from the signal to the
process's exit, with the one line it ends on.

    python benchmarks/bench_stop.py                 # every phase
    python benchmarks/bench_stop.py --only dsh-route

Each case starts a campaign over the project's corpus reduced to one phase, waits until the
run's own progress says that phase is running (the plain status lines, printed when stdout is
not a terminal), lets it run one more second (mutants: 3 s after the run's first line) and
sends SIGTERM.  Target (issue 33): within 2 s
from any phase, exit 143, one line saying the run is incomplete and how to resume it.  Wall time
is what a user waits, so it is reported; the machine's load moves it a little (the stop itself
waits for at most one item of work: a case, a run of the sweep, a crash point).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONLY_REPLAY = ["--skip", "explore", "--skip", "fuzz", "--skip", "mutants", "--skip", "dsh", "--rechecks", "0"]
ONLY_DSH = ["--skip", "explore", "--skip", "fuzz", "--skip", "mutants", "--rechecks", "0"]
CASES: dict[str, tuple[list[str], str, float]] = {
    # name: (dsh-sim run arguments, text in a progress line that says the phase runs, seconds to
    # wait after it; a mutant task is too short to be named by a status line: the run's header)
    "replay": (ONLY_REPLAY, "] replay |", 1.0),
    "reader-differential": (ONLY_REPLAY, "reader differential:", 1.0),
    "explore": (["--skip", "replay", "--skip", "fuzz", "--skip", "mutants", "--skip", "dsh"], "] explore |", 1.0),
    "fuzz": (["--skip", "replay", "--skip", "explore", "--skip", "mutants", "--skip", "dsh", "--budget", "30"], "] fuzz |", 1.0),
    "fuzz-embedded-cluster": (
        ["--skip", "replay", "--skip", "explore", "--skip", "mutants", "--skip", "dsh", "--budget", "30", "--workers", "2"],
        "] fuzz |",
        1.0,
    ),
    "mutants": (["--skip", "replay", "--skip", "explore", "--skip", "fuzz", "--skip", "dsh", "--rechecks", "0"], "dsh-sim run ", 3.0),
    "dsh-writer": (ONLY_DSH, "dsh | DSH writer", 1.0),
    "dsh-against": (ONLY_DSH, "dsh | against DSH", 1.0),
    "dsh-route": (ONLY_DSH, "dsh | DSH route", 1.0),
}


def stop_once(args: list[str], marker: str, out: str, after: float = 1.0) -> tuple[float | None, int | None, str]:
    """(seconds from SIGTERM to exit, exit code, the last line on stderr); None when the marker
    never showed (the phase ended before a progress line named it, or it was skipped)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "dsh_sim", "run", *args, "--out", out],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = threading.Event()

    def watch() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if marker in line:
                seen.set()

    reader = threading.Thread(target=watch, daemon=True)
    reader.start()
    while not seen.wait(0.05):
        if proc.poll() is not None:
            return None, proc.returncode, "(the phase ended before a progress line named it)"
    time.sleep(after)
    asked = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate()
    took = time.perf_counter() - asked
    lines = [line for line in err.splitlines() if line.strip()]
    return took, proc.returncode, lines[-1] if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(CASES), action="append", help="one case (repeatable); default every case")
    options = parser.parse_args()
    print(f"{'phase':24} {'stop (s)':>9} {'exit':>5}  line")
    worst = 0.0
    for name in options.only or list(CASES):
        args, marker, after = CASES[name]
        with tempfile.TemporaryDirectory(prefix="bench-stop-") as out:
            took, code, line = stop_once(args, marker, out, after)
        shown = "—" if took is None else f"{took:.2f}"
        worst = max(worst, took or 0.0)
        print(f"{name:24} {shown:>9} {code!s:>5}  {line[:110]}", flush=True)
    print(f"slowest stop: {worst:.2f}s (target: within 2 s)")


if __name__ == "__main__":
    main()
