"""One module per ``dsh-sim`` subcommand; :mod:`dsh_sim.cli.main` wires them to argparse."""
