"""B-tree pages: reading, Merkle verification, and streaming iteration in stored order.

Facts from redb ``src/tree_store/btree_base.rs`` (identical in formats 1, 2 and 3)::

    leaf   (type 1): u8 type, u8 pad, u16 n, [u32 key_end]*n if keys are variable,
                     [u32 value_end]*n if values are variable, keys, values
    branch (type 2): u8 type, u8 pad, u16 n (keys), u32 pad, [u128 child checksum]*(n+1),
                     [u64 child page]*(n+1), [u32 key_end]*n if keys are variable, keys

Offsets are absolute within the page.  A page's checksum is XXH3-128 of its bytes up to the
end of the last value (leaf) or last key (branch); the parent stores it (the root's is stored
in the commit slot or the table definition).  Every page read here is checked against it.
"""

from __future__ import annotations

import bisect
import mmap
import os
import struct
from collections.abc import Iterator
from typing import Any

from bbg_core.errors import RedbCorrupt, SourceError
from importers.redb.header import xxh3_128
from importers.redb.layout import Layout, page_label

LEAF = 1
BRANCH = 2
MAX_DEPTH = 64
Pair = tuple[bytes, bytes]
SHRUNK = "the file ended inside a page (did it shrink while being read?)"
#: Page buffers one open file may hold at once, by default (``open_redb(memory_budget=)``).
MEMORY_BUDGET = 1 << 30
OVER_BUDGET = "page of {a} bytes is over the reader's memory budget of {b} bytes per open file"
IN_A_HOLE = (
    "page of {a} bytes lies in a hole of a sparse file: the file holds only {b} bytes on disk"
)

_U16 = struct.Struct("<H")


class Budget:
    """How many more pages one walk may visit.

    In a well-formed file no page belongs to two trees or appears twice in one, so a walk never
    visits more pages than the file holds; a walk that would is looping through a cycle or a
    shared sub-tree, and is stopped.
    """

    def __init__(self, pages: int) -> None:
        self.left = pages


class PageReader:
    """Reads bounds-checked pages of the file, and builds precise corruption errors.

    Pages are read with ``pread`` from ``fd``, not sliced from the mapping ``mm`` (which only
    serves the super-header): every page of a mapping the process touches counts towards its
    RSS (and the kernel maps 64 KiB around each fault), so a scan would grow RSS by the size
    of the file; read pages are freed as soon as they are consumed.
    """

    def __init__(
        self,
        mm: mmap.mmap,
        fd: int,
        file_size: int,
        layout: Layout,
        path: str,
        *,
        on_disk: int | None = None,
        budget: int = MEMORY_BUDGET,
    ) -> None:
        self.mm = mm
        self.fd = fd
        self.file_size = file_size
        #: Bytes the file really holds (its allocated blocks; a sparse file holds fewer than
        #: its length), and the most page memory one open may take: no buffer is sized by a
        #: number read from the file beyond these (:meth:`check_span`).
        self.on_disk = file_size if on_disk is None else on_disk
        self.budget = budget
        self.layout = layout
        self.path = path
        #: Pages read so far (both paths count them; tests use it to see what a walk read).
        self.pages_read = 0
        #: Branch pages the C path's point lookups took from their cache of verified pages
        #: instead of reading them (``pages_read + pages_cached`` is what the pure path reads).
        self.pages_cached = 0
        #: The C path's handle on this file (set by ``importers.redb._c``).
        self.native: Any = None
        #: Set when the file is closed: reading then raises ValueError (the descriptor number
        #: may already belong to another file).
        self.closed = False

    def check_open(self) -> None:
        """ValueError if the file has been closed."""
        if self.closed:
            raise ValueError(f"{self.path}: the redb file is closed")

    def read_failed(self, errno: int) -> SourceError:
        """The error for a page read that the operating system refused."""
        return SourceError(f"{self.path}: cannot read: {os.strerror(errno)}", path=self.path)

    def corrupt(
        self,
        what: str,
        *,
        table: str | None = None,
        page: int | None = None,
        offset: int | None = None,
    ) -> RedbCorrupt:
        """A :class:`RedbCorrupt` whose message names the file, the problem and where."""
        where = []
        if table is not None:
            where.append(f"table {table!r}")
        if page is not None:
            where.append(f"page {page_label(page)}")
        if offset is not None:
            where.append(f"offset {offset}")
        suffix = f" ({', '.join(where)})" if where else ""
        context: dict[str, Any] = {"path": self.path}
        if table is not None:
            context["table"] = table
        if page is not None:
            context["page"] = page_label(page)
        if offset is not None:
            context["offset"] = offset
        return RedbCorrupt(f"{self.path}: corrupt redb file: {what}{suffix}", **context)

    def check_span(
        self, start: int, end: int, *, table: str | None = None, page: int | None = None
    ) -> None:
        """RedbCorrupt unless ``end - start`` bytes may be read into memory: within the
        per-open budget, and -- when longer than all the file holds on disk -- not lying in a
        hole of a sparse file (a page that size must have been written out)."""
        size = end - start
        if size > self.budget:
            what = OVER_BUDGET.format(a=size, b=self.budget)
            raise self.corrupt(what, table=table, page=page, offset=start)
        if size > self.on_disk and _has_hole(self.fd, start, end):
            what = IN_A_HOLE.format(a=size, b=self.on_disk)
            raise self.corrupt(what, table=table, page=page, offset=start)

    def page(self, raw: int, table: str) -> tuple[bytes, int]:
        """The bytes of page ``raw`` and its file offset, bounds-checked (not yet verified)."""
        span = self.layout.page_span(raw)
        if span is None:
            raise self.corrupt("page number outside the file's regions", table=table, page=raw)
        start, end = span
        if end > self.file_size:
            raise self.corrupt(
                f"page ends at {end}, beyond the end of the file ({self.file_size} bytes)",
                table=table,
                page=raw,
                offset=start,
            )
        self.check_span(start, end, table=table, page=raw)
        self.check_open()
        try:
            data = os.pread(self.fd, end - start, start)
        except OSError as exc:
            raise self.read_failed(exc.errno or 0) from exc
        if len(data) != end - start:
            raise self.corrupt(SHRUNK, table=table, page=raw, offset=start)
        self.pages_read += 1
        return data, start


def _has_hole(fd: int, start: int, end: int) -> bool:
    """True when the file has a hole (bytes never written) inside ``[start, end)``; False
    when it has none or the file system cannot say."""
    seek_hole = getattr(os, "SEEK_HOLE", None)
    if seek_hole is None:
        return False
    try:
        return os.lseek(fd, start, seek_hole) < end
    except OSError:
        return False


def _ends(buf: bytes, at: int, count: int) -> tuple[int, ...]:
    return struct.unpack_from(f"<{count}I", buf, at)


def _monotonic(start: int, ends: tuple[int, ...] | list[int], limit: int) -> bool:
    prev = start
    for end in ends:
        if end < prev:
            return False
        prev = end
    return prev <= limit


def leaf_layout(
    buf: bytes, base: int, length: int, kw: int | None, vw: int | None
) -> tuple[list[int], list[int], int] | str:
    """Key and value end offsets of a leaf at ``buf[base:base+length]`` (offsets relative to
    ``base``), plus the end of its data; or a string saying what is wrong."""
    if length < 4:
        return f"leaf of {length} bytes is shorter than its 4-byte header"
    (n,) = _U16.unpack_from(buf, base + 2)
    pos = 4
    header_end = pos + 4 * n * ((kw is None) + (vw is None))
    if header_end > length:
        return f"leaf offset table ({n} entries) runs past the page"
    if kw is None:
        key_ends = list(_ends(buf, base + pos, n))
        pos += 4 * n
    if vw is None:
        value_ends = list(_ends(buf, base + pos, n))
        pos += 4 * n
    if kw is not None:
        key_ends = [pos + kw * (i + 1) for i in range(n)]
    last_key = key_ends[-1] if n else pos
    if vw is not None:
        value_ends = [last_key + vw * (i + 1) for i in range(n)]
    end = value_ends[-1] if n else pos
    if end > length:
        return f"leaf data ends at {end}, beyond the page ({length} bytes)"
    if not _monotonic(pos, key_ends, last_key) or not _monotonic(last_key, value_ends, end):
        return "leaf key/value offsets are not in order"
    return key_ends, value_ends, end


def iter_leaf(
    buf: bytes, base: int, length: int, kw: int | None, vw: int | None
) -> list[tuple[bytes, bytes]] | str:
    """All pairs of the leaf at ``buf[base:base+length]``, or a string saying what is wrong."""
    parsed = leaf_layout(buf, base, length, kw, vw)
    if isinstance(parsed, str):
        return parsed
    key_ends, value_ends, _ = parsed
    n = len(key_ends)
    k_prev = 4 + 4 * n * ((kw is None) + (vw is None))
    v_prev = key_ends[-1] if n else k_prev
    out: list[tuple[bytes, bytes]] = []
    for k_end, v_end in zip(key_ends, value_ends, strict=True):
        out.append((buf[base + k_prev : base + k_end], buf[base + v_prev : base + v_end]))
        k_prev = k_end
        v_prev = v_end
    return out


class Tree:
    """One B-tree: its root, key/value widths, and the table it belongs to (for errors)."""

    def __init__(
        self,
        reader: PageReader,
        root_page: int,
        root_checksum: int,
        key_width: int | None,
        value_width: int | None,
        table: str,
        budget: Budget | None = None,
    ) -> None:
        self.reader = reader
        self.budget = budget if budget is not None else Budget(reader.layout.data_pages + 1)
        self.root_page = root_page
        self.root_checksum = root_checksum
        self.key_width = key_width
        self.value_width = value_width
        self.table = table

    def _checksum_error(self, raw: int, offset: int, expected: int, actual: int) -> RedbCorrupt:
        return self.reader.corrupt(
            f"checksum mismatch: parent stores {expected:032x}, page hashes to {actual:032x}",
            table=self.table,
            page=raw,
            offset=offset,
        )

    def _branch(self, buf: bytes, raw: int, offset: int, expected: int) -> list[tuple[int, int]]:
        """Verify a branch page and return its children ``(page, checksum)`` in order."""
        reader = self.reader
        (n,) = _U16.unpack_from(buf, 2)
        if n == 0:
            raise reader.corrupt(
                "branch page with no keys", table=self.table, page=raw, offset=offset
            )
        children = n + 1
        keys_at = 8 + 24 * children
        if self.key_width is None:
            if keys_at + 4 * n > len(buf):
                raise reader.corrupt(
                    "branch offset table runs past the page",
                    table=self.table,
                    page=raw,
                    offset=offset,
                )
            key_ends = _ends(buf, keys_at, n)
            start = keys_at + 4 * n
            end = key_ends[-1]
            ordered = _monotonic(start, key_ends, end)
        else:
            end = keys_at + self.key_width * n
            ordered = True
        if end > len(buf) or not ordered:
            raise reader.corrupt(
                f"branch keys end at {end}, beyond the page ({len(buf)} bytes)"
                if ordered
                else "branch key offsets are not in order",
                table=self.table,
                page=raw,
                offset=offset,
            )
        actual = xxh3_128(memoryview(buf)[:end])
        if actual != expected:
            raise self._checksum_error(raw, offset, expected, actual)
        sums = [int.from_bytes(buf[8 + 16 * i : 24 + 16 * i], "little") for i in range(children)]
        pages = struct.unpack_from(f"<{children}Q", buf, 8 + 16 * children)
        return list(zip(pages, sums, strict=True))

    def _leaf(self, buf: bytes, raw: int, offset: int, expected: int) -> list[tuple[bytes, bytes]]:
        reader = self.reader
        (n,) = _U16.unpack_from(buf, 2)
        if n == 0:
            raise reader.corrupt(
                "leaf page with no entries", table=self.table, page=raw, offset=offset
            )
        parsed = leaf_layout(buf, 0, len(buf), self.key_width, self.value_width)
        if isinstance(parsed, str):
            raise reader.corrupt(parsed, table=self.table, page=raw, offset=offset)
        end = parsed[2]
        actual = xxh3_128(memoryview(buf)[:end])
        if actual != expected:
            raise self._checksum_error(raw, offset, expected, actual)
        pairs = iter_leaf(buf, 0, len(buf), self.key_width, self.value_width)
        assert not isinstance(pairs, str)
        return pairs

    def _branch_keys(self, buf: bytes) -> list[bytes]:
        """The separator keys of a verified branch page (key i is the last key of child i)."""
        (n,) = _U16.unpack_from(buf, 2)
        keys_at = 8 + 24 * (n + 1)
        if self.key_width is None:
            ends = _ends(buf, keys_at, n)
            start = keys_at + 4 * n
        else:
            start = keys_at
            ends = tuple(keys_at + self.key_width * (i + 1) for i in range(n))
        keys = []
        for end in ends:
            keys.append(buf[start:end])
            start = end
        return keys

    def __iter__(self) -> Iterator[Pair]:
        """Every (key, value) in stored order; memory bounded by depth x fan-out."""
        for batch in self.batches():
            yield from batch

    def walk(self, after: bytes | None = None) -> Iterator[Pair]:
        """The pairs in stored order, or only those whose key sorts after ``after``."""
        for batch in self.batches(after):
            yield from batch

    def _open(self, raw: int, depth: int) -> tuple[bytes, int]:
        """Page ``raw`` at ``depth``, after the page budget and depth guards."""
        reader = self.reader
        self.budget.left -= 1
        if self.budget.left < 0:
            raise reader.corrupt(
                "tree visits more pages than the file holds (a cycle?)",
                table=self.table,
                page=raw,
            )
        if depth > MAX_DEPTH:
            raise reader.corrupt(
                f"tree deeper than {MAX_DEPTH} levels (a cycle?)", table=self.table, page=raw
            )
        return reader.page(raw, self.table)

    def _unknown(self, kind: int, raw: int, offset: int) -> RedbCorrupt:
        return self.reader.corrupt(
            f"unknown page type {kind}", table=self.table, page=raw, offset=offset
        )

    def batches(self, after: bytes | None = None) -> Iterator[list[Pair]]:
        """The pairs in stored order, one verified leaf at a time; with ``after``, only those
        whose key sorts after it.

        Seeking compares keys as bytes, so ``after`` is only meaningful for key types that
        redb orders bytewise (the caller checks); it descends one path, then streams.
        """
        # A stack of pending subtrees, the next one on top; "seek" marks the one on the path
        # to ``after``.
        stack: list[tuple[int, int, int, bool]] = [
            (self.root_page, self.root_checksum, 0, after is not None)
        ]
        while stack:
            raw, expected, depth, seek = stack.pop()
            buf, offset = self._open(raw, depth)
            kind = buf[0]
            if kind == LEAF:
                pairs = self._leaf(buf, raw, offset, expected)
                if seek:
                    assert after is not None
                    pairs = [pair for pair in pairs if pair[0] > after]
                if pairs:
                    yield pairs
            elif kind == BRANCH:
                children = self._branch(buf, raw, offset, expected)
                first = 0
                if seek:
                    assert after is not None
                    # Child i holds keys up to keys[i]: skip the children that end at or
                    # before ``after``.
                    first = bisect.bisect_right(self._branch_keys(buf), after)
                for i in range(len(children) - 1, first - 1, -1):
                    child, checksum = children[i]
                    stack.append((child, checksum, depth + 1, seek and i == first))
            else:
                raise self._unknown(kind, raw, offset)

    def get(self, key: bytes) -> bytes | None:
        """The value stored under ``key`` (bytewise key order), or None; verifies the pages it
        descends through.  Binary searches as ``bisect_left`` does (the C path does the same,
        so even a malformed file gives both paths the same answer)."""
        raw, expected, depth = self.root_page, self.root_checksum, 0
        while True:
            buf, offset = self._open(raw, depth)
            kind = buf[0]
            if kind == LEAF:
                pairs = self._leaf(buf, raw, offset, expected)
                i = bisect.bisect_left([k for k, _ in pairs], key)
                if i < len(pairs) and pairs[i][0] == key:
                    return pairs[i][1]
                return None
            if kind != BRANCH:
                raise self._unknown(kind, raw, offset)
            children = self._branch(buf, raw, offset, expected)
            # Child i holds the keys up to separator i (the last child, the rest).
            raw, expected = children[bisect.bisect_left(self._branch_keys(buf), key)]
            depth += 1
