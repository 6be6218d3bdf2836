"""Media corruption: a stored byte flips on the disk (bit rot), and the history says what
the damage is.

A flip reaches the durable and the volatile bytes alike (the medium holds both).  What the
judges need to know is whether the damage as a whole is detectable — a complete zstd frame
whose checksum no longer matches — or reads like a crash's torn tail; flips at one offset
cancel out.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from dsh_sim.adapters.simfs import Disk
from dsh_sim.adapters.simfs.frames import damage_detectable
from dsh_sim.engine.config import SimConfig
from dsh_sim.engine.faults import FaultRule
from dsh_sim.engine.gates import complete_frames_end
from dsh_sim.engine.history import Corruption


def flip(data: bytes, offsets: list[int]) -> bytes:
    """``data`` with bit 6 of each byte at ``offsets`` flipped (media corruption; an involution)."""
    out = bytearray(data)
    for offset in offsets:
        if offset < len(out):
            out[offset] ^= 0x40
    return bytes(out)


def as_written(data: bytes | None, corruptions: Sequence[Corruption], path: str) -> bytes | None:
    """``data`` (``path``'s bytes as read now) without the damage the medium holds: the bytes
    the runtime wrote.  What a writer acknowledged or found committed is what it wrote — a flip
    that a later flip of the same byte undoes must not enter it (the judges see the medium's
    damage through ``corruptions``, from the first damaged offset on)."""
    offsets = [c.offset for c in corruptions if c.path == path]
    return flip(data, offsets) if offsets and data is not None else data


def corrupt(disk: Disk, corruptions: list[Corruption], rule: FaultRule, config: SimConfig) -> None:
    """Flip one stored byte of the rule's file (the log by default) and record the damage in
    ``corruptions`` (the history's list, updated in place)."""
    path = rule.corrupt_path or config.log_path
    ino = disk.resolve(path)
    if ino is None or not disk.is_file(ino):  # (not there, or a link planted in its place)
        return
    node = disk.file(ino)
    if not node.durable:
        return
    offset = rule.corrupt_offset % len(node.durable)
    damaged = flip(node.durable, [offset])
    disk.nodes[ino] = attrs.evolve(node, durable=damaged, volatile=flip(node.volatile, [offset]))
    others = [c for c in corruptions if c.path != path]
    offsets = [c.offset for c in corruptions if c.path == path]
    if offset in offsets:  # the same bit flipped again: the byte is as it was, undamaged there
        offsets.remove(offset)
    else:
        offsets.append(offset)
    # the damage is judged whole: flips that are each detectable alone can together read like
    # a torn tail (one makes a complete frame claim more bytes than the file holds)
    pristine = flip(damaged, offsets)
    detectable = config.compression == "zstd" and damage_detectable(pristine, damaged)
    end = complete_frames_end(pristine)
    corruptions[:] = others + [Corruption(path, o, detectable and o < end) for o in offsets]
