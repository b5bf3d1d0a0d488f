"""The pure-Python backend: :mod:`importers.redb.btree` and :mod:`importers.redb.tables`."""

from __future__ import annotations

from collections.abc import Iterator

from importers.redb.btree import PageReader, Pair, Tree
from importers.redb.tables import multimap_batches

NAME = "python"

__all__ = ["NAME", "close", "multimap_batches", "tree_batches", "tree_get"]


def tree_batches(
    reader: PageReader,
    root_page: int,
    root_checksum: int,
    key_width: int | None,
    value_width: int | None,
    table: str,
    after: bytes | None = None,
) -> Iterator[list[Pair]]:
    """The pairs of one B-tree, one verified leaf at a time."""
    tree = Tree(reader, root_page, root_checksum, key_width, value_width, table)
    return tree.batches(after)


def tree_get(
    reader: PageReader,
    root_page: int,
    root_checksum: int,
    key_width: int | None,
    value_width: int | None,
    table: str,
    key: bytes,
) -> bytes | None:
    """The value under ``key``, or None."""
    return Tree(reader, root_page, root_checksum, key_width, value_width, table).get(key)


def close(reader: PageReader) -> None:
    """Nothing to release: this backend only slices the mapping."""
