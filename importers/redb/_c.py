"""The C backend (cffi): the only module that touches ``lib``.

The C code (``redb.c``) reads the pages of a tree (``pread``), verifies each one (XXH3-128)
and copies up to :data:`BATCH` entries into a buffer with their offsets; this module slices
them out as bytes and turns C error codes into the Python path's exact :class:`RedbCorrupt`
messages.  Importing it raises ImportError when the extension was
not built; the package then uses the pure-Python backend.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from bbg_core.errors import MigrateError
from importers.redb._api import Absent, Getter
from importers.redb.btree import IN_A_HOLE, MAX_DEPTH, OVER_BUDGET, SHRUNK, PageReader, Pair
from importers.redb.tables import TableInfo

# Imported by name so type checkers need no stub for the compiled module.
_ext = importlib.import_module("importers.redb._redb_c")
ffi: Any = _ext.ffi
lib: Any = _ext.lib

# The ABI this module speaks (redb.c's REDB_ABI): an older build has other structs.
ABI = 4
_NEEDED = (
    "redb_abi",
    "redb_map_limits",
    "redb_map_init",
    "redb_iter_new",
    "redb_iter_free",
    "redb_iter_tree",
    "redb_iter_multimap",
    "redb_iter_next",
    "redb_get",
    "redb_absent",
    "redb_xxh3_128",
    "redb_xxh3_simd",
)
if not all(hasattr(lib, name) for name in _NEEDED) or lib.redb_abi() != ABI:
    # An extension built from an older redb.c: treat it as absent (pure-Python fallback,
    # visible in `bbg-migrate --version`) rather than fail on first use.
    raise ImportError("importers.redb._redb_c is stale; rebuild with `pip install -e .`")

#: ``pairs(data, offsets, n)``: a batch as (key, value) bytes pairs, built in C
#: (``_pairs.c``); None when that small module was not built (slicing in Python instead).
_pairs: Callable[[Any, Any, int], list[Pair]] | None
try:
    _pairs = importlib.import_module("importers.redb._redb_pairs").pairs
except ImportError:
    _pairs = None

NAME = "c"

#: Entries per C call, and the size of the buffer they are copied into (a batch ends early
#: when it is full, so a batch of large values stays small; a single larger entry gets a
#: buffer of its own size): enough to make the call overhead vanish per entry.
BATCH = 512
BATCH_BYTES = 128 << 10

_MORE, _DONE, _ERROR, _NEED = 0, 1, 2, 3
_E_IO = 22
_MASK64 = (1 << 64) - 1


class _Native:
    """The C view of one open file: its descriptor and region geometry."""

    def __init__(self, reader: PageReader) -> None:
        self.map = ffi.new("redb_map *")
        lay = reader.layout
        ok = lib.redb_map_init(
            self.map,
            reader.fd,
            reader.file_size,
            lay.page_size,
            lay.header_pages,
            lay.max_data_pages,
            lay.full_regions,
            lay.trailing_pages,
        )
        if not ok:  # the Python side refuses such layouts first; this is a second fence
            raise reader.corrupt("region layout does not fit the file")
        lib.redb_map_limits(self.map, reader.on_disk, reader.budget)


def _native(reader: PageReader) -> _Native:
    reader.check_open()
    native = reader.native
    if native is None:
        native = reader.native = _Native(reader)
    assert isinstance(native, _Native)
    return native


def close(reader: PageReader) -> None:
    """Nothing to release (iterators free their buffers when collected; every call checks
    ``reader.closed`` first, as the descriptor is closed with the file)."""


def _width(width: int | None) -> int:
    return -1 if width is None else width


_LEAF_MESSAGES = {
    12: "leaf of {a} bytes is shorter than its 4-byte header",
    13: "leaf offset table ({a} entries) runs past the page",
    14: "leaf data ends at {a}, beyond the page ({b} bytes)",
    15: "leaf key/value offsets are not in order",
}
_MESSAGES = {
    1: "page number outside the file's regions",
    2: "page ends at {a}, beyond the end of the file ({b} bytes)",
    3: "tree visits more pages than the file holds (a cycle?)",
    4: f"tree deeper than {MAX_DEPTH} levels (a cycle?)",
    5: "unknown page type {a}",
    6: "branch page with no keys",
    7: "branch offset table runs past the page",
    8: "branch keys end at {a}, beyond the page ({b} bytes)",
    9: "branch key offsets are not in order",
    10: "checksum mismatch: parent stores {expected:032x}, page hashes to {actual:032x}",
    11: "leaf page with no entries",
    **_LEAF_MESSAGES,
    16: "empty multimap value collection",
    17: "inline multimap values: {leaf}",
    18: "truncated multimap sub-tree header",
    19: "multimap sub-tree holds {a} values, its header says {b}",
    20: "unknown multimap collection type {a}",
    21: "region layout does not fit the file",
    23: SHRUNK,
    24: "out of memory reading a page of {a} bytes",
    25: OVER_BUDGET,
    26: IN_A_HOLE,
}


def _error(reader: PageReader, err: Any, table: str) -> MigrateError:
    """The C error ``err`` as the Python path words it."""
    if err.code == _E_IO:
        return reader.read_failed(err.a)
    template = _MESSAGES.get(err.code, "internal reader error {code}")
    what = template.format(
        a=err.a,
        b=err.b,
        code=err.code,
        expected=(err.expected_hi << 64) | err.expected_lo,
        actual=(err.actual_hi << 64) | err.actual_lo,
        leaf=_LEAF_MESSAGES.get(err.sub, "?").format(a=err.a, b=err.b),
    )
    return reader.corrupt(
        what,
        table=table,
        page=err.page if err.has_page else None,
        offset=err.offset if err.has_offset else None,
    )


def _new_iter() -> Any:
    it = lib.redb_iter_new()
    if it == ffi.NULL:
        raise MemoryError("redb iterator")
    return ffi.gc(it, lib.redb_iter_free)


def _drain(reader: PageReader, native: _Native, it: Any, table: str) -> Iterator[list[Pair]]:
    """Run the C iterator ``it`` to its end, a batch of pairs per call."""
    out = ffi.new("uint64_t[]", 4 * BATCH)
    offsets = ffi.buffer(out)
    size = BATCH_BYTES
    data = ffi.new("char[]", size)
    view = ffi.buffer(data)
    pages = 0
    while True:
        reader.check_open()
        n = lib.redb_iter_next(it, out, BATCH, data, size)
        reader.pages_read += it.pages - pages
        pages = it.pages
        if n and _pairs is not None:
            yield _pairs(view, offsets, n)
        elif n:
            flat = iter(ffi.unpack(out, 4 * n))
            quads = zip(flat, flat, flat, flat, strict=True)
            yield [(view[a:b], view[c:d]) for a, b, c, d in quads]
        status = it.status
        if status == _DONE:
            return
        if status == _ERROR:
            raise _error(reader, it.err, table)
        if status == _NEED:
            # One entry larger than the buffer: its size is bounded by its page's, which lies
            # inside the file.
            size = max(it.need, BATCH_BYTES)
            data = ffi.new("char[]", size)
            view = ffi.buffer(data)
        elif size > BATCH_BYTES:
            size = BATCH_BYTES
            data = ffi.new("char[]", size)
            view = ffi.buffer(data)


def tree_batches(
    reader: PageReader,
    root_page: int,
    root_checksum: int,
    key_width: int | None,
    value_width: int | None,
    table: str,
    after: bytes | None = None,
) -> Iterator[list[Pair]]:
    """The pairs of one B-tree in stored order (keys after ``after``), in batches."""
    native = _native(reader)
    it = _new_iter()
    key = bytes(after) if after is not None else b""
    # A buffer owned here (the C iterator keeps pointing into it between calls).
    key_buf = ffi.new("char[]", max(1, len(key)))
    ffi.memmove(key_buf, key, len(key))
    lib.redb_iter_tree(
        it,
        native.map,
        root_page,
        root_checksum & _MASK64,
        root_checksum >> 64,
        _width(key_width),
        _width(value_width),
        reader.layout.data_pages + 1,
        key_buf,
        len(key),
        after is not None,
    )
    return _pinned(_drain(reader, native, it, table), key_buf)


def _pinned(batches: Iterator[list[Pair]], *keep: object) -> Iterator[list[Pair]]:
    """``batches``, holding ``keep`` (buffers the C iterator points into) until it ends."""
    try:
        yield from batches
    finally:
        del keep


def multimap_batches(reader: PageReader, info: TableInfo, fmt: int) -> Iterator[list[Pair]]:
    """The (key, value) pairs of a multimap table, in batches."""
    if info.root_page is None or info.root_checksum is None:
        return iter(())
    native = _native(reader)
    it = _new_iter()
    lib.redb_iter_multimap(
        it,
        native.map,
        info.root_page,
        info.root_checksum & _MASK64,
        info.root_checksum >> 64,
        _width(info.key_width),
        _width(info.value_width),
        fmt,
        reader.layout.data_pages + 1,
    )
    return _drain(reader, native, it, info.name)


def tree_get(
    reader: PageReader,
    root_page: int,
    root_checksum: int,
    key_width: int | None,
    value_width: int | None,
    table: str,
    key: bytes,
) -> bytes | None:
    """The value under ``key`` in a bytewise-ordered B-tree, or None."""
    native = _native(reader)
    it = _new_iter()
    value = ffi.new("char **")
    length = ffi.new("uint64_t *")
    key = bytes(key)
    found = lib.redb_get(
        it,
        native.map,
        root_page,
        root_checksum & _MASK64,
        root_checksum >> 64,
        _width(key_width),
        _width(value_width),
        reader.layout.data_pages + 1,
        key,
        len(key),
        value,
        length,
    )
    reader.pages_read += it.pages
    reader.pages_cached += it.cache_hits  # a fresh iterator: none
    if found < 0:
        raise _error(reader, it.err, table)
    return ffi.unpack(value[0], length[0]) if found else None


def tree_lookups(
    reader: PageReader,
    root_page: int,
    root_checksum: int,
    key_width: int | None,
    value_width: int | None,
    table: str,
) -> tuple[Getter, Absent]:
    """``tree_get`` of one tree with its arguments bound, and ``absent(keys)``: the positions
    of the keys ``get`` would answer None for, found in one C call per list of keys of one
    width (the same lookups, without a Python call and a copy of the value per key).  Both
    reuse one C iterator (and the page buffers it grew) across calls.  Each lookup descends
    from the root; the branch pages it verified are kept in the iterator's bounded cache
    (keyed by page and checksum; why that is sound: redb.c, "the lookup cache") and taken
    from there by later lookups, while every leaf is read and verified.  Calls from several
    threads take turns."""
    native = _native(reader)
    it = _new_iter()
    value = ffi.new("char **")
    length = ffi.new("uint64_t *")
    counts = ffi.new("uint64_t[3]")  # keys absent, a failed lookup's position, pages read
    lo, hi = root_checksum & _MASK64, root_checksum >> 64
    kw, vw, budget = _width(key_width), _width(value_width), reader.layout.data_pages + 1
    turn = threading.Lock()

    def get(key: bytes) -> bytes | None:
        if reader.closed:
            reader.check_open()  # raises
        with turn:
            hits = it.cache_hits
            found = lib.redb_get(it, native.map, root_page, lo, hi, kw, vw, budget, key,
                                 len(key), value, length)  # fmt: skip
            reader.pages_read += it.pages
            reader.pages_cached += it.cache_hits - hits
            if found < 0:
                raise _error(reader, it.err, table)
            return ffi.unpack(value[0], length[0]) if found else None

    def absent(keys: Sequence[bytes]) -> list[int]:
        if not keys:
            return []
        width = len(keys[0])
        if {*map(len, keys)} != {width} or {*map(type, keys)} != {bytes} or len(keys) >> 32:
            return [i for i, key in enumerate(keys) if get(bytes(key)) is None]
        if reader.closed:
            reader.check_open()  # raises
        out = ffi.new("uint32_t[]", len(keys))
        with turn:
            hits = it.cache_hits
            ok = lib.redb_absent(it, native.map, root_page, lo, hi, kw, vw, budget,
                                 b"".join(keys), width, len(keys), out, counts)  # fmt: skip
            reader.pages_read += counts[2]
            reader.pages_cached += it.cache_hits - hits
            if ok < 0:
                raise _error(reader, it.err, table)
            return list(ffi.unpack(out, counts[0]))

    return get, absent


def xxh3_128(data: bytes) -> int:
    """XXH3-128 of ``data`` as the C code computes it (for cross-checking with ``xxhash``)."""
    out = ffi.new("uint64_t[2]")
    buf = ffi.from_buffer(data)
    lib.redb_xxh3_128(buf, len(buf), out)
    return int((out[1] << 64) | out[0])


def xxh3_simd(level: int) -> int:
    """Use XXH3's AVX2 loop (1, when the CPU has it) or its scalar loop (0) for pages from now
    on; returns the level in use.  For the tests: both give the same hashes."""
    return int(lib.redb_xxh3_simd(level))
