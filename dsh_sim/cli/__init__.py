"""The ``dsh-sim`` command: argument parsing and one-line refusals (:mod:`.main`), each
subcommand a thin module over :mod:`dsh_sim.api` (parse the flags, call the api, print, pick
the exit status)."""
