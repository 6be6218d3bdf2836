"""Content digests of disk nodes: what two disks must share to be the same state.

Explore shares one recovery between identical post-crash states, so it needs a key for "this
disk, byte for byte".  ``repr`` of a whole image was the old key: it re-escaped every byte of
every file for every state.  Here each node is hashed from its raw bytes (every field of the
node, whatever fields it has), and a :class:`NodeDigests` remembers the digest of each node
of a recorded image by identity: images are immutable and share unchanged nodes, so most
nodes of most states are hashed once per exploration.
"""

from __future__ import annotations

import hashlib
from typing import Any

import attrs

from dsh_sim.adapters.simfs.disk import DiskImage


def _feed(h: Any, value: Any) -> None:
    """Feed ``value`` into ``h`` unambiguously (type tags and lengths; bytes as they are)."""
    if type(value) is bytes:
        h.update(b"B%d:" % len(value))
        h.update(value)
    elif attrs.has(type(value)):
        h.update(type(value).__name__.encode() + b"(")
        for field in attrs.fields(type(value)):
            _feed(h, getattr(value, field.name))
        h.update(b")")
    elif type(value) in (tuple, list):
        h.update(b"T%d:" % len(value))
        for item in value:
            _feed(h, item)
    else:
        text = repr(value).encode()
        h.update(b"R%d:" % len(text))
        h.update(text)


def node_digest(node: Any) -> bytes:
    h = hashlib.sha256()
    _feed(h, node)
    return h.digest()


class NodeDigests:
    """Digests of nodes, remembered by identity for nodes the caller keeps alive (the nodes
    of recorded images: remembering them pins nothing that is not pinned already)."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[Any, bytes]] = {}

    def remember(self, image: DiskImage) -> None:
        for _, node in image.nodes:
            self.of(node, keep=True)

    def of(self, node: Any, *, keep: bool = False) -> bytes:
        known = self._known.get(id(node))
        if known is not None and known[0] is node:
            return known[1]
        digest = node_digest(node)
        if keep:
            self._known[id(node)] = (node, digest)
        return digest

    def image(self, image: DiskImage) -> bytes:
        """The digest of a whole image: its nodes in inode order, and the next inode number."""
        h = hashlib.sha256(b"%d:" % image.next_ino)
        for ino, node in image.nodes:
            h.update(b"%d:" % ino)
            h.update(self.of(node))
        return h.digest()
