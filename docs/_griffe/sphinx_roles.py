"""A griffe extension for the API page (docs/api.md): Sphinx roles in docstrings as code.

dsh-sim's docstrings cross-reference with Sphinx roles (``:class:`~dsh_sim.errors.InputError```);
mkdocstrings would print the role literally. This turns each into a code span: the last
component for ``~name``, the whole name otherwise.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const):`(~?)([^`]+)`")


def _code(match: re.Match[str]) -> str:
    short, name = match.groups()
    return f"`{name.rsplit('.', 1)[-1] if short else name}`"


class SphinxRoles(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(_code, obj.docstring.value)
