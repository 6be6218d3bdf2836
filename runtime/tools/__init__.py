"""Tools: results, the per-call pipeline, the scheduler and the built-in tools."""
