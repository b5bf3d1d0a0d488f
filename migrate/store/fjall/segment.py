"""A segment file (``partitions/<name>/segments/<id>``): trailer, metadata, block index,
data blocks -- read and written.

Layout (lsm-tree 2.10.4 ``src/segment/{trailer,file_offsets,writer/mod,writer/meta,
meta/mod,block_index/writer,block_index/full_index,forward_reader,multi_writer}.rs``,
our own words)::

    data blocks      from offset 0, back to back, in key order (key ascending, seqno
                     descending); the first two name 0 as their previous block, each later
                     one the offset of the block before it
    index blocks     at index_block_ptr: handles (end key, data block offset) of the data
                     blocks; their "previous block" offsets count from index_block_ptr
    top-level index  at tli_ptr: one block of handles (end key, absolute offset) of the
                     index blocks
    bloom filter     at bloom_ptr (0 when the segment has none), see :mod:`.bloom`
    metadata         at metadata_ptr: "LSM" 02, id, created_at (u128 BE, microseconds),
                     item/key/tombstone/range-tombstone counts, file_size (= the end of the
                     data blocks), uncompressed size (sum of the data blocks' item sizes),
                     data and index block size settings, data/index block counts,
                     compression (always written as 00 00 by this crate version, whatever
                     the blocks use), table type 0, lowest and highest seqno, key range
                     (u16 BE length + bytes, twice); all big endian
    trailer          the last 256 bytes: metadata, index, tli, bloom, range filter, range
                     tombstones and prefix pointers (u64 BE each), zeros, "LSM" 02

The writer cuts a data block as soon as its items' sizes (``ItemSize``: 8 + 1 + key +
value) reach the data block size (4096), so a block ends with the item that crossed it; an
index block likewise once its handles' ``end key + 32`` bytes (32 = the in-memory size of a
handle in this crate) reach the index block size.  A multi-segment writer starts a new
segment before the first version of a new key once the data written so far reaches its
target size.  These sizes decide the block and segment boundaries, which tests compare
with the real crate's own segments.

The reader checks every block's checksum as it reads it, and checks the trailer and the
metadata against each other and against the file's size when it opens a segment.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import lz4.block
import xxhash

from migrate.store.fjall import bloom
from migrate.store.fjall._api import Twin
from migrate.store.fjall.block import (
    HEADER_SIZE,
    SIZE_MISMATCH,
    TOMBSTONE,
    VALUE,
    WEAK_TOMBSTONE,
    BlockHeader,
    Handle,
    Item,
    ItemError,
    decode_handles,
    pack,
    parse_header,
    unpack,
)
from migrate.store.fjall.layout import COMPRESSION_LZ4, LSM_MAGIC, corrupt

_BLOCK = struct.Struct(">4sBBQQII")

TRAILER_SIZE = 256
_OFFSETS = struct.Struct(">7Q")
_META_FIXED = struct.Struct(">4sQ16s6Q4I2sBQQ")  # through the seqnos, before the key range
#: The in-memory size of a block handle in lsm-tree 2.10 (a 24-byte slice + a u64 offset),
#: which its index writer counts per handle when it decides where an index block ends.
HANDLE_OVERHEAD = 32
#: Read-ahead when walking data blocks in order.
CHUNK = 256 << 10
#: What a scan reads first from where it starts; each read doubles it up to :data:`CHUNK`.
FIRST_CHUNK = 16 << 10
INDEX_CACHE = 64  # decoded index blocks kept per open segment (point reads)
KEEP_BLOCK = 1 << 20  # a point read keeps the last data block decoded when it is this small
_MASK32 = 0xFFFFFFFF


@dataclass(frozen=True)
class Offsets:
    metadata: int
    index: int
    tli: int
    bloom: int
    range_filter: int = 0
    range_tombstones: int = 0
    prefix: int = 0

    def encode(self) -> bytes:
        raw = _OFFSETS.pack(self.metadata, self.index, self.tli, self.bloom,
                            self.range_filter, self.range_tombstones, self.prefix)  # fmt: skip
        return raw + bytes(TRAILER_SIZE - len(raw) - 4) + LSM_MAGIC


@dataclass(frozen=True)
class Metadata:
    id: int
    created_at: int
    item_count: int
    key_count: int
    tombstone_count: int
    range_tombstone_count: int
    file_size: int
    uncompressed_size: int
    data_block_size: int
    index_block_size: int
    data_block_count: int
    index_block_count: int
    compression: tuple[int, int]
    table_type: int
    seqno_min: int
    seqno_max: int
    key_min: bytes
    key_max: bytes

    def encode(self) -> bytes:
        fixed = _META_FIXED.pack(
            LSM_MAGIC, self.id, self.created_at.to_bytes(16, "big"), self.item_count,
            self.key_count, self.tombstone_count, self.range_tombstone_count, self.file_size,
            self.uncompressed_size, self.data_block_size, self.index_block_size,
            self.data_block_count, self.index_block_count, bytes(self.compression),
            self.table_type, self.seqno_min, self.seqno_max,
        )  # fmt: skip
        kr = struct.pack(">H", len(self.key_min)) + self.key_min
        return fixed + kr + struct.pack(">H", len(self.key_max)) + self.key_max


def _decode_metadata(raw: bytes, path: str, offset: int) -> Metadata:
    what = "segment metadata"
    if len(raw) < _META_FIXED.size + 4:
        corrupt(path, offset, what, f"{len(raw)} bytes, shorter than its fixed part")
    f = _META_FIXED.unpack_from(raw)
    if f[0] != LSM_MAGIC:
        corrupt(path, offset, what, "does not start with LSM 02")
    p = _META_FIXED.size
    keys = []
    for _ in range(2):
        if p + 2 > len(raw):
            corrupt(path, offset + p, what, "the key range ends early")
        (n,) = struct.unpack_from(">H", raw, p)
        if p + 2 + n > len(raw):
            corrupt(path, offset + p, what, "the key range ends early")
        keys.append(raw[p + 2 : p + 2 + n])
        p += 2 + n
    if p != len(raw):
        corrupt(path, offset + p, what, f"{len(raw) - p} bytes between metadata and trailer")
    comp = (f[13][0], f[13][1])
    if comp not in ((0, 0), (1, 0)):
        corrupt(path, offset + 104, what, f"unknown compression {f[13].hex()}")
    if f[14] != 0:
        corrupt(path, offset + 106, what, f"unknown table type {f[14]}")
    return Metadata(
        id=f[1], created_at=int.from_bytes(f[2], "big"), item_count=f[3], key_count=f[4],
        tombstone_count=f[5], range_tombstone_count=f[6], file_size=f[7],
        uncompressed_size=f[8], data_block_size=f[9], index_block_size=f[10],
        data_block_count=f[11], index_block_count=f[12], compression=comp, table_type=f[14],
        seqno_min=f[15], seqno_max=f[16], key_min=keys[0], key_max=keys[1],
    )  # fmt: skip


class Segment:
    """One open segment file (a descriptor held for its lifetime; read with ``pread``)."""

    def __init__(self, fd: int, path: str, segment_id: int, twin: Twin) -> None:
        self.fd, self.path, self.id, self.twin = fd, path, segment_id, twin
        # Point reads: decoded index blocks (a few KiB each, at most INDEX_CACHE of them) and
        # the last data block read (when small), so sorted lookups decode each block once.
        self._index_cache: dict[int, list[Handle]] = {}
        self._last_block: tuple[int, list[Item]] | None = None
        #: Data blocks decoded by :meth:`block_items` (point reads), for tests.
        self.blocks_decoded = 0
        try:
            self.size = os.fstat(fd).st_size
            self.offsets, self.meta = self._read_trailer()
            self.tli = self._read_tli()
            self._check_first_key()
        except BaseException:
            self.close()
            raise

    # -- opening ---------------------------------------------------------------------------

    def _pread(self, n: int, offset: int) -> bytes:
        try:
            data = os.pread(self.fd, n, offset)
        except OSError as exc:
            corrupt(self.path, offset, "segment", f"cannot be read ({exc.strerror})")
        return data

    def _read_trailer(self) -> tuple[Offsets, Metadata]:
        path, size = self.path, self.size
        if size < TRAILER_SIZE + _META_FIXED.size:
            corrupt(path, size, "segment trailer", f"a {size}-byte file has no room for one")
        at = size - TRAILER_SIZE
        raw = self._pread(TRAILER_SIZE, at)
        if raw[-4:] != LSM_MAGIC:
            corrupt(path, size - 4, "segment trailer", "does not end with LSM 02")
        if any(raw[_OFFSETS.size : -4]):
            corrupt(path, at + _OFFSETS.size, "segment trailer", "padding is not zero")
        off = Offsets(*_OFFSETS.unpack_from(raw))
        if off.range_filter or off.range_tombstones or off.prefix:
            corrupt(path, at + 32, "segment trailer", "range filter/tombstone/prefix pointers")
        meta_at = off.metadata
        ok = 0 < off.index <= off.tli < meta_at < at
        if off.bloom:
            ok = ok and off.tli < off.bloom < meta_at
        if not ok:
            corrupt(path, at, "segment trailer",
                    f"pointers out of order (index {off.index}, tli {off.tli}, bloom "
                    f"{off.bloom}, metadata {meta_at}, trailer {at})")  # fmt: skip
        meta = _decode_metadata(self._pread(at - meta_at, meta_at), path, meta_at)
        problem = None
        if meta.id != self.id:
            problem = f"id {meta.id} in a file named {self.id}"
        elif meta.file_size != off.index:
            problem = f"data size {meta.file_size} but the index starts at {off.index}"
        elif not 0 < meta.key_count <= meta.item_count or meta.tombstone_count > meta.item_count:
            problem = f"counts {meta.item_count}/{meta.key_count}/{meta.tombstone_count}"
        elif meta.range_tombstone_count:
            problem = "range tombstones"
        elif not (0 < meta.data_block_count <= off.index // HEADER_SIZE):
            problem = f"{meta.data_block_count} data blocks"
        elif meta.index_block_count == 0 or meta.seqno_min > meta.seqno_max:
            problem = f"{meta.index_block_count} index blocks, seqnos {meta.seqno_min}.."
        elif meta.key_min > meta.key_max:
            problem = "key range upside down"
        if problem is not None:
            corrupt(path, meta_at, "segment metadata", problem)
        return off, meta

    def _read_block(self, offset: int, limit: int, what: str) -> tuple[BlockHeader, bytes]:
        """The header and verified payload of the block at ``offset`` (ending by ``limit``)."""
        raw = self._pread(HEADER_SIZE, offset) if offset + HEADER_SIZE <= limit else b""
        header = parse_header(raw, self.path, offset, what)
        end = offset + HEADER_SIZE + header.stored_length
        if end > limit:
            corrupt(self.path, offset, what, f"block of {header.stored_length} bytes runs past "
                    f"its region (ends at {end}, region ends at {limit})")  # fmt: skip
        stored = self._pread(header.stored_length, offset + HEADER_SIZE)
        return header, unpack(header, stored, self.path, offset, what)

    def _handles(self, offset: int, limit: int, what: str) -> tuple[BlockHeader, list[Handle]]:
        header, payload = self._read_block(offset, limit, what)
        try:
            handles, size = decode_handles(payload)
        except ItemError as exc:
            exc.raise_for(self.path, offset, what)
        if size & _MASK32 != header.items_size:
            ItemError(SIZE_MISMATCH, 0).raise_for(self.path, offset, what)
        if not handles:
            corrupt(self.path, offset, what, "an index block without handles")
        return header, handles

    def _read_tli(self) -> list[Handle]:
        limit = self.offsets.bloom or self.offsets.metadata
        header, handles = self._handles(self.offsets.tli, limit, "top-level index block")
        if self.offsets.tli + HEADER_SIZE + header.stored_length != limit:
            corrupt(self.path, self.offsets.tli, "top-level index block",
                    "does not end where the next region starts")  # fmt: skip
        if len(handles) != self.meta.index_block_count:
            corrupt(self.path, self.offsets.tli, "top-level index block",
                    f"{len(handles)} handles for {self.meta.index_block_count} index blocks")
        for _key, at in handles:
            if not self.offsets.index <= at < self.offsets.tli:
                corrupt(self.path, self.offsets.tli, "top-level index block",
                        f"an index block offset {at} outside the index")  # fmt: skip
        if handles[-1][0] != self.meta.key_max:
            corrupt(self.path, self.offsets.tli, "top-level index block",
                    "its last end key is not the segment's last key")  # fmt: skip
        return handles

    def _check_first_key(self) -> None:
        """The metadata's key range decides which segments a seek visits: its last key is
        checked against the top-level index, its first key here against the first block."""
        for items in self.items(0):
            if not items or items[0][0] != self.meta.key_min:
                corrupt(self.path, self.offsets.metadata, "segment metadata",
                        "its first key is not the first block's first key")  # fmt: skip
            break

    # -- reading ---------------------------------------------------------------------------

    def index_block(self, i: int) -> list[Handle]:
        """The handles of index block ``i`` (from the top-level index; kept decoded, at most
        :data:`INDEX_CACHE` blocks per segment)."""
        cached = self._index_cache.get(i)
        if cached is not None:
            return cached
        start = self.tli[i][1]
        end = self.tli[i + 1][1] if i + 1 < len(self.tli) else self.offsets.tli
        handles = self._handles(start, end, "index block")[1]
        if len(self._index_cache) >= INDEX_CACHE:
            self._index_cache.clear()
        self._index_cache[i] = handles
        return handles

    def block_items(self, offset: int) -> list[Item]:
        """The items of the one data block at ``offset`` (checksum verified), for a point
        read: only that block is read, and the last one (when under :data:`KEEP_BLOCK`
        bytes) is kept decoded for the next lookup."""
        last = self._last_block
        if last is not None and last[0] == offset:
            return last[1]
        end = self.offsets.index
        header, payload = self._read_block(offset, end, "data block")
        self.blocks_decoded += 1
        try:
            items, size = self.twin.decode_items(payload)
        except ItemError as exc:
            exc.raise_for(self.path, offset, "data block")
        if size & _MASK32 != header.items_size:
            ItemError(SIZE_MISMATCH, 0).raise_for(self.path, offset, "data block")
        self._last_block = (offset, items) if len(payload) <= KEEP_BLOCK else None
        return items

    def seek(self, key: bytes) -> int:
        """The offset of the first data block that may hold ``key`` or a later key (the
        end of the data blocks if none)."""
        tli = self.tli
        lo, hi = 0, len(tli)
        while lo < hi:
            mid = (lo + hi) // 2
            if tli[mid][0] < key:
                lo = mid + 1
            else:
                hi = mid
        if lo == len(tli):
            return self.offsets.index
        handles = self.index_block(lo)
        a, b = 0, len(handles)
        while a < b:
            mid = (a + b) // 2
            if handles[mid][0] < key:
                a = mid + 1
            else:
                b = mid
        if a == len(handles):  # the index block's own end key says otherwise: damage
            corrupt(self.path, tli[lo][1], "index block",
                    "its end key is beyond every handle it holds")  # fmt: skip
        at = handles[a][1]
        if at >= self.offsets.index:
            corrupt(self.path, tli[lo][1], "index block", f"a data block offset {at} past the data")
        return at

    def blocks(self, start: int = 0) -> Iterator[tuple[int, BlockHeader, bytes]]:
        """``(offset, header, payload)`` of every data block from ``start`` on, in order,
        each one's checksum verified; reads ahead in chunks."""
        end = self.offsets.index
        pos = start
        buf = b""
        buf_at = start
        while pos < end:
            rel = pos - buf_at
            if rel + HEADER_SIZE > len(buf):
                buf = self._pread(min(max(CHUNK, HEADER_SIZE), end - pos), pos)
                buf_at, rel = pos, 0
            header = parse_header(buf[rel : rel + HEADER_SIZE], self.path, pos, "data block")
            total = HEADER_SIZE + header.stored_length
            if pos + total > end:
                corrupt(self.path, pos, "data block", f"block of {header.stored_length} bytes "
                        f"runs past the end of the data ({end})")  # fmt: skip
            if rel + total > len(buf):
                if total > CHUNK:
                    stored = self._pread(header.stored_length, pos + HEADER_SIZE)
                    buf, buf_at = b"", pos + total
                else:
                    buf = self._pread(min(CHUNK, end - pos), pos)
                    buf_at, rel = pos, 0
                    stored = buf[HEADER_SIZE:total]
            else:
                stored = buf[rel + HEADER_SIZE : rel + total]
            yield pos, header, unpack(header, stored, self.path, pos, "data block")
            pos += total

    def items(self, start: int = 0) -> Iterator[list[Item]]:
        """The items of each data block from ``start`` on (one list per block)."""
        decode = self.twin.decode_items
        for offset, header, payload in self.blocks(start):
            try:
                items, size = decode(payload)
            except ItemError as exc:
                exc.raise_for(self.path, offset, "data block")
            if size & _MASK32 != header.items_size:
                ItemError(SIZE_MISMATCH, 0).raise_for(self.path, offset, "data block")
            yield items

    def runs(
        self, start: int, mode: int, last: bytes | None = None
    ) -> Iterator[tuple[list[Any], bytes | None]]:
        """The data blocks from ``start`` on, a read-ahead chunk at a time (growing from
        :data:`FIRST_CHUNK` to :data:`CHUNK`) through the twin's
        block decoder: mode 0 every item, mode 1 the live rows given the ``last`` key seen
        before (see ``backend.Twin.blocks_decode``); yields ``(run, last)``.  A block the
        decoder stops at is read again block by block, which raises its named error."""
        end = self.offsets.index
        decode = self.twin.blocks_decode
        pos = start
        chunk = FIRST_CHUNK  # a scan that seeks often reads little; a long one ramps up
        while pos < end:
            want, chunk = chunk, min(2 * chunk, CHUNK)
            while True:
                buf = self._pread(min(want, end - pos), pos)
                out, rel, last, bad = decode(buf, 0, mode, last)
                if out:
                    yield out, last
                if bad:
                    self._raise_block(pos + rel)
                if rel:
                    break
                header = parse_header(buf[:HEADER_SIZE], self.path, pos, "data block")
                want = HEADER_SIZE + header.stored_length
                if pos + want > end:
                    corrupt(self.path, pos, "data block", f"block of {header.stored_length} "
                            f"bytes runs past the end of the data ({end})")  # fmt: skip
            pos += rel

    def _raise_block(self, offset: int) -> None:
        """Read the block at ``offset`` the slow way: it raises the block's named error."""
        for items in self.items(offset):
            del items
            break
        corrupt(self.path, offset, "data block", "rejected by the block decoder")

    def verify(self) -> dict[str, int]:
        """Read all of the segment and check it against itself: every block's checksum and
        items, key order, the metadata's counts and ranges, the block index, the
        previous-block offsets and the bloom filter (every key must be in it).  Raises
        FjallCorrupt on the first problem; returns what was read."""
        path = self.path
        meta = self.meta
        handles: list[Handle] = []
        items = tombstones = keys = blocks = uncompressed = 0
        seq_min, seq_max = (1 << 64) - 1, 0
        first: bytes | None = None
        last: tuple[bytes, int] | None = None
        bf = self.bloom_filter()
        previous = 0  # each block names the offset of the block before it (the first: 0)
        for offset, header, payload in self.blocks(0):
            try:
                decoded, size = self.twin.decode_items(payload)
            except ItemError as exc:
                exc.raise_for(path, offset, "data block")
            if size & _MASK32 != header.items_size:
                ItemError(SIZE_MISMATCH, 0).raise_for(path, offset, "data block")
            if not decoded:
                corrupt(path, offset, "data block", "a data block without items")
            if header.previous != previous:
                corrupt(path, offset, "data block", f"previous-block offset {header.previous}, "
                        f"expected {previous}")  # fmt: skip
            previous = offset
            if first is None:
                first = decoded[0][0]
            for key, _value, seqno, vtype in decoded:
                if last is not None and (key < last[0] or (key == last[0] and seqno >= last[1])):
                    corrupt(path, offset, "data block", "items out of order")
                if last is None or key != last[0]:
                    keys += 1
                    if bf is not None and not bf.contains(key):
                        corrupt(path, self.offsets.bloom, "bloom filter",
                                f"does not hold key {key.hex()}")  # fmt: skip
                last = (key, seqno)
                tombstones += vtype != VALUE
                seq_min, seq_max = min(seq_min, seqno), max(seq_max, seqno)
            items += len(decoded)
            blocks += 1
            uncompressed += header.items_size
            handles.append((decoded[-1][0], offset))
        assert last is not None and first is not None  # the trailer check saw data blocks
        facts = {
            "items": (meta.item_count, items), "keys": (meta.key_count, keys),
            "tombstones": (meta.tombstone_count, tombstones),
            "data blocks": (meta.data_block_count, blocks),
            "uncompressed size": (meta.uncompressed_size, uncompressed),
            "lowest seqno": (meta.seqno_min, seq_min), "highest seqno": (meta.seqno_max, seq_max),
            "first key": (meta.key_min, first), "last key": (meta.key_max, last[0]),
        }  # fmt: skip
        for name, (said, found) in facts.items():
            if said != found:
                shown = said.hex() if isinstance(said, bytes) else said
                seen = found.hex() if isinstance(found, bytes) else found
                corrupt(path, self.offsets.metadata, "segment metadata",
                        f"{name} {shown}, the blocks hold {seen}")  # fmt: skip
        pos = self.offsets.index
        indexed: list[Handle] = []
        previous = 0
        for i, (end_key, at) in enumerate(self.tli):
            if at != pos:
                corrupt(path, self.offsets.tli, "top-level index block",
                        f"index block {i} at {at}, expected {pos}")  # fmt: skip
            header, got = self._handles(at, self.offsets.tli, "index block")
            rel = at - self.offsets.index
            if header.previous != previous:
                corrupt(path, at, "index block", f"previous-block offset {header.previous}, "
                        f"expected {previous}")  # fmt: skip
            previous = rel
            if got[-1][0] != end_key:
                corrupt(path, at, "index block", "its end key differs from the top-level index")
            indexed += got
            pos = at + HEADER_SIZE + header.stored_length
        if pos != self.offsets.tli:
            corrupt(path, pos, "index block", "the index blocks do not reach the top-level index")
        if indexed != handles:
            bad = next((i for i, pair in enumerate(zip(indexed, handles, strict=False))
                        if pair[0] != pair[1]), min(len(indexed), len(handles)))  # fmt: skip
            corrupt(path, self.offsets.index, "index block",
                    f"handle {bad} does not name data block {bad} ({len(indexed)} handles for "
                    f"{len(handles)} data blocks)")  # fmt: skip
        return {"blocks": blocks + len(self.tli) + 1, "items": items}

    @property
    def filter_size(self) -> int:
        """The bytes of the stored bloom filter (0 when the segment has none)."""
        return self.offsets.metadata - self.offsets.bloom if self.offsets.bloom else 0

    def bloom_filter(self) -> bloom.Filter | None:
        if not self.offsets.bloom:
            return None
        at = self.offsets.bloom
        return bloom.decode(self._pread(self.offsets.metadata - at, at), self.path, at)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


# -- writing -------------------------------------------------------------------------------

TEN_BITS = bloom.BitsPerKey(10)


@dataclass
class Written:
    """What a finished segment holds (for the levels file and reports)."""

    id: int
    file_size: int
    items: int
    key_min: bytes
    key_max: bytes
    seqno_min: int
    seqno_max: int
    data_end: int


class SegmentWriter:
    """lsm-tree's segment writer: items in, one segment file out (see the module docs).

    ``out`` is an open binary file at position 0; :meth:`finish` writes the index, filter,
    metadata and trailer and flushes (the caller fsyncs and names the file).
    """

    def __init__(
        self,
        out: BinaryIO,
        segment_id: int,
        twin: Twin,
        *,
        data_block_size: int = 4096,
        index_block_size: int = 4096,
        compression: int = COMPRESSION_LZ4,
        bloom_policy: bloom.Policy | None = TEN_BITS,
        created_at: int | None = None,
        spill_dir: str | None = None,
    ) -> None:
        self.out, self.id, self.twin = out, segment_id, twin
        self.run_bytes = 0  # key+value bytes of the last add_blocks call
        self.data_block_size, self.index_block_size = data_block_size, index_block_size
        self.compression, self.bloom_policy = compression, bloom_policy
        self.created_at = created_at
        self.chunk: list[Item] = []
        self.chunk_size = 0
        self.file_pos = 0
        self.prev = (0, 0)
        self.items_written = self.keys = self.tombstones = self.blocks = 0
        self.uncompressed = 0
        self.first_key: bytes | None = None
        self.last_key: bytes | None = None
        self.current_key: bytes | None = None
        self.seqno_min, self.seqno_max = (1 << 64) - 1, 0
        # The keys' bloom hashes; past bloom.SPILL_KEYS of them in a file in spill_dir (if
        # given), read back when the filter is written.
        self.hashes = bloom.KeyHashes(spill_dir)
        # the index writer's state
        self.handles: list[Handle] = []
        self.handles_size = 0
        self.index_buf: list[bytes] = []
        self.index_pos = 0
        self.index_prev = (0, 0)
        self.tli: list[Handle] = []

    def write(self, key: bytes, value: bytes, seqno: int, vtype: int = VALUE) -> None:
        """Add one item (items arrive in key order, newest version first)."""
        if vtype != VALUE:
            self.tombstones += 1
            value = b""
        if key != self.current_key:
            self.keys += 1
            self.current_key = key
            if self.bloom_policy is not None:
                h1, h2 = bloom.key_hash(key)
                self.hashes.h1.append(h1)
                self.hashes.h2.append(h2)
        if self.first_key is None:
            self.first_key = key
        self.chunk.append((key, value, seqno, vtype))
        self.chunk_size += 9 + len(key) + len(value)
        if self.chunk_size >= self.data_block_size:
            self._spill()
        if seqno < self.seqno_min:
            self.seqno_min = seqno
        if seqno > self.seqno_max:
            self.seqno_max = seqno

    def add_blocks(self, blocks: list[tuple[Any, ...]], start: int, seqno: int,
                   target: int) -> int:
        """Add data blocks the twin's ``encode_rows`` made (values of new keys at one seqno,
        cut where :meth:`write` would have cut them: the same bytes as writing their rows one
        by one), from ``blocks[start]`` on, until the data written reaches ``target`` (where
        the multi-segment writer starts a new segment); returns the index of the first block
        not added.  One loop for many blocks: this is the bulk path."""
        assert not self.chunk, "add_blocks after write"
        compress = self.compression == COMPRESSION_LZ4
        lz4_compress, digest, header = lz4.block.compress, xxhash.xxh3_64_intdigest, _BLOCK.pack
        write, handles = self.out.write, self.handles
        pos, (prev0, prev1) = self.file_pos, self.prev
        hsize, isize = self.handles_size, self.index_block_size
        i, n = start, len(blocks)
        kv_bytes = 0
        hashes, spill_at = self.hashes, bloom.SPILL_KEYS
        if i < n and self.first_key is None:
            self.first_key = blocks[i][2]
        while i < n and pos < target:
            payload, size, _first, last, count, h1, h2 = blocks[i]
            stored = lz4_compress(payload, store_size=True) if compress else payload
            write(header(LSM_MAGIC, self.compression, 0, digest(stored), prev0, len(stored),
                         size))  # fmt: skip
            write(stored)
            handles.append((last, pos))
            hsize += len(last) + HANDLE_OVERHEAD
            if hsize >= isize:
                self.handles_size = hsize
                self._index_block()
                handles, hsize = self.handles, 0
            length = HEADER_SIZE + len(stored)
            prev0, prev1 = prev1, prev1 + length
            pos += length
            self.uncompressed += size
            kv_bytes += size - 9 * count
            self.items_written += count
            self.keys += count
            self.blocks += 1
            self.last_key = self.current_key = last
            if h1 is not None and self.bloom_policy is not None:
                hashes.h1.frombytes(h1)
                hashes.h2.frombytes(h2)
                if len(hashes.h1) >= spill_at:
                    hashes.spill()
            i += 1
        if i > start:
            self.seqno_min = min(self.seqno_min, seqno)
            self.seqno_max = max(self.seqno_max, seqno)
        self.file_pos, self.prev, self.handles_size = pos, (prev0, prev1), hsize
        self.run_bytes = kv_bytes
        return i

    def _spill(self) -> None:
        if not self.chunk:
            return
        if len(self.hashes.h1) >= bloom.SPILL_KEYS:
            self.hashes.spill()
        payload, size = self.twin.encode_items(self.chunk)
        self._emit(payload, size, self.chunk[-1][0], len(self.chunk))
        self.chunk = []
        self.chunk_size = 0

    def _emit(self, payload: bytes, size: int, last: bytes, count: int) -> None:
        block = pack(payload, self.compression, self.prev[0], size)
        self.out.write(block)
        self.uncompressed += size
        self._register(last, self.file_pos)
        self.file_pos += len(block)
        self.items_written += count
        self.blocks += 1
        self.prev = (self.prev[1], self.prev[1] + len(block))
        self.last_key = last

    def _register(self, end_key: bytes, offset: int) -> None:
        self.handles.append((end_key, offset))
        self.handles_size += len(end_key) + HANDLE_OVERHEAD
        if self.handles_size >= self.index_block_size:
            self._index_block()

    def _index_block(self) -> None:
        payload, size = self.twin.encode_handles(self.handles)
        block = pack(payload, self.compression, self.index_prev[0], size)
        self.index_buf.append(block)
        self.tli.append((self.handles[-1][0], self.index_pos))
        self.index_pos += len(block)
        self.index_prev = (self.index_prev[1], self.index_prev[1] + len(block))
        self.handles = []
        self.handles_size = 0

    @property
    def data_size(self) -> int:
        """Bytes of data blocks written so far (the multi-writer's rotation measure)."""
        return self.file_pos

    def finish(self) -> Written | None:
        """Write the rest of the segment; None (nothing written) when it holds no item."""
        self._spill()
        if self.items_written == 0:
            return None
        assert self.first_key is not None and self.last_key is not None
        index_ptr = self.file_pos
        if self.handles_size > 0:
            self._index_block()
        index_bytes = b"".join(self.index_buf)
        self.out.write(index_bytes)
        tli_ptr = index_ptr + len(index_bytes)
        tli = [(key, offset + index_ptr) for key, offset in self.tli]
        payload, size = self.twin.encode_handles(tli)
        tli_block = pack(payload, self.compression, 0, size)
        self.out.write(tli_block)
        pos = tli_ptr + len(tli_block)
        bloom_ptr = 0
        if len(self.hashes):
            assert self.bloom_policy is not None
            bloom_ptr = pos
            filt = self.hashes.filter(self.bloom_policy, self.twin.bloom_bits)
            self.hashes.close()
            self.out.write(filt)
            pos += len(filt)
        created = self.created_at
        if created is None:
            created = time.time_ns() // 1000
        meta = Metadata(
            self.id, created, self.items_written, self.keys, self.tombstones, 0, index_ptr,
            self.uncompressed, self.data_block_size, self.index_block_size, self.blocks,
            len(self.tli), (0, 0), 0, self.seqno_min, self.seqno_max, self.first_key,
            self.last_key,
        )  # fmt: skip
        self.out.write(meta.encode())
        self.out.write(Offsets(pos, index_ptr, tli_ptr, bloom_ptr).encode())
        self.out.flush()
        return Written(self.id, pos + len(meta.encode()) + TRAILER_SIZE, self.items_written,
                       self.first_key, self.last_key, self.seqno_min, self.seqno_max,
                       index_ptr)  # fmt: skip


__all__ = ["TOMBSTONE", "WEAK_TOMBSTONE", "Metadata", "Offsets", "Segment", "SegmentWriter",
           "Written"]  # fmt: skip
