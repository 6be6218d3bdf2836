"""The DSH agent runtime: a durable session log, an agent loop and a tool pipeline.

It reaches the operating system, time, ids and the model only through the ports in
:mod:`runtime.ports`; production adapters live in :mod:`runtime.adapters`.  Nothing here
imports the simulator (``dsh_sim``).
"""
