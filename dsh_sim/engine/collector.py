"""Garbage-collector settings for the drivers' long loops (explore, fuzz), restored afterwards.

Every simulated process lifetime allocates tens of thousands of short-lived objects — most
freed by reference counting before any collection sees them — while what a driver keeps
(recorded crash points, the decode memos, results) grows for the whole run.  With the
default thresholds the collector kept re-traversing those long-lived objects: about a tenth
of explore's and fuzz's CPU.  Inside :class:`CollectorPolicy` the young generation collects
less often and the older ones rarely; :meth:`CollectorPolicy.freeze` excludes everything
alive at that moment (explore: the recording, once complete) from collections altogether.
Cyclic garbage is still collected, in larger batches.
"""

from __future__ import annotations

import gc

THRESHOLDS = (5000, 200, 100)


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
