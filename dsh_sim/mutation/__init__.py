"""Mutants of the runtime, applied from outside it: the hand-written catalogue and a mutation-testing tool."""
