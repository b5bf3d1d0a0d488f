"""The pure-Python twin of the hot paths (see :mod:`.backend`)."""

from __future__ import annotations

from array import array
from typing import Any

from bbg_core.errors import FjallCorrupt
from migrate.store.fjall import bloom
from migrate.store.fjall.block import (
    HEADER_SIZE,
    TOMBSTONE,
    ItemError,
    decode_items,
    encode_handles,
    encode_items,
    parse_header,
    unpack,
)

NAME = "python"


def build_bloom(policy: Any, h1: array[int], h2: array[int]) -> bytes:
    return bloom.build(policy, zip(h1, h2, strict=True), len(h1))


def bloom_bits(m: int, k: int, h1: array[int], h2: array[int]) -> bytes:
    return bloom.bits(m, k, zip(h1, h2, strict=True))


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


def take(iterator: Any, max_rows: int, max_bytes: int) -> list[Any]:
    """The next rows of ``iterator`` (see ``backend.Twin.take``)."""
    out: list[Any] = []
    size = 0
    while len(out) < max_rows and size < max_bytes:
        row = next(iterator, _END)
        if row is _END:
            break
        out.append(row)
        if isinstance(row, tuple) and len(row) == 2 and isinstance(row[1], bytes):
            size += len(row[1])
    return out


_END = object()


def encode_rows(
    rows: list[Any], pos: int, seqno: int, block_size: int, last: bytes | None, final: bool,
    hash_fn: Any,
) -> tuple[list[tuple[Any, ...]], int, bytes | None, tuple[int, int] | None]:
    """The bulk path's blocks (see ``backend.Twin.encode_rows``)."""
    blocks: list[tuple[Any, ...]] = []
    start, size, seen = pos, 0, last
    error: tuple[int, int] | None = None
    n = len(rows)
    for i in range(pos, n):
        row = rows[i]
        code = 0
        if not (isinstance(row, tuple) and len(row) == 2 and isinstance(row[0], bytes)
                and isinstance(row[1], bytes)):  # fmt: skip
            code = 1
        else:
            key, value = row
            if not 0 < len(key) <= 0xFFFF:
                code = 2
            elif len(value) > 0xFFFFFFFF:
                code = 3
            elif seen is not None and key <= seen:
                code = 4
        if code:
            error, final = (code, i), False
            break
        seen = key
        size += 9 + len(key) + len(value)
        if size >= block_size:
            blocks.append(_block(rows, start, i + 1, seqno, hash_fn))
            start, size = i + 1, 0
    if final and n > start:
        blocks.append(_block(rows, start, n, seqno, hash_fn))
        start = n
    return blocks, start, rows[start - 1][0] if start > pos else last, error


def _block(rows: list[Any], start: int, end: int, seqno: int, hash_fn: Any) -> tuple[Any, ...]:
    chunk = rows[start:end]
    payload, size = encode_items([(k, v, seqno, 0) for k, v in chunk])
    h1 = h2 = None
    if hash_fn is not None:
        a, b = array("Q"), array("Q")
        for key, _ in chunk:
            digest = hash_fn(key)
            a.append(int.from_bytes(digest[:8], "big"))
            b.append(int.from_bytes(digest[8:], "big"))
        h1, h2 = a.tobytes(), b.tobytes()
    return payload, size, chunk[0][0], chunk[-1][0], len(chunk), h1, h2


def blocks_decode(
    buf: bytes, pos: int, mode: int, last: bytes | None
) -> tuple[list[Any], int, bytes | None, bool]:
    """Every complete data block of ``buf`` from ``pos`` (see ``backend.Twin``)."""
    out: list[Any] = []
    end = len(buf)
    while end - pos >= HEADER_SIZE:
        try:
            header = parse_header(buf[pos : pos + HEADER_SIZE], "", pos, "")
        except FjallCorrupt:
            return out, pos, last, True
        stored_end = pos + HEADER_SIZE + header.stored_length
        if stored_end > end:
            break
        try:
            payload = unpack(header, buf[pos + HEADER_SIZE : stored_end], "", pos, "")
            items, size = decode_items(payload)
        except (FjallCorrupt, ItemError):
            return out, pos, last, True
        if size & 0xFFFFFFFF != header.items_size:
            return out, pos, last, True
        if mode == 0:
            out += items
        else:
            rows, last = live(items, last)
            out += rows
        pos = stored_end
    return out, pos, last, False


__all__ = [
    "NAME", "blocks_decode", "bloom_bits", "build_bloom", "decode_items", "encode_handles",
    "encode_items", "encode_rows", "journal_markers", "live", "take",
]  # fmt: skip
