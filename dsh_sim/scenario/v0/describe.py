"""A historical session from the ``seed_v0`` step's knobs (:class:`~dsh_sim.scenario.args.SeedV0Args`).

The knobs pick shapes; this module fills in the content deterministically (texts, call
ids, argument JSON, delta pieces), so a scenario file names a historical log in a few
words and always means the same bytes.  The default knobs give exactly the log the first
v0 writer produced (balanced one-step text turns, four text deltas "an", "sw", "er ", "<n>"),
which keeps older scenario files and their trace digests unchanged.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from dsh_sim.scenario.v0.model import V0Call, V0Session, V0Step, V0Stream, V0Turn

if TYPE_CHECKING:
    from dsh_sim.scenario.args import SeedV0Args

TOOLS = ("get_balance", "lookup_payment")
REVISED = "You are a historical agent."


def split(text: str, n: int) -> list[str]:
    """``text`` in ``n`` non-empty pieces of near-equal size (the last takes the remainder)."""
    text = text + "." * max(0, n - len(text))
    size = len(text) // n
    return [text[i * size : (i + 1) * size] for i in range(n - 1)] + [text[(n - 1) * size :]]


def pieces(prefix: str, suffix: str, deltas: int, pad: int) -> tuple[str, ...]:
    """Delta pieces of ``prefix + suffix``: the prefix split over all but the last, the suffix last."""
    parts = [prefix + suffix] if deltas == 1 else split(prefix, deltas - 1) + [suffix]
    return tuple(p + "~" * pad for p in parts)


def _prompt(system: str | None, change: bool, t: int, s: int) -> str | None:
    """The system prompt of turn ``t``'s step ``s``: with ``change``, every even turn's steps
    each carry their own (a replacement before the turn's first request and before each later one)."""
    if not change or t % 2:
        return system
    return f"{system or REVISED} (turn {t}, step {s})"


def _calls(t: int, count: int, deltas: int) -> tuple[V0Call, ...]:
    out = []
    for i in range(1, count + 1):
        body = {"account": f"acct-{t}-{i}"}
        arguments = json.dumps(body, separators=(",", ":"))
        if len(arguments) < deltas:
            body["note"] = "n" * (deltas - len(arguments))
            arguments = json.dumps(body, separators=(",", ":"))
        name = TOOLS[(i - 1) % len(TOOLS)]
        out.append(
            V0Call(f"v0-call-{t}-{i}", name, arguments, tuple(split(arguments, deltas)), i % 2 == 1, f"{name} acct-{t}-{i}: {100 * t + i}")
        )
    return tuple(out)


def _turn(args: SeedV0Args, t: int, system: str | None) -> V0Turn:
    k, pad = args.deltas, args.pad
    abandoned = pieces("draft ", str(t), k, pad) if args.retry else ()
    prompt = _prompt(system, args.system_change, t, 1)
    if args.shape == "text":
        return V0Turn((V0Step(f"prompt {t}", prompt, V0Stream(text=pieces("answer ", str(t), k, pad)), abandoned),))
    thinking = pieces("thinking about ", str(t), k, pad)
    if not args.calls:  # the model answers at once: one step
        return V0Turn((V0Step(f"prompt {t}", prompt, V0Stream(thinking, pieces("answer ", str(t), k, pad)), abandoned),))
    first = V0Stream(thinking, pieces("calling tools ", str(t), k, pad), _calls(t, args.calls, k))
    last = V0Stream(text=pieces("answer ", str(t), k, pad))
    return V0Turn((V0Step(f"prompt {t}", prompt, first, abandoned), V0Step(None, _prompt(system, args.system_change, t, 2), last)))


def describe(args: SeedV0Args, session_id: str, cwd: str, system: str | None) -> V0Session:
    """The historical session ``args`` names, for a session ``session_id`` in ``cwd`` whose
    old runtime ran with the system prompt ``system``."""
    return V0Session(
        session_id=session_id,
        cwd=cwd,
        turns=tuple(_turn(args, t, system) for t in range(1, args.turns + 1)),
        notes=args.notes,
        end=args.end,
        inherited=args.inherited,
        title=args.title,
        subagent=args.subagent,
        compact=args.compact,
        legacy=args.legacy,
        batch=args.batch,
        jitter=args.shape != "text",
        tear=args.tear if args.torn else None,
        damaged=args.damaged,
    )
