"""Content digests of disk nodes: what two disks must share to be the same state.

Explore shares one recovery between identical post-crash states, so it needs a key for "this
disk, byte for byte".  ``repr`` of a whole image was the old key: it re-escaped every byte of
every file for every state.  Here each node is hashed from its raw bytes (every field of the
node, whatever fields it has, each bytes field by its own SHA-256), and a
:class:`NodeDigests` remembers the digests of the nodes and contents of recorded images by
identity: images are immutable and share unchanged nodes and contents (a power cut keeps the
synced content object itself), so most bytes of most states are hashed once per exploration.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import attrs

from dsh_sim.adapters.simfs.disk import DiskImage

_FIELDS: dict[type, tuple[str, ...] | None] = {}  # a type -> its attrs field names (None: not attrs)


def _field_names(kind: type) -> tuple[str, ...] | None:
    """The attrs fields of ``kind`` in order, or None if it is no attrs class (remembered per
    type: whether a class is an attrs class, and its fields, are fixed when it is made)."""
    try:
        return _FIELDS[kind]
    except KeyError:
        names = _FIELDS[kind] = tuple(field.name for field in attrs.fields(kind)) if attrs.has(kind) else None
        return names


def _feed(h: Any, value: Any, of_bytes: Callable[[bytes], bytes]) -> None:
    """Feed ``value`` into ``h`` unambiguously (type tags and lengths); bytes by their digest.

    A tuple or list that holds no bytes and no attrs object directly goes in by its ``repr``
    (a directory's entries, a flag); the same value always takes the same path.  (An int's
    ``repr`` is its ``%d``; adjacent updates are joined: the bytes hashed are the same.)"""
    kind = type(value)
    if kind is bytes:
        h.update(b"B" + of_bytes(value))
        return
    names = _field_names(kind)
    if names is not None:
        h.update(kind.__name__.encode() + b"(")
        for name in names:
            _feed(h, getattr(value, name), of_bytes)
        h.update(b")")
        return
    if kind is int:
        text = b"%d" % value
        h.update(b"R%d:%s" % (len(text), text))
        return
    if kind is tuple or kind is list:
        for item in value:
            inner = type(item)
            if inner is bytes or _field_names(inner) is not None:
                h.update(b"T%d:" % len(value))
                for each in value:
                    _feed(h, each, of_bytes)
                return
    text = repr(value).encode()
    h.update(b"R%d:%s" % (len(text), text))


def _sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def node_digest(node: Any, of_bytes: Callable[[bytes], bytes] = _sha256) -> bytes:
    """SHA-256 over every field of ``node``, each bytes field replaced by its own SHA-256."""
    h = hashlib.sha256()
    _feed(h, node, of_bytes)
    return h.digest()


class NodeDigests:
    """Digests of nodes, remembered by identity for nodes the caller keeps alive (the nodes
    of recorded images: remembering them pins nothing that is not pinned already)."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[Any, bytes]] = {}  # nodes and bytes of recorded images

    def remember(self, image: DiskImage) -> None:
        for _, node in image.nodes:
            self.of(node, keep=True)

    def of(self, node: Any, *, keep: bool = False) -> bytes:
        known = self._known.get(id(node))
        if known is not None and known[0] is node:
            return known[1]
        fresh: dict[int, bytes] = {}  # a node made after a power cut holds one content twice

        def of_bytes(data: bytes) -> bytes:
            known = self._known.get(id(data))
            if known is not None and known[0] is data:
                return known[1]
            digest = fresh.get(id(data)) or _sha256(data)
            if keep:
                self._known[id(data)] = (data, digest)
            else:
                fresh[id(data)] = digest  # ``data`` lives as long as ``node``, so its id is stable
            return digest

        digest = node_digest(node, of_bytes)
        if keep:
            self._known[id(node)] = (node, digest)
        return digest

    def content(self, data: bytes) -> bytes:
        """The SHA-256 of ``data``, remembered by identity (the caller keeps ``data`` alive)."""
        known = self._known.get(id(data))
        if known is not None and known[0] is data:
            return known[1]
        digest = _sha256(data)
        self._known[id(data)] = (data, digest)
        return digest

    def image(self, image: DiskImage) -> bytes:
        """The digest of a whole image: its nodes in inode order, and the next inode number."""
        h = hashlib.sha256(b"%d:" % image.next_ino)
        for ino, node in image.nodes:
            h.update(b"%d:" % ino)
            h.update(self.of(node))
        return h.digest()
