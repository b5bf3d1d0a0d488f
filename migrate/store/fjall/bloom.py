"""A segment's bloom filter: how lsm-tree sizes it, fills it and stores it.

Facts (lsm-tree 2.10.4 ``src/bloom/mod.rs``, ``src/bloom/bit_array.rs``,
``src/segment/writer/mod.rs``, our own words):

* stored (no block header, no checksum) as ``LSM 02``, filter type 0, hash type 0, ``m``
  (bits, u64 BE), ``k`` (hash functions, u64 BE), then ``m / 8`` bytes; bit ``i`` is
  ``0x80 >> (i % 8)`` of byte ``i // 8``;
* a key's hash is XXH3-128 of the key: ``h1`` its high 64 bits, ``h2`` its low 64 bits; the
  ``k`` probes are ``h1 % m`` with ``h1 += h2; h2 += i`` (wrapping) after probe ``i``;
* one hash per distinct key, in write order (the segment's ``key_count``);
* sizing, computed in ``f32`` as the crate does (emulated here operation by operation):
  *bits per key* ``b``: ``bytes = ceil(n * b / 8)``, ``m = bytes * 8``,
  ``k = max(1, floor(b * ln 2))``; *false-positive rate* ``p``: ``m = ceil(-n ln p /
  (ln 2)^2 / 8) * 8``, ``k = max(1, floor((m // n) * ln 2))``.

Which policy a segment gets depends on who wrote it (``src/tree/mod.rs``,
``src/compaction/worker.rs``, ``src/tree/ingest.rs``): a flush uses a rate of 1e-5,
compaction into L0 1e-5, into L1 5e-4, deeper levels and bulk ingestion the partition's bits
per key (10); a negative bits-per-key setting writes no filter.  Point reads trust a
filter to skip a segment, as lsm-tree's do (it carries no checksum); scans never use one,
and ``check`` verifies that every key of the segment is in it.
"""

from __future__ import annotations

import math
import os
import struct
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import xxhash

from migrate.store.fjall.layout import LSM_MAGIC, corrupt

_MASK = (1 << 64) - 1


def _f32(x: float) -> float:
    """``x`` rounded to the nearest f32 (what one f32 operation yields)."""
    result: float = struct.unpack("<f", struct.pack("<f", x))[0]
    return result


_LN_2 = _f32(math.log(2))


@dataclass(frozen=True)
class BitsPerKey:
    bits: int


@dataclass(frozen=True)
class FpRate:
    rate: float


Policy = BitsPerKey | FpRate


def size(policy: Policy, n: int) -> tuple[int, int]:
    """``(m, k)`` of a filter for ``n`` keys (n > 0) under ``policy``."""
    if isinstance(policy, BitsPerKey):
        bpk = policy.bits
        nbytes = math.ceil(_f32(_f32(float(n * bpk)) / 8.0))
        return nbytes * 8, max(int(_f32(_f32(float(bpk)) * _LN_2)), 1)
    fpr = max(_f32(policy.rate), _f32(0.000001))
    ln2_squared = _f32(_LN_2 * _LN_2)
    numerator = _f32(_f32(float(n)) * _f32(math.log(fpr)))
    m_f = _f32(-(numerator / ln2_squared))
    m = int(_f32(math.ceil(_f32(m_f / 8.0)) * 8.0))
    bpk = m // n
    return m, max(int(_f32(_f32(float(bpk)) * _LN_2)), 1)


def key_hash(key: bytes) -> tuple[int, int]:
    """``(h1, h2)`` of a key."""
    h = xxhash.xxh3_128_intdigest(key)
    return h >> 64, h & _MASK


def build(policy: Policy, hashes: Iterable[tuple[int, int]], n: int) -> bytes:
    """The stored filter for ``n`` keys with these hashes (pure Python)."""
    m, k = size(policy, n)
    return encode(m, k, bits(m, k, hashes))


def bits(m: int, k: int, hashes: Iterable[tuple[int, int]]) -> bytes:
    """The ``m / 8`` bytes of a filter of ``m`` bits and ``k`` probes with these hashes."""
    out = bytearray(m // 8)
    for h1, h2 in hashes:
        for i in range(k):
            idx = h1 % m
            out[idx >> 3] |= 0x80 >> (idx & 7)
            h1 = (h1 + h2) & _MASK
            h2 = (h2 + i) & _MASK
    return bytes(out)


def encode(m: int, k: int, bits: bytes) -> bytes:
    return LSM_MAGIC + b"\x00\x00" + struct.pack(">QQ", m, k) + bits


@dataclass(frozen=True)
class Filter:
    m: int
    k: int
    bits: bytes

    def contains(self, key: bytes) -> bool:
        h1, h2 = key_hash(key)
        for i in range(self.k):
            idx = h1 % self.m
            if not self.bits[idx >> 3] & (0x80 >> (idx & 7)):
                return False
            h1 = (h1 + h2) & _MASK
            h2 = (h2 + i) & _MASK
        return True


#: Key hashes a segment writer keeps in memory before it moves them to its spill file
#: (16 bytes a key: 4 MiB).
SPILL_KEYS = 1 << 18

BitsFn = Callable[[int, int, "array[int]", "array[int]"], bytes]


class KeyHashes:
    """The bloom hashes of an open segment's keys (``h1``, ``h2``: arrays of u64, appended
    to by the writer), until its filter is built.

    The filter's size follows from the key count, known only when the segment is closed, so
    every hash waits until then: 16 bytes a key, some 23 MB for a 128 MiB segment of short
    rows.  With a ``spill_dir``, :meth:`spill` moves them, once :data:`SPILL_KEYS` are held,
    to a file in that folder that never has a name (``O_TMPFILE``: a crash leaves nothing in
    the folder, which may be a live partition's; where the file system cannot make one they
    stay in memory), and :meth:`filter` reads them back part by part: the filters of one
    ``(m, k)`` over parts of the keys OR together into the filter of all of them, so the
    stored bytes are the same as from one pass over every hash.
    """

    def __init__(self, spill_dir: str | None = None) -> None:
        self.h1: array[int] = array("Q")
        self.h2: array[int] = array("Q")
        self.spill_dir = spill_dir
        self.spilled = 0
        self._parts: list[int] = []  # the hash count of each part in the spill file
        self._fd: int | None = None
        self._end = 0

    def __len__(self) -> int:
        return self.spilled + len(self.h1)

    def spill(self) -> None:
        """Move the held hashes to the spill file if there are enough of them."""
        count = len(self.h1)
        if self.spill_dir is None or count < SPILL_KEYS:
            return
        if self._fd is None:
            try:
                self._fd = os.open(self.spill_dir, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
            except (OSError, AttributeError):  # no unnamed file here: keep them in memory
                self.spill_dir = None
                return
        for view in (memoryview(self.h1).cast("B"), memoryview(self.h2).cast("B")):
            while view:
                written = os.pwrite(self._fd, view, self._end)
                self._end += written
                view = view[written:]
        self._parts.append(count)
        self.spilled += count
        self.h1, self.h2 = array("Q"), array("Q")

    def _all(self) -> Iterator[tuple[array[int], array[int]]]:
        at = 0
        for count in self._parts:
            assert self._fd is not None
            h1, h2 = array("Q"), array("Q")
            h1.frombytes(os.pread(self._fd, 8 * count, at))
            h2.frombytes(os.pread(self._fd, 8 * count, at + 8 * count))
            if len(h1) != count or len(h2) != count:
                raise OSError(f"key hashes cut short in their spill file in {self.spill_dir}")
            at += 16 * count
            yield h1, h2
        if self.h1:
            yield self.h1, self.h2

    def filter(self, policy: Policy, bits_fn: BitsFn) -> bytes:
        """The stored filter of every key (at least one) under ``policy``; ``bits_fn(m, k,
        h1, h2)`` sets the bits of some of them (a twin's ``bloom_bits``)."""
        m, k = size(policy, len(self))
        acc: bytes | None = None
        for h1, h2 in self._all():
            part = bits_fn(m, k, h1, h2)
            if acc is None:
                acc = part
            else:
                both = int.from_bytes(acc, "big") | int.from_bytes(part, "big")
                acc = both.to_bytes(m // 8, "big")
        assert acc is not None, "a filter of no key"
        return encode(m, k, acc)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def decode(data: bytes, path: str, offset: int) -> Filter:
    """A stored filter that fills ``data`` exactly (FjallCorrupt otherwise)."""
    what = "bloom filter"
    if len(data) < 22:
        corrupt(path, offset, what, f"{len(data)} bytes, shorter than its header")
    if data[:4] != LSM_MAGIC:
        corrupt(path, offset, what, "does not start with LSM 02")
    if data[4] != 0 or data[5] != 0:
        corrupt(path, offset + 4, what, f"unknown filter/hash type {data[4]}/{data[5]}")
    m, k = struct.unpack_from(">QQ", data, 6)
    if m == 0 or m % 8 or m // 8 != len(data) - 22:
        corrupt(path, offset + 6, what, f"{m} bits do not fill its {len(data) - 22} bytes")
    if k == 0 or k > 64:
        corrupt(path, offset + 14, what, f"{k} hash functions")
    return Filter(m, k, data[22:])
