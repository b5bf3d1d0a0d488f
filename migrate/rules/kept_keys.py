"""Keys of one table kept as a pass reads them, so that a later check can ask "is this key
there?" without a lookup in the source.

The one checking pass of ``run`` reads ``application_content`` (in key order) before the links
check asks, for every history commit, whether the content table holds it
(:mod:`migrate.rules.links`); a verified descent of the source's B-tree per commit costs more
than the rest of that check.  :class:`KeptKeys` keeps the keys of one width (content ids: 32
bytes) packed 64 to a block, with the first key of each block in a list, at most ``max_keys``
of them (4 MiB at the default; every key of a table of at most 524,288: :func:`bound_for`):
a lookup is one bisect over the first keys and one search in a 2 KiB block.

Only a *found* key is an answer: a key that is not kept (past the bound, of another width, or
really absent) is looked up in the source as before, so the result is always the source's,
whatever order the keys came in.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from functools import partial
from operator import itemgetter
from typing import TypeVar

#: Keys per packed block (a 2 KiB block of 32-byte keys).
BLOCK_KEYS = 64
#: The most keys kept by default: 4 MiB of 32-byte keys (131,072: every content id of a
#: ~260,000-row store).  At 16 MiB a 10 GB source's run peaked at 155.6 MB, over issue 29's
#: 150 MB line (137.9 MB without kept keys); past the bound, lookups go to the source.
MAX_KEYS = 1 << 17
#: Every key is kept when the table says it holds at most this many: 16 MiB of 32-byte keys
#: (524,288: the content ids of a store of about 1,050,000 rows) ...
ALL_KEYS_UP_TO = 1 << 19
#: ... and the source is at most this big (2 GiB).  The rest of a run's memory grows with the
#: source (peak RSS 78 MiB at 0.58 GB with 4 MiB kept, about 120 MB at 3.5-4.6 GB, 142.3 MB
#: at 10 GB), so a source of few but big rows keeps the default bound.
ALL_KEYS_SOURCE_BYTES = 2 << 30


def bound_for(expected: int | None, source_bytes: int) -> int:
    """How many keys to keep of a table that says it holds ``expected`` (its header's count;
    None when unknown) in a source of ``source_bytes``: all of them up to
    :data:`ALL_KEYS_UP_TO` in a source of at most :data:`ALL_KEYS_SOURCE_BYTES`, else
    :data:`MAX_KEYS`.  A count that lies only changes how many are kept, never an answer,
    and never more than ``ALL_KEYS_UP_TO``."""
    if expected is None or not 0 <= expected <= ALL_KEYS_UP_TO:
        return MAX_KEYS
    if not 0 <= source_bytes <= ALL_KEYS_SOURCE_BYTES:
        return MAX_KEYS
    return max(expected, MAX_KEYS)


Rows = TypeVar("Rows", bound=Sequence[tuple[bytes, bytes]])


def find_key(packed: bytes | bytearray, key: bytes, width: int, start: int = 0) -> int:
    """The offset of ``key`` among the keys of ``width`` bytes packed end to end in
    ``packed`` (from offset ``start``, a multiple of ``width``), or -1 (a match across two
    keys is no key)."""
    if len(key) != width:
        return -1
    pos = packed.find(key, start)
    while pos > 0 and pos % width:
        pos = packed.find(key, pos + 1)
    return pos


class KeptKeys:
    """Keys of ``width`` bytes kept in the order :meth:`add` receives them (see the module
    docstring); ``key in kept`` is True only for a key that was added."""

    def __init__(self, width: int = 32, max_keys: int = MAX_KEYS) -> None:
        self.width = width
        self._room = max_keys
        self._firsts: list[bytes] = []
        self._blocks: list[bytes] = []
        self._pending: list[bytes] = []

    def add(self, rows: Rows) -> Rows:
        """Keep the keys of ``rows`` (``(key, value)`` pairs) of this width, while there is
        room; returns ``rows`` (so that it can wrap a stream of batches with ``map``)."""
        if self._room > 0:
            width = self.width
            keys = list(map(itemgetter(0), rows))
            if {*map(len, keys)} - {width} or {*map(type, keys)} - {bytes}:
                keys = [bytes(k) for k in keys if len(k) == width]  # a copy of each kept
            keys = keys[: self._room]
            self._room -= len(keys)
            pending = self._pending
            pending += keys
            if len(pending) >= BLOCK_KEYS:
                self._pack(len(pending) - len(pending) % BLOCK_KEYS)
        return rows

    def _pack(self, n: int) -> None:
        """The first ``n`` pending keys into blocks (``n`` a multiple of the block size, or
        all of them)."""
        pending = self._pending
        for start in range(0, n, BLOCK_KEYS):
            block = pending[start : start + BLOCK_KEYS]
            self._firsts.append(block[0])
            self._blocks.append(b"".join(block))
        del pending[:n]

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, bytes) or len(key) != self.width:
            return False
        if self._pending:
            self._pack(len(self._pending))
        i = bisect_right(self._firsts, key) - 1
        if i < 0:
            return False
        return find_key(self._blocks[i], key, self.width) >= 0

    def missing(self, keys: Sequence[bytes]) -> list[int]:
        """The positions of ``keys`` not kept (``key not in kept``, in order), found with a
        few calls over the whole list."""
        width = self.width
        if {*map(type, keys)} - {bytes} or {*map(len, keys)} - {width}:
            return [i for i, key in enumerate(keys) if key not in self]
        if self._pending:
            self._pack(len(self._pending))
        blocks = self._blocks
        if not blocks:
            return list(range(len(keys)))
        # Each key's block as ``in`` finds it (none before the first), then its offset there;
        # one found across two keys is settled by ``in``.
        places = [blocks[i - 1] if i else b""
                  for i in map(partial(bisect_right, self._firsts), keys)]  # fmt: skip
        offsets = map(bytes.find, places, keys)
        return [i for i, at in enumerate(offsets)
                if at < 0 or (at % width and keys[i] not in self)]  # fmt: skip

    def __len__(self) -> int:
        return sum(len(b) for b in self._blocks) // self.width + len(self._pending)


__all__ = [
    "ALL_KEYS_SOURCE_BYTES", "ALL_KEYS_UP_TO", "BLOCK_KEYS", "MAX_KEYS", "KeptKeys", "bound_for",
    "find_key",
]  # fmt: skip
