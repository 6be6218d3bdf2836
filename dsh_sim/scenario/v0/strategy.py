"""A Hypothesis strategy over historical (v0) logs: ``seed_v0`` args covering the shapes.

Draws every knob of :class:`~dsh_sim.scenario.args.SeedV0Args` within small bounds (a few
turns, short streams) so a state machine can start from any shape the generator makes:
text or tool turns, packed rows and unpacked runs, retried attempts, prompts that change,
inherited prefixes, titles, compactions, windows that cut chunk runs, balanced or interrupted ends, and
a final batch intact, torn at any of the tear points, or damaged.  Large rows (``pad``,
several zstd blocks per frame) are drawn rarely: they cost time in every judge.

The drawn values are step args, so a found run saves as an ordinary scenario file.
"""

from __future__ import annotations

from hypothesis import strategies as st

from dsh_sim.scenario.args import SeedV0Args
from dsh_sim.scenario.v0.model import CALL_ENDS, ENDS, SHAPES, TEARS


@st.composite
def seed_v0_args(draw: st.DrawFn, max_turns: int = 3) -> SeedV0Args:
    """Args of one ``seed_v0`` step: ``Step("seed_v0", draw(seed_v0_args()))``."""
    shape = draw(st.sampled_from(SHAPES))
    calls = draw(st.integers(1, 3)) if shape == "tools" else 0
    ends = [e for e in ENDS if e not in CALL_ENDS or calls]
    turns = draw(st.integers(1, max_turns))
    inherited = draw(st.integers(0, turns - 1))
    damage = draw(st.sampled_from(("intact", "torn", "damaged")))
    return SeedV0Args(
        turns=turns,
        notes=draw(st.integers(0, 2)),
        torn=damage == "torn",
        shape=shape,
        end=draw(st.sampled_from(ends)),
        calls=calls if shape == "tools" else 2,
        deltas=draw(st.sampled_from((1, 2, 3, 4, 7))),
        pad=draw(st.sampled_from((0,) * 9 + (9000,))),
        retry=draw(st.booleans()),
        system_change=draw(st.booleans()),
        inherited=inherited,
        title=draw(st.booleans()),
        compact=turns > 1 and draw(st.booleans()),
        batch=0 if inherited else draw(st.sampled_from((0, 0, 1, 3, 7))),
        tear=draw(st.sampled_from(TEARS)),
        damaged=damage == "damaged",
    )
