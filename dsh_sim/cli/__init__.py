"""The ``dsh-sim`` command: argument parsing and one-line refusals (:mod:`.main`), each
subcommand a thin module over the library (:mod:`dsh_sim.api`, the drivers)."""
