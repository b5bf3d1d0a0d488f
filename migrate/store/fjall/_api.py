"""The interface both twins of the hot paths implement (``_python`` and ``_c``)."""

from __future__ import annotations

from array import array
from typing import Any, Protocol


class Twin(Protocol):
    """The hot paths: what profiling of scans, builds and journal reads says costs."""

    NAME: str

    def decode_items(self, payload: bytes) -> tuple[list[tuple[bytes, bytes, int, int]], int]:
        """The data items of a block payload and the sum of their item sizes (ItemError)."""
        ...

    def encode_items(self, items: list[tuple[bytes, bytes, int, int]]) -> tuple[bytes, int]:
        """The payload of ``items`` and the sum of their item sizes."""
        ...

    def build_bloom(self, policy: Any, h1: array[int], h2: array[int]) -> bytes:
        """The stored bloom filter for these key hashes."""
        ...

    def bloom_bits(self, m: int, k: int, h1: array[int], h2: array[int]) -> bytes:
        """The ``m / 8`` bytes of a filter of ``m`` bits and ``k`` probes with these hashes."""
        ...

    def journal_markers(self, buf: bytes, pos: int) -> tuple[list[tuple[Any, ...]], int, int]:
        """The journal markers of ``buf`` from ``pos`` (see ``journal.markers``)."""
        ...

    def blocks_decode(
        self, buf: bytes, pos: int, mode: int, last: bytes | None
    ) -> tuple[list[Any], int, bytes | None, bool]:
        """Every complete data block of ``buf`` from ``pos``: header, checksum, LZ4, items
        and their size.  ``mode`` 0 gives every item ``(key, value, seqno, type)``, 1 only
        the live rows ``(key, value)`` after the ``last`` key seen (as :meth:`live`).
        Returns ``(out, pos, last, bad)``: it stops at the first block not complete in
        ``buf``, or (``bad``) at one with any problem, of which nothing is in ``out``."""
        ...

    def encode_handles(self, handles: list[tuple[bytes, int]]) -> tuple[bytes, int]:
        """The payload of index handles ``(end key, offset)`` and their item sizes."""
        ...

    def take(self, iterator: Any, max_rows: int, max_bytes: int) -> list[Any]:
        """The next rows of ``iterator``: at most ``max_rows``, ending early once the
        values of the (bytes, bytes) rows among them reach ``max_bytes``."""
        ...

    def encode_rows(
        self, rows: list[Any], pos: int, seqno: int, block_size: int, last: bytes | None,
        final: bool, hash_fn: Any,
    ) -> tuple[list[tuple[Any, ...]], int, bytes | None, tuple[int, int] | None]:
        """The bulk path: ``rows[pos:]`` (new, ascending keys, one seqno) cut into data
        blocks as lsm-tree's writer cuts them; the rows after the last complete block stay
        for the next call unless ``final``.  Each block is ``(payload, item size, first
        key, last key, count, h1, h2)`` (h1/h2: the keys' bloom hashes as native u64 bytes,
        from ``hash_fn`` = ``xxhash.xxh3_128_digest``, or None).  Returns ``(blocks,
        consumed, last key, error)``; error: None or ``(code, row index)`` -- 1 not
        (bytes, bytes), 2 key length not 1..65535, 3 value over 2^32 - 1 bytes, 4 key not
        above the previous one."""
        ...

    def live(
        self, items: list[tuple[bytes, bytes, int, int]], last: bytes | None
    ) -> tuple[list[tuple[bytes, bytes]], bytes | None]:
        """The live rows of a run of items in key order: the first (newest) version of each
        key not equal to ``last``, unless it is a tombstone; and the last key seen."""
        ...
