"""trio's per-run instrument table, as a plain ``dict``.

trio asks its instrument table, at every scheduler batch and every task step, whether any
instrument wants a hook (``"before_task_step" in runner.instruments``, four or five times per
task step).  Its table is a ``UserDict``, so each of those questions is a Python-level
``__contains__`` call — about a percent of a simulated run, where the answer is nearly
always no (explore's recovery runs have no instrument at all).  :class:`HookTable` holds the
very same entries in a ``dict`` subclass, whose membership test is the dict's own; adding,
removing and calling instruments are trio's own methods, which only ever reach the entries
through ``data``.  It replaces the table of a run right after trio's ``setup_runner``
built it, before the run's first batch.
"""

from __future__ import annotations

from typing import Any

import trio

from dsh_sim.engine.determinism import run_module

_TRIO_TABLE: Any = run_module().Instruments  # trio's own (private) instrument table class


class HookTable(dict[str, dict[Any, None]]):
    """hook name → the instruments that implement it (``"_all"``: every instrument)."""

    @property
    def data(self) -> HookTable:
        """What trio's table methods read and change: the table itself."""
        return self

    add_instrument = _TRIO_TABLE.add_instrument
    remove_instrument = _TRIO_TABLE.remove_instrument
    call = _TRIO_TABLE.call


def fast_instruments(runner: Any) -> None:
    """Give ``runner`` (just set up, not run yet) a :class:`HookTable` with its table's entries."""
    table = HookTable()
    table.update(runner.instruments.data)
    runner.instruments = table


class PlainInstrument(trio.abc.Instrument):
    """An instrument whose hooks read only what they are given and the clock — never trio's
    current task, never a context variable.  Only a run whose every instrument is plain takes
    the scheduler shortcuts of :mod:`dsh_sim.engine.checkpoints`, which call the hooks a round
    trip would call, in trio's order, but from inside the running task (where trio calls
    ``before_io_wait`` and ``after_io_wait`` between task steps, in the host's context)."""
