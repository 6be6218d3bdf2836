"""Garbage-collector settings for the drivers' long loops (explore, fuzz), restored afterwards.

Every simulated process lifetime allocates tens of thousands of short-lived objects — most
freed by reference counting before any collection sees them — while what a driver keeps
(recorded crash points, the decode memos, results) grows for the whole run.  With the
default thresholds the collector kept re-traversing those long-lived objects: about a tenth
of explore's and fuzz's CPU.  Inside :class:`CollectorPolicy` the young generation collects
less often and the older ones rarely; :meth:`CollectorPolicy.freeze` excludes everything
alive at that moment (explore: the recording, once complete) from collections altogether.
Cyclic garbage is still collected, in larger batches; :class:`ExampleCollector` adds full
collections at fixed points of a fuzz run, so finished examples do not pile up.

The young generation's threshold is 20,000 objects, not 5,000: a fuzz example's simulation
stays alive for the whole example (tens of thousands of objects), so with a small young
generation each of its objects was traversed by several young collections before the example
ended and it could go.  Measured on ``bench_fuzz.py --examples 100 --seed 1`` with a gc callback
timer (three alternating runs each): 0.23–0.27 CPU-s in collections at 5,000 against
0.17 CPU-s at 20,000 (and about the same at 60,000 or 100,000, with more memory), out of about
3 CPU-s; the process's peak size went down (79 MB to 72 MB), as fewer objects reach the older
generations.
"""

from __future__ import annotations

import gc

THRESHOLDS = (20000, 50, 100)  # young collections every 20,000 objects, middle every 50 of those


class CollectorPolicy:
    def __enter__(self) -> CollectorPolicy:
        self._saved = gc.get_threshold()
        self._frozen = False
        gc.set_threshold(*THRESHOLDS)
        return self

    def freeze(self) -> None:
        """Exclude every object alive now from collections until the policy ends."""
        if gc.get_freeze_count() == 0:  # never unfreeze what someone else froze
            gc.freeze()
            self._frozen = True

    def __exit__(self, *exc: object) -> None:
        gc.set_threshold(*self._saved)
        if self._frozen:
            gc.unfreeze()


COLLECT_AFTER_RULES = 25 * 12  # a batch of 25 examples of 12 rules, as issue 15 measured it


class ExampleCollector:
    """A full collection after every :data:`COLLECT_AFTER_RULES` rules of finished examples.

    A finished example's simulation is cyclic garbage, and under the raised thresholds of
    :class:`CollectorPolicy` only a full collection frees it.  Once per batch of 25 examples
    (the fuzz driver's) was enough at 12 rules per example; at 50 rules a batch's dead
    simulations are four times larger, and the process's size kept reaching new peaks (a
    10-minute soak: +17.6 MB after minute 1, peak 132 MB, though the live blocks stayed flat).
    Counting rules keeps the collections as frequent, per rule, as they were.  The points are
    fixed by the examples' lengths, never by time, so they cannot make two runs differ."""

    def __init__(self) -> None:
        self.rules = 0

    def after(self, rules: int) -> None:
        self.rules += rules
        if self.rules >= COLLECT_AFTER_RULES:
            self.rules = 0
            gc.collect()
