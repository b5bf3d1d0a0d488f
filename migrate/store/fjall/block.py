"""A segment block: its 30-byte header, checksum, LZ4 framing, and the two item encodings
(data items and index handles).

Layout (lsm-tree 2.10.4 ``src/segment/block/{header,mod,checksum}.rs``, ``src/value.rs``,
``src/key.rs``, ``src/segment/block_index/block_handle.rs``; our own words)::

    header   "LSM" 02 | compression tag, level (01 00 = LZ4) | xxh3-64 of the stored bytes
             (u64 BE) | offset of the previous block (u64 BE) | stored length (u32 BE) |
             "uncompressed length" (u32 BE)
    stored   LZ4: u32 LE size of the payload, then one raw LZ4 block (lz4_flex's
             ``compress_prepend_size``; ``lz4.block.compress(payload, store_size=True)``
             makes the same framing); none: the payload itself
    payload  item count (u32 BE), then the items

A data item is ``seqno`` (LEB128 u64), value type (0 value, 1 tombstone, 2 weak tombstone),
key length (LEB128 u16), key, and for a value only: value length (LEB128 u32), value.  An
index handle is the block's offset (LEB128 u64), end-key length (LEB128 u16), end key.

The checksum covers the *stored* bytes (after compression), so it is checked before
anything is decompressed.  The header's "uncompressed length" is not the payload's length:
lsm-tree stores the sum of its item sizes (``ItemSize``: 8 + 1 + key + value for a data
item, 8 + end key for a handle), which the reader recomputes from the decoded items and
compares.  The prepended LZ4 size is bounded before anything is allocated: by what the items
could encode to (at most 19 bytes of framing per item beyond its ``ItemSize``) and by LZ4's
own limit of about 255 output bytes per input byte.

lz4_flex and the ``lz4`` package may compress the same payload to different bytes; both
decompress each other's blocks, and every comparison with the real crate's blocks is made
on the decompressed payloads.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import lz4.block
import xxhash

from migrate.store.fjall.layout import COMPRESSION_LZ4, COMPRESSION_NONE, LSM_MAGIC, corrupt

HEADER_SIZE = 30
_HEADER = struct.Struct(">4sBBQQII")
#: A data item: (key, value, seqno, value type).
Item = tuple[bytes, bytes, int, int]
#: An index handle: (end key, block offset).
Handle = tuple[bytes, int]

VALUE, TOMBSTONE, WEAK_TOMBSTONE = 0, 1, 2


class BlockHeader(NamedTuple):
    compression: int
    level: int
    checksum: int
    previous: int
    stored_length: int
    items_size: int


def parse_header(raw: bytes, path: str, offset: int, what: str) -> BlockHeader:
    """The header at the start of ``raw`` (at least 30 bytes) of the block at ``offset``."""
    if len(raw) < HEADER_SIZE:
        corrupt(path, offset, what, f"the file ends inside the block header ({len(raw)} bytes)")
    magic, comp, level, checksum, previous, stored, size = _HEADER.unpack_from(raw)
    if magic != LSM_MAGIC:
        corrupt(path, offset, what, f"block header does not start with LSM 02 ({magic.hex()})")
    if not (comp in (COMPRESSION_NONE, COMPRESSION_LZ4) and level == 0):
        corrupt(path, offset + 4, what, f"unknown block compression {comp:02x} {level:02x}")
    return BlockHeader(comp, level, checksum, previous, stored, size)


def max_payload(header: BlockHeader) -> int:
    """The most bytes a payload of this block can have (see the module docstring)."""
    by_items = 4 + header.items_size + 19 * (header.items_size // 8 + 1)
    by_lz4 = 255 * header.stored_length + 64
    return min(by_items, by_lz4) if header.compression == COMPRESSION_LZ4 else by_items


def unpack(header: BlockHeader, stored: bytes, path: str, offset: int, what: str) -> bytes:
    """The payload of a block: checksum verified, then decompressed within bounds."""
    if xxhash.xxh3_64_intdigest(stored) != header.checksum:
        corrupt(path, offset, what, "block checksum mismatch")
    if header.compression == COMPRESSION_NONE:
        return stored
    if len(stored) < 4:
        corrupt(path, offset + HEADER_SIZE, what, "LZ4 block shorter than its size prefix")
    (size,) = struct.unpack_from("<I", stored)
    if size > max_payload(header):
        corrupt(path, offset + HEADER_SIZE, what,
                f"LZ4 size prefix {size} exceeds what the block can hold")  # fmt: skip
    try:
        payload: bytes = lz4.block.decompress(stored)
    except lz4.block.LZ4BlockError as exc:
        corrupt(path, offset + HEADER_SIZE, what, f"LZ4 data does not decompress ({exc})")
    if len(payload) != size:
        corrupt(path, offset + HEADER_SIZE, what, "LZ4 data does not match its size prefix")
    return payload


def pack(payload: bytes, compression: int, previous: int, items_size: int) -> bytes:
    """A whole block (header + stored bytes) for ``payload``."""
    stored: bytes
    if compression == COMPRESSION_LZ4:
        stored = lz4.block.compress(payload, store_size=True)
    else:
        stored = payload
    header = _HEADER.pack(LSM_MAGIC, compression, 0, xxhash.xxh3_64_intdigest(stored),
                          previous, len(stored), items_size)  # fmt: skip
    return header + stored


# -- varints (LEB128, as varint-rs writes them) ---------------------------------------------


def varint(value: int) -> bytes:
    """The LEB128 bytes of ``value``."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL = [varint(i) for i in range(1 << 14)]


def varint_small(value: int) -> bytes:
    return _SMALL[value] if value < 16384 else varint(value)


# -- the items of a payload: errors are (code, position in the payload) ----------------------

TRUNCATED, BAD_VARINT, BAD_TYPE, TRAILING, SIZE_MISMATCH = 1, 2, 3, 4, 5

MESSAGES = {
    TRUNCATED: "the block's items end early",
    BAD_VARINT: "an over-long or out-of-range length/seqno varint",
    BAD_TYPE: "an unknown value type",
    TRAILING: "bytes after the last item",
    SIZE_MISMATCH: "the header's item size does not match the items",
}


class ItemError(Exception):
    """Raised by both twins' decoders: ``code`` (above) at ``pos`` in the payload."""

    def __init__(self, code: int, pos: int) -> None:
        super().__init__(code, pos)
        self.code, self.pos = code, pos

    def raise_for(self, path: str, offset: int, what: str) -> None:
        corrupt(path, offset, what, f"{MESSAGES[self.code]} (payload byte {self.pos})")


def _varint(buf: bytes, p: int, end: int, max_bytes: int, limit: int) -> tuple[int, int]:
    start = p
    value = shift = 0
    while True:
        if p >= end:
            raise ItemError(TRUNCATED, start)
        b = buf[p]
        p += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if p - start >= max_bytes:
            raise ItemError(BAD_VARINT, start)
    if value > limit:
        raise ItemError(BAD_VARINT, start)
    return value, p


_U64, _U32, _U16 = (1 << 64) - 1, (1 << 32) - 1, (1 << 16) - 1


def decode_items(payload: bytes) -> tuple[list[Item], int]:
    """The data items of a payload and the sum of their ``ItemSize`` (pure Python)."""
    end = len(payload)
    if end < 4:
        raise ItemError(TRUNCATED, 0)
    (count,) = struct.unpack_from(">I", payload)
    p = 4
    items: list[Item] = []
    size = 0
    for _ in range(count):
        if p >= end:
            raise ItemError(TRUNCATED, p)
        b = payload[p]
        if b < 0x80:
            seqno = b
            p += 1
        else:
            seqno, p = _varint(payload, p, end, 10, _U64)
        if p >= end:
            raise ItemError(TRUNCATED, p)
        vtype = payload[p]
        if vtype > 2:
            raise ItemError(BAD_TYPE, p)
        p += 1
        klen, p = _varint(payload, p, end, 3, _U16)
        if p + klen > end:
            raise ItemError(TRUNCATED, p)
        key = payload[p : p + klen]
        p += klen
        if vtype == VALUE:
            vlen, p = _varint(payload, p, end, 5, _U32)
            if p + vlen > end:
                raise ItemError(TRUNCATED, p)
            value = payload[p : p + vlen]
            p += vlen
        else:
            vlen, value = 0, b""
        size += 9 + klen + vlen
        items.append((key, value, seqno, vtype))
    if p != end:
        raise ItemError(TRAILING, p)
    return items, size


def encode_items(items: list[Item]) -> tuple[bytes, int]:
    """The payload of ``items`` and the sum of their ``ItemSize`` (pure Python)."""
    parts = [struct.pack(">I", len(items))]
    size = 0
    for key, value, seqno, vtype in items:
        if vtype == VALUE:
            parts += (varint_small(seqno), b"\x00", varint_small(len(key)), key,
                      varint(len(value)), value)  # fmt: skip
            size += 9 + len(key) + len(value)
        else:
            parts += (varint_small(seqno), bytes((vtype,)), varint_small(len(key)), key)
            size += 9 + len(key)
    return b"".join(parts), size


def decode_handles(payload: bytes) -> tuple[list[Handle], int]:
    """The index handles of a payload and the sum of their ``ItemSize``."""
    end = len(payload)
    if end < 4:
        raise ItemError(TRUNCATED, 0)
    (count,) = struct.unpack_from(">I", payload)
    p = 4
    out: list[Handle] = []
    size = 0
    for _ in range(count):
        offset, p = _varint(payload, p, end, 10, _U64)
        klen, p = _varint(payload, p, end, 3, _U16)
        if p + klen > end:
            raise ItemError(TRUNCATED, p)
        out.append((payload[p : p + klen], offset))
        p += klen
        size += 8 + klen
    if p != end:
        raise ItemError(TRAILING, p)
    return out, size


def encode_handles(handles: list[Handle]) -> tuple[bytes, int]:
    """The payload of index ``handles`` and the sum of their ``ItemSize``."""
    parts = [struct.pack(">I", len(handles))]
    size = 0
    for key, offset in handles:
        parts += (varint(offset), varint_small(len(key)), key)
        size += 8 + len(key)
    return b"".join(parts), size
