"""The agent: loop, hooks, plugins (checkpoint policy, approval, sandbox) and resume."""
