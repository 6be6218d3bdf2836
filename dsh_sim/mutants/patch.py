"""Code substitution: run a runtime function with a few lines changed, without touching its file.

A mutant is a list of :class:`Edit` — one function (module + qualified name), one exact
snippet of its source, and what to put there instead.  :func:`applied` compiles the edited
source in the function's own module and swaps the *code object* of the live function for the
edited one (``function.__code__``), so every caller — also one that imported the function by
name long ago — runs the mutant; on exit the original code object is put back.  The runtime
carries no switch for any of this: its files stay production code.

An edit that no longer matches (the runtime changed under it) is an error naming the edit,
never a mutant that silently does nothing.
"""

from __future__ import annotations
import __future__

import contextlib
import importlib
import inspect
import textwrap
import types
from collections.abc import Iterator, Sequence
from typing import Any

import attrs

from runtime.persistence import decode_memo


class StaleMutant(RuntimeError):
    """An edit's snippet is not (exactly once) in the current source of its function."""


@attrs.frozen
class Edit:
    module: str  # e.g. "runtime.persistence.durable"
    qualname: str  # e.g. "append_durable" or "WriteHandle._append_bytes"
    old: str  # an exact snippet of the function's source, indented as in its file
    new: str  # its replacement


# The shipped code of every function a mutant has replaced at least once: edits always apply to
# the source as shipped (also while another block has that function mutated).
_PRISTINE: dict[types.FunctionType, types.CodeType] = {}


def _function(edit: Edit) -> types.FunctionType:
    target: Any = importlib.import_module(edit.module)
    for part in edit.qualname.split("."):
        target = inspect.getattr_static(target, part)
    if isinstance(target, (staticmethod, classmethod)):
        target = target.__func__
    if isinstance(target, property):
        target = target.fget
    if not isinstance(target, types.FunctionType):
        raise StaleMutant(f"{edit.module}.{edit.qualname} is not a function")
    return target


def _strip_decorators(source: str) -> str:
    lines = source.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith(("def ", "async def ")))
    return "".join(lines[start:])


def mutated_code(edits: Sequence[Edit], function: types.FunctionType | None = None) -> types.CodeType:
    """The code object of one function with every edit (all of that function) applied."""
    first = edits[0]
    function = function or _function(first)
    pristine = types.FunctionType(_PRISTINE.get(function, function.__code__), function.__globals__)
    source = inspect.getsource(pristine)  # snippets are matched as the file indents them
    for edit in edits:
        if source.count(edit.old) != 1:
            raise StaleMutant(
                f"{edit.module}.{edit.qualname}: the snippet to replace occurs {source.count(edit.old)} times "
                f"(expected once): {edit.old.strip()[:80]!r}"
            )
        source = source.replace(edit.old, edit.new)
    edited = _strip_decorators(textwrap.dedent(source))
    freevars = function.__code__.co_freevars
    if freevars:
        # a closure (or a method using super()): compile inside a function that provides the
        # same free variables, so the new code object has the same closure layout
        header = "def __mutant_outer__():\n" + "".join(f"    {name} = None\n" for name in freevars)
        edited = header + textwrap.indent(edited, "    ") + f"\n    return {function.__name__}\n"
    namespace: dict[str, Any] = {}
    filename = f"<mutant of {first.module}.{first.qualname}>"
    code = compile(edited, filename, "exec", flags=__future__.annotations.compiler_flag, dont_inherit=True)
    exec(code, function.__globals__, namespace)
    made = namespace["__mutant_outer__"]() if freevars else namespace[function.__name__]
    new_code: types.CodeType = made.__code__
    if new_code.co_freevars != freevars:
        raise StaleMutant(f"{first.module}.{first.qualname}: the edited function needs other free variables {new_code.co_freevars}")
    return new_code


@contextlib.contextmanager
def applied(edits: Sequence[Edit]) -> Iterator[None]:
    """Run the block with every edit in place (all compiled first: a stale one changes nothing)."""
    by_function: dict[types.FunctionType, list[Edit]] = {}
    for edit in edits:
        by_function.setdefault(_function(edit), []).append(edit)
    for function in by_function:
        _PRISTINE.setdefault(function, function.__code__)
    swaps = [(function, mutated_code(group, function)) for function, group in by_function.items()]
    originals = [(function, function.__code__) for function, _ in swaps]
    try:
        for function, code in swaps:
            function.__code__ = code
        decode_memo.clear_all()  # decodes remembered by the shipped code are not the mutant's
        yield
    finally:
        for function, code in reversed(originals):
            function.__code__ = code
        decode_memo.clear_all()  # nor are the mutant's decodes the shipped code's
