"""Campaigns: the work of ``dsh-sim run`` as independent tasks, on one machine or many.

``tasks`` (the values) → ``plan`` (the split, the same for any worker count) → an executor
(``inprocess`` for one worker, ``cluster`` for Dask) running ``work`` → ``runner`` persisting
each result in its run directory (``rundir``) as it arrives, with ``board``/``display`` for
progress, ``stop`` for signals, and ``summary`` for the totals.
"""
