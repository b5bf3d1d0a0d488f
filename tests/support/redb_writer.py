"""A minimal writer of redb files (file format 3, what redb 3.x and 4.x write), for tests and
benchmarks only: the product reads redb files and never writes them.

It writes one committed state in a single pass: every table is bulk-loaded from rows given
in key order, the table tree names them, and both commit slots of the super-header point
at that state.  What it writes, learnt from redb's ``docs/design.md`` and checked against the
real crate (``tests/support/test_redb_writer.py`` runs ``redb-oracle-v4 dump`` and
``redb-oracle-v2 dump`` when they are there); the layouts are those our reader documents in
``importers/redb/{header,layout,btree,tables}.py``:

* super-header (one page): magic, god byte 4 (two-phase commit, primary slot 0), page size
  4096, region header pages 130 and region max data pages 2^20 (as redb 2.6.3 writes them;
  format 3 leaves the header pages unused: zeros here), zero full regions and the data pages
  of the one (trailing) region, region tracker 0; two commit slots
  of format version 3 (user root, no system tree, no freed tree, transaction id, XXH3-128
  slot checksum).  With no allocator state saved in a system tree, the crate rebuilds its
  allocator from the trees on open, as it does after a crash.
* B-tree pages: leaves packed greedily up to one page (an entry larger than a page gets a
  page of a higher order of its own), branches likewise; every page's XXH3-128 is stored in
  its parent (the root's in the table definition or the commit slot).
* table tree: ``&str`` name -> definition (kind 3, length, root header, variable-width key
  and value types with alignment 1 and their type names).

Only normal tables with variable-width keys and values (``&[u8]``, ``&str``) are written,
which is all a legacy cell store has.  Pages fill the regions in turn (redb's
``docs/design.md`` and ``src/tree_store/page_store/layout.rs``; our reader's
``importers/redb/layout.py``): a region is its header pages then up to ``region_pages`` data
pages (2^20 of 4 KiB: 4 GiB), every region but the last is full, and a page never crosses a
region (its number carries the region in bits 20..40, its index inside the region in bits
0..20).  An order-k page sits at a multiple of its own size inside its region; the order-0
pages skipped to align it, and the tail of a region a page did not fit in, are used by later
small pages.  The header names the full regions and the data pages of the trailing one.
``region_pages`` and ``header_pages`` are parameters so that tests write several regions in a
few pages (the real crate's ``multi_region`` fixture uses regions of 16 pages).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from pathlib import Path

import xxhash

from tests.redb.synth import leaf

MAGIC = b"redb\x1a\x0a\xa9\x0d\x0a"
FORMAT_VERSION = 3
GOD_TWO_PHASE = 4  # bit 2: two-phase commit; bit 0 (primary slot) left 0; bit 1 (recovery) 0
REGION_PAGES = 1 << 20  # region max data pages, as redb 2.x-4.x files store it
# Header pages of a region of 2^20 4-KiB pages.  Format 3 no longer uses them, but redb 2.6.3
# (which also reads format 3, and is what the reference checker links) asserts this count;
# redb 4.2 accepts it (redb 2.6.3's own format-3 files carry it).
REGION_HEADER_PAGES = 130
PAGE_SIZE = 4096
LEAF, BRANCH = 1, 2
TABLE_KIND = 3  # a normal table (format 2+)
_PAGE_ORDER_SHIFT = 59
_U32 = struct.Struct("<I")


def _checksum(data: bytes | memoryview) -> bytes:
    """redb's page/slot checksum: XXH3-128, seed 0, stored as a little-endian u128."""
    return xxhash.xxh3_128_intdigest(data).to_bytes(16, "little")


class _Pages:
    """Hands out page numbers region by region and writes pages at their offsets."""

    def __init__(self, fd: int, page_size: int, region_pages: int, header_pages: int) -> None:
        self.fd = fd
        self.page_size = page_size
        self.region_pages = region_pages
        self.header_pages = header_pages
        self.region = 0  # the region being filled; those before it are full
        self.next = 0  # its first never-used order-0 page
        # Order-0 pages left free (skipped to align a larger page, or the tail of a region a
        # larger page did not fit in), as (region, index).
        self.holes: list[tuple[int, int]] = []

    def write(self, data: bytes) -> int:
        """Store ``data`` in a page of the smallest order that holds it; its page number."""
        order = 0
        while self.page_size << order < len(data):
            order += 1
        span = 1 << order
        if span > self.region_pages:
            raise ValueError(f"a page of order {order} does not fit in a region")
        if order == 0 and self.holes:
            region, index = self.holes.pop()
        else:
            start = self.next if order == 0 else -(-self.next // span) * span
            if start + span > self.region_pages:
                # Does not fit in this region: its tail stays for small pages, the next
                # region begins.
                self.holes.extend((self.region, i)
                                  for i in range(self.region_pages - 1, self.next - 1, -1))
                if self.region + 1 >= 1 << 20:
                    raise ValueError("more regions than a page number can name")
                self.region, self.next, start = self.region + 1, 0, 0
            self.holes.extend((self.region, i) for i in range(start - 1, self.next - 1, -1))
            self.next = start + span
            region, index = self.region, start >> order
        offset = self.page_size * (
            1 + region * (self.header_pages + self.region_pages) + self.header_pages
            + (index << order)
        )
        os.pwrite(self.fd, data, offset)
        return (order << _PAGE_ORDER_SHIFT) | (region << 20) | index

    def regions(self) -> tuple[int, int]:
        """(full regions, data pages of the trailing region) for the super-header."""
        if self.next == self.region_pages:
            return self.region + 1, 0
        return self.region, max(self.next, 1)  # the region holds at least one page


class _Level:
    """Children of the level being built: (last key, page number, checksum)."""

    def __init__(self) -> None:
        self.keys: list[bytes] = []
        self.pages: list[int] = []
        self.sums: list[bytes] = []

    def add(self, key: bytes, page: int, checksum: bytes) -> None:
        self.keys.append(key)
        self.pages.append(page)
        self.sums.append(checksum)


def _leaf(pairs: list[tuple[bytes, bytes]]) -> bytes:
    """A leaf page body of variable-width keys and values (tests/redb/synth.py builds it)."""
    return leaf(pairs, None, None)


def _branch(keys: list[bytes], pages: list[int], sums: list[bytes]) -> bytes:
    """A branch over ``len(pages)`` children separated by ``keys`` (one fewer)."""
    n = len(keys)
    at = 8 + 24 * (n + 1) + 4 * n
    ends = []
    for key in keys:
        at += len(key)
        ends.append(at)
    return b"".join(
        [
            struct.pack("<BBHI", BRANCH, 0, n, 0),
            *sums,
            struct.pack(f"<{n + 1}Q", *pages),
            struct.pack(f"<{n}I", *ends),
            *keys,
        ]
    )


class _TreeBuilder:
    """Bulk-loads one B-tree from pairs in strictly increasing key order."""

    def __init__(self, pages: _Pages) -> None:
        self.pages = pages
        self.leaves = _Level()
        self.pending: list[tuple[bytes, bytes]] = []
        self.size = 4  # of the pending leaf
        self.length = 0
        self.last: bytes | None = None

    def add(self, key: bytes, value: bytes) -> None:
        if self.last is not None and key <= self.last:
            raise ValueError(
                f"keys must be strictly increasing: {key.hex()} after {self.last.hex()}"
            )
        self.last = key
        grow = 8 + len(key) + len(value)
        if self.pending and self.size + grow > self.pages.page_size:
            self._flush()
        self.pending.append((key, value))
        self.size += grow
        self.length += 1

    def _flush(self) -> None:
        page = _leaf(self.pending)
        self.leaves.add(self.pending[-1][0], self.pages.write(page), _checksum(page))
        self.pending = []
        self.size = 4

    def finish(self) -> tuple[int, bytes, int] | None:
        """(root page, root checksum, length), or None for an empty tree."""
        if self.pending:
            self._flush()
        level = self.leaves
        if not level.pages:
            return None
        limit = self.pages.page_size
        while len(level.pages) > 1:
            upper = _Level()
            i, count = 0, len(level.pages)
            while i < count:
                # Take children while the branch fits in a page (at least two of them).
                j, size = i + 1, 8 + 24
                while j < count and size + 24 + 4 + len(level.keys[j - 1]) <= limit:
                    size += 24 + 4 + len(level.keys[j - 1])
                    j += 1
                if j == i + 1:
                    j = i + 2  # a branch needs a key: accept a larger page
                if count - j == 1:
                    j = j - 1 if j - i > 2 else j + 1  # never leave one child alone
                j = min(j, count)
                page = _branch(level.keys[i : j - 1], level.pages[i:j], level.sums[i:j])
                upper.add(level.keys[j - 1], self.pages.write(page), _checksum(page))
                i = j
            level = upper
        return level.pages[0], level.sums[0], self.length


def _type_name(name: str) -> bytes:
    return b"\x01" + name.encode("utf-8")  # classification 1: a built-in ("internal") type


def _definition(root: tuple[int, bytes, int] | None, key_type: str, value_type: str) -> bytes:
    length = root[2] if root else 0
    if root is None:
        header = b"\x00" + bytes(32)
    else:
        header = b"\x01" + struct.pack("<Q", root[0]) + root[1] + struct.pack("<Q", root[2])
    key_name, value_name = _type_name(key_type), _type_name(value_type)
    return b"".join(
        [
            struct.pack("<BQ", TABLE_KIND, length),
            header,
            struct.pack("<BIBIIII", 0, 0, 0, 0, 1, 1, len(key_name)),
            key_name,
            value_name,
        ]
    )


class RedbWriter:
    """Write a new redb file: ``add_table`` for each table, then ``close``.

    ``with RedbWriter(path) as w: w.add_table("t", sorted_rows)``.  The file is created (an
    existing one is replaced) and is complete only after ``close``.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, region_pages: int = REGION_PAGES,
        header_pages: int = REGION_HEADER_PAGES,
    ) -> None:  # fmt: skip
        if not 0 < region_pages <= REGION_PAGES or region_pages & (region_pages - 1):
            # redb's regions hold a power of two of pages (Builder::set_region_size rounds
            # up to one), at most 2^20 (the bits of a page number's index).
            raise ValueError(f"region_pages must be a power of two in 1..{REGION_PAGES}")
        self.path = Path(path)
        self.page_size = page_size = PAGE_SIZE
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self._pages = _Pages(self._fd, page_size, region_pages, header_pages)
        self._tables: dict[str, bytes] = {}

    def __enter__(self) -> RedbWriter:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.close()
        else:
            os.close(self._fd)

    def add_table(
        self,
        name: str,
        rows: Iterable[tuple[bytes, bytes]],
        key_type: str = "&[u8]",
        value_type: str = "&[u8]",
    ) -> int:
        """Bulk-load table ``name`` from ``rows`` (strictly increasing keys); its row count."""
        if name in self._tables:
            raise ValueError(f"table {name!r} written twice")
        tree = _TreeBuilder(self._pages)
        add = tree.add
        for key, value in rows:
            add(key, value)
        root = tree.finish()
        self._tables[name] = _definition(root, key_type, value_type)
        return tree.length

    def close(self, transaction_id: int = 2) -> None:
        """Write the table tree and the super-header, then fsync and close the file."""
        table_tree = _TreeBuilder(self._pages)
        for name in sorted(self._tables, key=lambda n: n.encode("utf-8")):
            table_tree.add(name.encode("utf-8"), self._tables[name])
        root = table_tree.finish()
        pages = self._pages
        full, trailing = pages.regions()
        header = bytearray(self.page_size)
        header[: len(MAGIC)] = MAGIC
        header[9] = GOD_TWO_PHASE
        struct.pack_into(
            "<IIIIIQ", header, 12, self.page_size, pages.header_pages, pages.region_pages,
            full, trailing, 0,
        )
        # Slot 0 is the primary commit; slot 1 the same state one transaction earlier (the
        # crate reads slot 1 only if slot 0 failed, which two-phase commit rules out).
        for slot, txn in ((0, transaction_id), (1, transaction_id - 1)):
            raw = bytearray(112)
            raw[0] = FORMAT_VERSION
            if root is not None:
                raw[1] = 1
                struct.pack_into("<Q", raw, 8, root[0])
                raw[16:32] = root[1]
                struct.pack_into("<Q", raw, 32, root[2])
            struct.pack_into("<Q", raw, 104, txn)
            at = 64 + 128 * slot
            header[at : at + 112] = raw
            header[at + 112 : at + 128] = _checksum(bytes(raw))
        os.pwrite(self._fd, bytes(header), 0)
        region = pages.header_pages + pages.region_pages
        length = 1 + full * region + (pages.header_pages + trailing if trailing else 0)
        os.ftruncate(self._fd, self.page_size * length)
        os.fsync(self._fd)
        os.close(self._fd)
