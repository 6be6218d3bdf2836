"""``python -m dsh_sim`` is the ``dsh-sim`` command."""

from dsh_sim.cli.main import main

raise SystemExit(main())
