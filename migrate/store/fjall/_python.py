"""The pure-Python twin of the hot paths (see :mod:`.backend`)."""

from __future__ import annotations

from array import array
from typing import Any

from migrate.store.fjall import bloom
from migrate.store.fjall.block import TOMBSTONE, decode_items, encode_items

NAME = "python"


def build_bloom(policy: Any, h1: array[int], h2: array[int]) -> bytes:
    return bloom.build(policy, zip(h1, h2, strict=True), len(h1))


def journal_markers(buf: bytes, pos: int) -> tuple[list[tuple[Any, ...]], int, int]:
    from migrate.store.fjall.journal import markers

    return markers(buf, pos)


def live(
    items: list[tuple[bytes, bytes, int, int]], last: bytes | None
) -> tuple[list[tuple[bytes, bytes]], bytes | None]:
    out: list[tuple[bytes, bytes]] = []
    for key, value, _seqno, vtype in items:
        if key == last:
            continue
        last = key
        if vtype < TOMBSTONE:
            out.append((key, value))
    return out, last


__all__ = ["NAME", "build_bloom", "decode_items", "encode_items", "journal_markers", "live"]
