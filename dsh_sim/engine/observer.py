"""The one seam between the kernel and whoever watches it.

The kernel (:class:`~dsh_sim.engine.machine.Simulation`) knows nothing of invariants,
coverage or exploration; it announces what happens to the observers a driver attached —
the checker that owns every invariant, explore's recorder — through these hooks, in order.
Every hook has a do-nothing default, so an observer implements only what it needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from dsh_sim.engine.crash import CrashRecord
    from dsh_sim.engine.hang import Hung
    from dsh_sim.engine.lifetime import Lifetime
    from runtime.session.events import Event


@attrs.frozen
class ReaderView:
    """What a read-only reader beside the writer saw (the ``read_only`` step)."""

    listed: tuple[str, ...]  # session ids the backend listed
    first: tuple[Event, ...]  # a full read
    tail: tuple[Event, ...]  # a read from the middle (offset len(first) // 2)
    refusals: dict[str, str]  # append / flush / closed-read -> "allowed" or the error type

    def outcome(self) -> str:
        seen = [
            f"listed={','.join(self.listed)}",
            f"events={len(self.first)}",
            f"tail={len(self.tail)}",
            f"last={self.first[-1].type if self.first else '-'}",
        ]
        seen += [f"{name}={what}" for name, what in self.refusals.items()]
        return "read-only:" + ":".join(seen)


class Observer:
    def on_point(self, life: Lifetime, name: str, details: dict[str, Any]) -> None:
        """A live process announced a named point (before any fault of the plan is applied)."""

    def on_acknowledged(self, life: Lifetime, batch: tuple[Event, ...], before: bytes, after: bytes | None) -> None:
        """The runtime acknowledged ``batch`` as durable; the log held ``before`` at the previous
        acknowledgement (or at open) and holds ``after`` now."""

    def on_crash(self, record: CrashRecord) -> None:
        """A process died; ``record`` holds the post-crash disk image and the evidence."""

    def before_boot(self, last_crash: CrashRecord | None) -> None:
        """A process is about to start after every earlier one died (``last_crash``: the
        newest crash, if the last death was one)."""

    def on_boot(self, life: Lifetime) -> None:
        """A primary process finished starting (recovered, or refused the log)."""

    def on_second_writer(self, life: Lifetime) -> None:
        """A second writer ran against the primary and exited."""

    def on_hang(self, life: Lifetime, hang: Hung) -> None:
        """A command hung ``life``'s process (a spin or a deadlock, :mod:`.hang`); the harness
        kills it next."""

    def on_flush_failed(self, life: Lifetime, error: BaseException) -> None:
        """An explicit flush of the live session raised ``error`` (the process lives on)."""

    def on_reader(self, life: Lifetime, view: ReaderView) -> None:
        """A read-only reader beside the live writer saw ``view``."""

    def on_reader_failed(self, life: Lifetime, error: BaseException) -> None:
        """A read-only reader beside the live writer was refused with ``error`` (list, open or read)."""

    def on_step(self, op: str, outcome: str, args: Any = None) -> None:
        """A scenario step finished (``args``: its typed arguments)."""

    def on_shutdown(self, life: Lifetime, faults_during: bool) -> None:
        """A process was stopped gracefully (``faults_during``: a fault fired meanwhile)."""
