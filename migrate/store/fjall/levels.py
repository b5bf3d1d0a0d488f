"""A partition's ``levels`` file: which segments are live, level by level, and the order
lsm-tree keeps them in.

Layout (lsm-tree 2.10.4 ``src/level_manifest/mod.rs``, our own words): ``LSM`` 02, the
level count (u8), then per level the segment count (u32 BE) and the segment ids (u64 BE).

Order (``src/level_manifest/level.rs``): after every change lsm-tree recomputes, for each
level, whether its segments' key ranges are pairwise disjoint (ranges that share an end key
overlap) and sorts the level stably: a disjoint level by lowest key, any other level by
highest seqno, newest first.  It inserts a new segment by appending it and sorting again;
the file is written from that order, replaced atomically (temporary file in the partition
folder, fsync, rename, fsync of the folder: ``src/file.rs`` ``rewrite_atomic``).

A flush inserts its segment into L0 (``src/tree/mod.rs`` ``register_segments``), bulk
ingestion writes its segments into L0 and moves them all to the last level
(``src/tree/ingest.rs``); recovery refuses a listed segment whose file is missing and
deletes every segment file the file does not list (``Tree::recover_levels``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from migrate.store.fjall.layout import LSM_MAGIC, corrupt


def decode(data: bytes, path: str) -> list[list[int]]:
    """The segment ids of each level (strict: every byte accounted for)."""
    what = "levels file"
    if data[:4] != LSM_MAGIC:
        corrupt(path, 0, what, "does not start with LSM 02")
    if len(data) < 5:
        corrupt(path, len(data), what, "the level count is missing")
    count = data[4]
    if count == 0:
        corrupt(path, 4, what, "zero levels")
    p = 5
    levels: list[list[int]] = []
    seen: set[int] = set()
    for level in range(count):
        if p + 4 > len(data):
            corrupt(path, len(data), what, f"the file ends before level {level}")
        (n,) = struct.unpack_from(">I", data, p)
        if n > (len(data) - p - 4) // 8:
            corrupt(path, p, what, f"level {level} lists {n} segments, more than the file holds")
        ids = list(struct.unpack_from(f">{n}Q", data, p + 4))
        for i, sid in enumerate(ids):
            if sid in seen:
                corrupt(path, p + 4 + 8 * i, what, f"segment {sid} is listed twice")
            seen.add(sid)
        levels.append(ids)
        p += 4 + 8 * n
    if p != len(data):
        corrupt(path, p, what, f"{len(data) - p} bytes after the last level")
    return levels


def encode(levels: list[list[int]]) -> bytes:
    out = bytearray(LSM_MAGIC)
    out.append(len(levels))
    for ids in levels:
        out += struct.pack(f">I{len(ids)}Q", len(ids), *ids)
    return bytes(out)


@dataclass(frozen=True)
class Summary:
    """What the ordering rules need to know about a segment."""

    id: int
    key_min: bytes
    key_max: bytes
    seqno_max: int


def is_disjoint(segments: list[Summary]) -> bool:
    """lsm-tree's rule: no two key ranges overlap (a shared end key is an overlap)."""
    ranges = sorted((s.key_min, s.key_max) for s in segments)
    return all(a[1] < b[0] for a, b in zip(ranges, ranges[1:], strict=False))


def sort_level(segments: list[Summary]) -> list[Summary]:
    """The level in lsm-tree's order (a stable sort of the order given)."""
    if is_disjoint(segments):
        return sorted(segments, key=lambda s: s.key_min)
    return sorted(segments, key=lambda s: -s.seqno_max)


def insert(level: list[Summary], segment: Summary) -> list[Summary]:
    """The level after lsm-tree inserts ``segment`` (append, then sort)."""
    return sort_level([*level, segment])


def recovered(level: list[Summary]) -> list[Summary]:
    """The in-memory order lsm-tree rebuilds from a level as listed in the file."""
    out: list[Summary] = []
    for segment in level:
        out = insert(out, segment)
    return out
