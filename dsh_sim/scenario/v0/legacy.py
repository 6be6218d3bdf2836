"""The older runtime, still running: it appends a turn to the historical source while the new
runtime migrates it.

The reference migrates a v0 generation on write open and, before it publishes, checks that
the source has not changed since it was read (``GenerationSourceChangedError``: prepare
again).  Whether that check works — and sits after verification, where it covers the whole
window — is visible only if something actually writes to the source in that window.  A
``source_append`` fault does: at a migration point, this writer extends the logical
description of the source by one text turn, renders it the way the old runtime writes, and
appends the new bytes (durably, as another process).  The history's seeded source becomes
the grown one, so the judges expect the migration of what the source holds at publication.
"""

from __future__ import annotations

import attrs

from dsh_sim.engine.history import SeededLog
from dsh_sim.engine.machine import Simulation
from dsh_sim.scenario.v0.model import V0Session, V0Step, V0Stream, V0Turn
from dsh_sim.scenario.v0.plan import build
from dsh_sim.scenario.v0.render import render


def grown(session: V0Session) -> V0Session:
    """``session`` with one more turn: a user message and a streamed text answer."""
    last = session.turns[-1].steps[-1] if session.turns else None
    n = len(session.turns) + 1
    step = V0Step(f"legacy turn {n}", last.system if last is not None else None, V0Stream(text=(f"answer {n}",)))
    return attrs.evolve(session, turns=(*session.turns, V0Turn((step,))))


def growth(placed: SeededLog | None, compression: str) -> tuple[V0Session, bytes] | str:
    """The source with one more turn and its bytes — or why the old runtime cannot append one."""
    if placed is None or not isinstance(placed.description, V0Session):
        return "no historical source described by seed_v0"
    session = placed.description
    if session.end != "balanced" or session.tear is not None or session.damaged:
        state = ", ".join(x for x in (session.end, "torn" if session.tear else "", "damaged" if session.damaged else "") if x)
        return f"the source ends {state}: the old runtime that wrote it is not running"
    after = grown(session)
    data = render(build(after), compression).data
    if not data.startswith(placed.data):  # (log-only notes or a window cut in the last batch: it would be rewritten)
        return "a turn more does not follow the source's bytes: its last batch would be written differently"
    return after, data


def legacy_append(sim: Simulation) -> str | None:
    """Append one turn to the seeded source as the old runtime would; why not, if it cannot."""
    placed = sim.history.seeded
    grew = growth(placed, sim.config.compression)
    if isinstance(grew, str):
        return grew
    assert placed is not None
    after, data = grew
    try:
        sim.disk.append_durable(placed.path, data[len(placed.data) :], int(sim.now() * 1e9))
    except (FileNotFoundError, ValueError) as err:  # (the runtime removed or wrote the source: migration_atomic says so)
        return f"the source cannot be appended to: {err}"
    sim.history.seeded = SeededLog(placed.path, placed.target, data, after)
    sim.trace.record("source-append", placed.path, len(data) - len(placed.data))
    return None
