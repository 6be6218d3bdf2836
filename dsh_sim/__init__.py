"""dsh-sim: a deterministic simulator and crash-testing harness for the DSH durability route.

The simulator drives the real runtime (:mod:`runtime`) through its ports: a virtual clock,
a simulated disk with a crash model (:mod:`dsh_sim.adapters.simfs`), a fault plan consulted only at
named points (:mod:`dsh_sim.engine.faults`), and a simulated external world whose ledger is the
ground truth of which side effects happened (:mod:`dsh_sim.adapters.world`).
"""

__version__ = "0.1.0"
