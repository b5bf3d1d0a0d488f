"""The interface both reader backends implement (``_python`` and ``_c``), as a protocol.

A backend walks B-trees of an open file (a :class:`PageReader`): every page it visits is
bounds-checked and verified against the checksum its parent stores, in the same order on both
backends, so a file gives the same pairs or the same :class:`RedbCorrupt` on either.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

from importers.redb.btree import PageReader, Pair
from importers.redb.tables import TableInfo

#: A point lookup in one tree: the value under a key, or None.
Getter = Callable[[bytes], "bytes | None"]
#: The positions of a list of keys (in order) that the tree's :data:`Getter` answers None for.
Absent = Callable[[Sequence[bytes]], list[int]]


class Backend(Protocol):
    """What ``importers.redb._python`` and ``importers.redb._c`` provide."""

    NAME: str

    def tree_batches(
        self,
        reader: PageReader,
        root_page: int,
        root_checksum: int,
        key_width: int | None,
        value_width: int | None,
        table: str,
        after: bytes | None = None,
    ) -> Iterator[list[Pair]]:
        """The pairs of one B-tree in stored order (keys after ``after``), in batches."""
        ...

    def multimap_batches(
        self, reader: PageReader, info: TableInfo, fmt: int
    ) -> Iterator[list[Pair]]:
        """The (key, value) pairs of a multimap table, in batches."""
        ...

    def tree_get(
        self,
        reader: PageReader,
        root_page: int,
        root_checksum: int,
        key_width: int | None,
        value_width: int | None,
        table: str,
        key: bytes,
    ) -> bytes | None:
        """The value under ``key`` in a bytewise-ordered B-tree, or None."""
        ...

    def close(self, reader: PageReader) -> None:
        """Release what the backend holds on ``reader``'s mapping (before it is closed)."""
        ...
