"""``python -m dsh_sim`` is the ``dsh-sim`` command.

Guarded: the embedded Dask cluster starts its workers with ``spawn``, which imports the
parent's main module again in every worker; unguarded, each worker would run the command.
"""

from dsh_sim.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
