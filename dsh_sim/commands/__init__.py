"""One module per ``dsh-sim`` subcommand; :mod:`dsh_sim.cli` wires them to argparse."""
