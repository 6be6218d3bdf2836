"""Durability bugs switched on for a run: the catalogue of known bugs and the code substitution
that applies one (or any list of :class:`~dsh_sim.mutants.patch.Edit` s) without touching a file.

A mutant is an option a driver passes, never a switch inside the runtime; the mutation-testing
harness that measures the harness with them lives above the drivers, in :mod:`dsh_sim.mutation`.
"""
