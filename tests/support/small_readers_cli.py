"""``python tests/support/small_readers_cli.py ARGS`` is ``dsh-sim ARGS`` with the replay shard's
reader differential on :data:`SMALL_READERS` instead of its full plan (~7 CPU-s, most of a tiny
campaign's time).  For the tests of how a campaign runs (run directories, resume, signals,
concurrent runs): what they compare is a run against another run of the same plan, and the
reader differential still runs, its counts in the documents compared.  The full plan is tested
where the reader differential is the subject (tests/simulation/test_reader_differential.py,
tests/system/test_campaign_plan.py).  ``dask worker --preload`` this file and the worker runs the
small plan too (:func:`dask_setup`).

A script, not ``-m tests.support...``: a campaign's child runs in its own directory, where the
tests package is not importable; this file imports only dsh_sim.
"""

from __future__ import annotations

from dsh_sim.cli.main import main
from dsh_sim.drivers import readers

# every case of each kind, a few tears, flips and bombs: ~0.8 CPU-s instead of ~7
SMALL_READERS = readers.Plan(tear_limit=4, flips=8, bomb_limit=2)

# as the command, and as the embedded cluster's workers, which spawn imports this module again in
# (as __mp_main__, see dsh_sim/__main__.py): every process of the run uses the same plan
if __name__ in ("__main__", "__mp_main__"):
    readers.FULL_PLAN = SMALL_READERS


def dask_setup(worker: object) -> None:
    """Run by ``dask worker --preload small_readers_cli.py``: the worker's tasks use the small plan."""
    readers.FULL_PLAN = SMALL_READERS


if __name__ == "__main__":
    raise SystemExit(main())
