"""A tiny writer of redb-format files (format 3, 2PC, one region) for adversarial tests.

It writes exactly the on-disk structures the reader parses (see ``importers/redb``), with
valid checksums, so a test can build shapes the real crate never writes (shared sub-trees,
chains deeper than any real tree, offsets out of order) and check the reader refuses them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import xxhash

PAGE = 4096
MAGIC = b"redb\x1a\x0a\xa9\x0d\x0a"


def checksum(data: bytes) -> int:
    return xxhash.xxh3_128_intdigest(data)


def leaf(pairs: list[tuple[bytes, bytes]], kw: int | None, vw: int | None) -> bytes:
    """A leaf page body (up to the end of its data) for fixed/variable widths."""
    n = len(pairs)
    head = 4 + 4 * n * ((kw is None) + (vw is None))
    key_ends, value_ends, pos = [], [], head
    for k, _ in pairs:
        pos += len(k)
        key_ends.append(pos)
    for _, v in pairs:
        pos += len(v)
        value_ends.append(pos)
    out = bytearray(struct.pack("<BBH", 1, 0, n))
    if kw is None:
        out += struct.pack(f"<{n}I", *key_ends)
    if vw is None:
        out += struct.pack(f"<{n}I", *value_ends)
    for k, _ in pairs:
        out += k
    for _, v in pairs:
        out += v
    return bytes(out)


def branch(children: list[tuple[int, int]], keys: list[bytes], kw: int | None) -> bytes:
    """A branch page body: ``children`` are (page number, checksum)."""
    n = len(keys)
    assert len(children) == n + 1
    out = bytearray(struct.pack("<BBHI", 2, 0, n, 0))
    for _, c in children:
        out += c.to_bytes(16, "little")
    for p, _ in children:
        out += struct.pack("<Q", p)
    pos = len(out) + (4 * n if kw is None else 0)
    if kw is None:
        for k in keys:
            pos += len(k)
            out += struct.pack("<I", pos)
    for k in keys:
        out += k
    return bytes(out)


def btree_header(page: int, csum: int, length: int) -> bytes:
    return struct.pack("<Q", page) + csum.to_bytes(16, "little") + struct.pack("<Q", length)


def definition(
    root: tuple[int, int, int] | None,
    length: int,
    kw: int | None = 8,
    vw: int | None = 8,
    key_type: str = "u64",
    value_type: str = "u64",
    multimap: bool = False,
) -> bytes:
    out = bytearray([4 if multimap else 3])
    out += struct.pack("<Q", length)
    if root is None:
        out += b"\x00" + bytes(32)
    else:
        out += b"\x01" + btree_header(*root)
    out += struct.pack("<BI", kw is not None, kw or 0)
    out += struct.pack("<BI", vw is not None, vw or 0)
    out += struct.pack("<II", 1, 1)
    kt = b"\x01" + key_type.encode()
    out += struct.pack("<I", len(kt)) + kt + b"\x01" + value_type.encode()
    return bytes(out)


@dataclass
class File:
    """Pages are order-0 data pages 0..n-1 of region 0 (page number = index)."""

    pages: list[bytes] = field(default_factory=list)

    def add(self, body: bytes) -> tuple[int, int]:
        """Store a page; returns (page number, checksum of the body)."""
        assert len(body) <= PAGE
        self.pages.append(body)
        return len(self.pages) - 1, checksum(body)

    def build(self, table_tree: tuple[int, int, int] | None, spare_pages: int = 0) -> bytes:
        n = len(self.pages) + spare_pages
        header = bytearray(PAGE)
        header[:9] = MAGIC
        header[9] = 4  # primary slot 0, two-phase commit
        struct.pack_into("<5I", header, 12, PAGE, 0, 1 << 20, 0, n)
        slot = bytearray(128)
        slot[0] = 3
        if table_tree is not None:
            slot[1] = 1
            slot[8:40] = btree_header(*table_tree)
        struct.pack_into("<Q", slot, 104, 7)
        slot[112:128] = checksum(bytes(slot[:112])).to_bytes(16, "little")
        header[64:192] = slot
        header[192:320] = slot
        body = b"".join(p.ljust(PAGE, b"\x00") for p in self.pages)
        return bytes(header) + body + bytes(PAGE * spare_pages)


def u64(i: int) -> bytes:
    return struct.pack("<Q", i)


def single_table(f: File, name: str, root: tuple[int, int, int] | None, length: int) -> bytes:
    """A file whose table tree holds one table ``name`` (u64 -> u64)."""
    tt = f.add(leaf([(name.encode(), definition(root, length))], None, None))
    return f.build((tt[0], tt[1], 1))


def large_table_file(leaves: int, value_len: int = 4000) -> bytes:
    """A valid file with one ``u64 -> &[u8]`` table of ``leaves`` one-entry leaves (about
    ``leaves`` pages of data) under a two-level branch tree: big enough that reading it
    whole would show in a process's memory."""
    f = File()
    fan = 100
    nodes = []
    for i in range(leaves):
        value = (i.to_bytes(8, "little") * (value_len // 8 + 1))[:value_len]
        nodes.append((f.add(leaf([(u64(i), value)], 8, None)), i))
    while len(nodes) > 1:
        level = []
        for at in range(0, len(nodes), fan):
            group = nodes[at : at + fan]
            children = [n for n, _ in group]
            keys = [u64(last) for _, last in group[:-1]]
            level.append((f.add(branch(children, keys, 8)), group[-1][1]))
        nodes = level
    (root, csum), _ = nodes[0]
    defn = definition((root, csum, leaves), leaves, 8, None, "u64", "&[u8]")
    tt = f.add(leaf([(b"big", defn)], None, None))
    return f.build((tt[0], tt[1], 1))


def big_page_file(path: str, order: int, *, sparse: bool = True) -> int:
    """Write a valid file whose one table's root is a leaf page of ``order`` (``PAGE << order``
    bytes) holding one small u64 -> u64 entry; returns the raw page number.

    ``sparse``: only the page's first bytes are written and the rest of the file is a hole
    (the file claims a huge page but holds a few KiB); else the page is written out in full.
    """

    body = leaf([(u64(1), u64(2))], 8, 8)
    raw = (order << 59) | 1  # index 1 of its order: right after the table tree's page
    size = PAGE << order
    data_pages = 2 * (1 << order)
    tt_body = leaf([(b"big", definition((raw, checksum(body), 1), 1))], None, None)
    f = File()
    tt = f.add(tt_body)
    head = f.build((tt[0], tt[1], 1), spare_pages=data_pages - 1)[: 2 * PAGE]
    start = PAGE + size  # super-header page, then page index 1 of this order
    with open(path, "wb") as out:
        out.write(head)
        out.seek(start)
        out.write(body if sparse else body.ljust(size, b"\x00"))
        out.truncate(PAGE + data_pages * PAGE)
    return raw
