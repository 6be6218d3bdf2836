"""Node digests (explore's key for "the same disk, byte for byte") hash what they always hashed.

``_feed`` takes shortcuts (an int's ``%d`` for its ``repr``, joined updates, whether a type
is an attrs class remembered per type); the reference below is the plain definition, and
every node kind, the empty and the edge values must hash the same through both.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from dsh_sim.adapters.simfs import digest
from dsh_sim.adapters.simfs.digest import NodeDigests, node_digest
from dsh_sim.adapters.simfs.disk import DirNode, FileNode, SymlinkNode, TruncateOp, WriteOp


def _reference_feed(h: Any, value: Any, of_bytes: Callable[[bytes], bytes]) -> None:
    kind = type(value)
    if kind is bytes:
        h.update(b"B")
        h.update(of_bytes(value))
    elif attrs.has(kind):
        h.update(kind.__name__.encode() + b"(")
        for field in attrs.fields(kind):
            _reference_feed(h, getattr(value, field.name), of_bytes)
        h.update(b")")
    elif (kind is tuple or kind is list) and any(type(item) is bytes or attrs.has(type(item)) for item in value):
        h.update(b"T%d:" % len(value))
        for item in value:
            _reference_feed(h, item, of_bytes)
    else:
        text = repr(value).encode()
        h.update(b"R%d:" % len(text))
        h.update(text)


def _reference(node: Any) -> bytes:
    h = hashlib.sha256()
    _reference_feed(h, node, lambda data: hashlib.sha256(data).digest())
    return h.digest()


@attrs.frozen
class _Other:
    """An attrs class the digest module has not met before."""

    flag: bool
    parts: list[Any]
    big: int


NODES = [
    FileNode(5),
    FileNode(7, b"abc", b"ab", (WriteOp(2, b"c"), TruncateOp(3), WriteOp(0, b"")), 10**18, 2**70),
    FileNode(0, b"\x00" * 100, b"", (), -1, 0),
    DirNode(1),
    DirNode(2, (("a", 3), ("b", 4)), (("a", 3),), 5, 6),
    SymlinkNode(9, "/target/../x", 1, 2),
    _Other(True, [b"x", 1, "y", None], -(2**65)),
    _Other(False, [("t", 1)], 0),
    (1, "a", None),
    [b"", _Other(True, [], 1)],
]


@pytest.mark.parametrize("node", NODES, ids=lambda n: type(n).__name__)
def test_node_digests_hash_what_the_plain_definition_hashes(node: Any) -> None:
    assert node_digest(node) == _reference(node)
    assert NodeDigests().of(node) == _reference(node)


def test_the_digest_sees_every_field_change() -> None:
    base = FileNode(7, b"abc", b"ab", (WriteOp(2, b"c"),), 10, 11)
    changed = [attrs.evolve(base, **{field.name: value}) for field, value in zip(attrs.fields(FileNode), (8, b"abd", b"a", (), 12, 10))]
    assert len({node_digest(n) for n in [base, *changed]}) == 1 + len(changed)
    assert node_digest(_Other(True, [1], 1)) != node_digest(_Other(True, [True], 1))  # 1 and True: their reprs


def test_the_remembered_kind_of_a_type_is_the_types_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether a type is an attrs class is remembered per type: a fresh memo and a warm one
    give the same digests, and a plain class is never taken for an attrs one."""

    class Plain:
        def __repr__(self) -> str:
            return "Plain()"

    monkeypatch.setattr(digest, "_FIELDS", {})
    cold = [node_digest(n) for n in NODES]
    assert digest._FIELDS[_Other] == ("flag", "parts", "big")
    assert [node_digest(n) for n in NODES] == cold
    assert node_digest(Plain()) == _reference(Plain())
    assert digest._FIELDS[Plain] is None
