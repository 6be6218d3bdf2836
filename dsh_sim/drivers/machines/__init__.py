"""Hypothesis state machines that drive simulations: durability (agent) and storage."""
