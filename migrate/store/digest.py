"""The archive digest, streamed over any sorted five-table row source.

For the tables in order content, claims, requests, history, heads: one ordinal byte (0..4,
written even for an empty table), then every row in key order as
``u64 LE len(key) ‖ key ‖ u64 LE len(value) ‖ value``.  SHA-256 by default; pass another
hash object factory (e.g. hemera) and a ``domain`` prefix for the other documented digests.
The same stream over a source, a staging area and a destination must give the same digest.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Iterable
from typing import Protocol

from migrate.store.codec import ARCHIVE_ORDER

_LEN = struct.Struct("<Q")
_FLUSH = 1 << 20  # hash in ~1 MiB pieces: few calls, bounded buffer


class Hasher(Protocol):
    """The part of a ``hashlib`` object the digest uses."""

    def update(self, data: bytes, /) -> None: ...

    def digest(self) -> bytes: ...


class RowSource(Protocol):
    def rows(self, table: str) -> Iterable[tuple[bytes, bytes]]: ...


def archive_digest(
    source: RowSource,
    factory: Callable[[], Hasher] = hashlib.sha256,
    domain: bytes = b"",
) -> bytes:
    """The archive digest of ``source`` (ValueError if a table is not in key order)."""
    h = factory()
    if domain:
        h.update(domain)
    buf = bytearray()
    for ordinal, table in enumerate(ARCHIVE_ORDER):
        buf.append(ordinal)
        previous: bytes | None = None
        for key, value in source.rows(table):
            if previous is not None and key <= previous:
                raise ValueError(f"{table}: rows not in strictly increasing key order")
            previous = key
            buf += _LEN.pack(len(key))
            buf += key
            buf += _LEN.pack(len(value))
            buf += value
            if len(buf) >= _FLUSH:
                h.update(bytes(buf))
                buf.clear()
    h.update(bytes(buf))
    return h.digest()
