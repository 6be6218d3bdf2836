"""attrs validators for the harness's value classes: ranges, finiteness, closed vocabularies.

Every one raises :class:`~dsh_sim.errors.FieldError` naming the field, so a scenario loader
reports the exact JSON path.  The ranges keep every run finite and small enough to finish:
an ``advance`` of 1e308 seconds or an ``append`` of 1e8 events is refused input, not a hang
or an invariant "violation" of the runtime.  The validators are plain values (their bounds
and choices are readable), so the JSON Schema and the reference page are generated from the
same numbers the loader enforces.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import attrs

from dsh_sim.errors import FieldError, one_of


@attrs.frozen
class number:
    """A finite int or float (never a bool) in ``[lo, hi]``."""

    lo: float
    hi: float

    def __call__(self, _inst: Any, attribute: Any, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise FieldError(attribute.name, f"must be a number, got {value!r}")
        if not math.isfinite(value) or not self.lo <= value <= self.hi:
            raise FieldError(attribute.name, f"must be a finite number in [{self.lo:g}, {self.hi:g}], got {value!r}")


@attrs.frozen
class integer:
    """An int (never a bool) in ``[lo, hi]``."""

    lo: int
    hi: int

    def __call__(self, _inst: Any, attribute: Any, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise FieldError(attribute.name, f"must be an integer, got {value!r}")
        if not self.lo <= value <= self.hi:
            raise FieldError(attribute.name, f"must be in [{self.lo}, {self.hi}], got {value}")


def _names(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(names)


@attrs.frozen
class member:
    """One of the names in ``choices`` (refused with a "did you mean")."""

    choices: tuple[str, ...] = attrs.field(converter=_names)
    what: str = "value"

    def __call__(self, _inst: Any, attribute: Any, value: Any) -> None:
        if value not in self.choices:
            raise FieldError(attribute.name, one_of(value, self.choices, self.what))


@attrs.frozen
class optional:
    inner: Any

    def __call__(self, inst: Any, attribute: Any, value: Any) -> None:
        if value is not None:
            self.inner(inst, attribute, value)


@attrs.frozen
class each:
    """Every item of a tuple passes ``inner``."""

    inner: Any

    def __call__(self, inst: Any, attribute: Any, value: Any) -> None:
        for item in value:
            self.inner(inst, attribute, item)


@attrs.frozen
class text:
    """A string of at most ``max_len`` characters."""

    max_len: int

    def __call__(self, _inst: Any, attribute: Any, value: Any) -> None:
        if not isinstance(value, str):
            raise FieldError(attribute.name, f"must be a string, got {value!r}")
        if len(value) > self.max_len:
            raise FieldError(attribute.name, f"must be at most {self.max_len} characters, got {len(value)}")


@attrs.frozen
class at_most:
    """A tuple of at most ``limit`` items."""

    limit: int

    def __call__(self, _inst: Any, attribute: Any, value: Any) -> None:
        if len(value) > self.limit:
            raise FieldError(attribute.name, f"must hold at most {self.limit} items, got {len(value)}")


def validators_of(attribute: Any) -> list[Any]:
    """The validator values of an attrs field (unwrapping ``and_`` lists)."""
    v = attribute.validator
    if v is None:
        return []
    inner = getattr(v, "_validators", None)
    return list(inner) if inner is not None else [v]
