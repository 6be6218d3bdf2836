"""The kernel: one simulated machine and the processes that run the real runtime on it.

* :mod:`.machine` — :class:`~.machine.Simulation`: disk, world, clock and process lifetimes,
  and the operations a step performs (boot, run, advance, kill, shut down);
* :mod:`.dispatch` — what happens at a named point: bookkeeping, observers, the fault plan;
* :mod:`.process` — one simulated process: its own trio run stepped by the host, seeded scheduling;
* :mod:`.points`, :mod:`.faults` — the registry of named points and the fault plan's rules;
* :mod:`.crash`, :mod:`.media` — what a crash or a corrupted byte leaves for the judges;
* :mod:`.history`, :mod:`.observer` — what happened, for the checker (the kernel never imports it).
"""
