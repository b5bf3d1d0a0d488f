"""The C twin of the hot paths (``_fjall.c``, a stable-ABI extension): the only module that
touches it.  Importing this raises ImportError when the extension was not built (or is
stale); :mod:`.backend` then uses the pure-Python twin."""

from __future__ import annotations

import importlib
from array import array
from typing import Any

import lz4.block
import xxhash

from migrate.store.fjall import bloom
from migrate.store.fjall.block import ItemError

_ext: Any = importlib.import_module("migrate.store.fjall._fjall_c")
ABI = 4
if getattr(_ext, "abi", lambda: 0)() != ABI:
    raise ImportError("migrate.store.fjall._fjall_c is stale; rebuild with `pip install -e .`")

_ext.setup(xxhash.xxh3_64_intdigest, lz4.block.decompress)

NAME = "c"
blocks_decode = _ext.blocks_decode
take = _ext.take
encode_handles = _ext.encode_handles
_decode_items = _ext.decode_items
live = _ext.live
encode_items = _ext.encode_items
encode_rows = _ext.encode_rows
journal_markers = _ext.journal_markers
bloom_bits = _ext.bloom_bits


def decode_items(payload: bytes) -> tuple[list[tuple[bytes, bytes, int, int]], int]:
    got = _decode_items(payload)
    if got[0] is None:
        raise ItemError(got[1], got[2])
    items: list[tuple[bytes, bytes, int, int]] = got[0]
    size: int = got[1]
    return items, size


def build_bloom(policy: Any, h1: array[int], h2: array[int]) -> bytes:
    m, k = bloom.size(policy, len(h1))
    return bloom.encode(m, k, _ext.bloom_bits(m, k, h1, h2))


__all__ = [
    "NAME", "blocks_decode", "bloom_bits", "build_bloom", "decode_items", "encode_handles",
    "encode_items", "encode_rows", "journal_markers", "live", "take",
]  # fmt: skip
