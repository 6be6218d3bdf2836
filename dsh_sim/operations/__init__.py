"""The work behind :mod:`dsh_sim.api`, one module per family of commands — internal.

:mod:`dsh_sim.api` is the door: it re-exports what is public, and only its names are a
promise.  These modules (and where a name lives among them) may change between versions.

Each operation takes paths or loaded scenarios, raises :class:`~dsh_sim.errors.InputError`
(one line naming the input) for bad input and returns a typed result; it prints nothing —
a caller that wants progress passes a callback.  The command modules (:mod:`dsh_sim.cli`)
call them through the api and decide what is printed and the exit status.
"""
