"""Sources the pipeline copies from, all seen as five sorted tables plus bounded pages.

Every source kind offers ``pages(cursor, max_rows=, max_bytes=)`` (:class:`PageSource`):
a cell.redb here (cursor = table ordinal ‖ last key), a legacy Signal log or TextArchive in
:mod:`migrate.pipeline.legacy` (cursor = history index ‖ rows of that item staged).

A source yields *pages* for staging: at most ``max_rows`` rows and ``max_bytes`` key+value
bytes each, with a cursor that says where the next page starts.  The cursor is committed
with the page, so a stage interrupted anywhere resumes exactly after the last committed page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bbg_core.closing import Closing
from migrate.job import MAX_PAGE_BYTES, MAX_PAGE_ROWS
from migrate.store.codec import ARCHIVE_ORDER as DIGEST_ORDER


@dataclass(frozen=True)
class Page:
    """One bounded batch of rows: (table ordinal, key, value), and the cursor after it."""

    rows: list[tuple[int, bytes, bytes]]
    cursor: bytes
    nbytes: int


#: ``absent(table, keys)``: the positions of ``keys`` (in order) that a source's point lookup
#: answers None for, asked a list at a time.
TableAbsent = Callable[[str, Sequence[bytes]], list[int]]


class PageSource(Protocol):
    """What staging reads: bounded pages after a cursor (the cursor's form is the source's)."""

    def pages(
        self, cursor: bytes | None, *, max_rows: int = ..., max_bytes: int = ...
    ) -> Iterator[Page]: ...


def encode_cursor(ordinal: int, key: bytes) -> bytes:
    """Cursor = table ordinal byte ‖ last key copied from that table."""
    return bytes([ordinal]) + key


def decode_cursor(cursor: bytes | None) -> tuple[int, bytes | None]:
    """(ordinal, last key) or (0, None) for a stage that has not started."""
    if not cursor:
        return 0, None
    return cursor[0], cursor[1:]


class RedbSource(Closing):
    """A legacy cell.redb read through :mod:`importers.redb` (never opened for writing)."""

    kind = "redb"

    def __init__(self, path: Path) -> None:
        from importers.redb import open_redb

        self.path = path
        self._db = open_redb(path)

    def close(self) -> None:
        self._db.close()

    @property
    def header(self) -> Any:
        return self._db.header

    def table_kinds(self) -> dict[str, str]:
        return {t.name: t.kind for t in self._db.tables()}

    def length(self, table: str) -> int | None:
        """How many entries ``table`` says it holds (its header's count, checked against
        the rows only when they are read), or None when there is no such table."""
        try:
            return self._db.table(table).length
        except KeyError:
            return None

    def rows(self, table: str, after: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """Rows in stored order; with ``after``, only keys past it (a seek, not a skip)."""
        return self._db.iter_table(table, after=after)

    def row_batches(self, table: str) -> Iterator[list[tuple[bytes, bytes]]]:
        """The rows of :meth:`rows` (all of them), in the lists the reader makes."""
        return self._db.iter_batches(table)

    @property
    def get(self) -> Callable[[str, bytes], bytes | None] | None:
        """Point lookups (checksummed descents) for the link checker, on the C path only:
        there they beat spilling an index to SQLite; the Python descent does not."""
        if self._db.backend != "c":
            return None
        lookup: Callable[[str, bytes], bytes | None] = self._db.get
        return lookup

    @property
    def absent(self) -> TableAbsent | None:
        """``absent(table, keys)``: the positions of ``keys`` that :attr:`get` answers None
        for, one C call per list (with :attr:`get`: the C path only)."""
        if self._db.backend != "c":
            return None
        absent: TableAbsent = self._db.absent
        return absent

    def absent_elsewhere(self) -> TableAbsent | None:
        """Another :attr:`absent` with lookup handles of its own, for another thread to use
        at the same time (:meth:`importers.redb.reader.RedbFile.absent_elsewhere`); the C
        path only."""
        if self._db.backend != "c":
            return None
        return self._db.absent_elsewhere()

    def lookup(self, table: str, key: bytes) -> bytes | None:
        """A point lookup on either backend, for rare checks (the children of Data pairs)."""
        value: bytes | None = self._db.get(table, key)
        return value

    def pages(
        self,
        cursor: bytes | None,
        *,
        max_rows: int = MAX_PAGE_ROWS,
        max_bytes: int = MAX_PAGE_BYTES,
    ) -> Iterator[Page]:
        """Bounded pages of the five tables in archive order (see :func:`pages`)."""
        return pages(self, cursor, max_rows=max_rows, max_bytes=max_bytes)


def pages(
    source: RedbSource,
    cursor: bytes | None,
    *,
    max_rows: int = MAX_PAGE_ROWS,
    max_bytes: int = MAX_PAGE_BYTES,
) -> Iterator[Page]:
    """Bounded pages of the five tables in archive order, starting after ``cursor``."""
    start_ordinal, last_key = decode_cursor(cursor)
    kinds = source.table_kinds()
    rows: list[tuple[int, bytes, bytes]] = []
    nbytes = 0
    position = cursor or b""
    for ordinal, table in enumerate(DIGEST_ORDER):
        if ordinal < start_ordinal or table not in kinds:
            continue
        # Resume by seeking past the last key copied (keys are &[u8]: bytewise order).
        after = last_key if ordinal == start_ordinal else None
        for key, value in source.rows(table, after=after):
            size = len(key) + len(value)
            if rows and (len(rows) >= max_rows or nbytes + size > max_bytes):
                yield Page(rows, position, nbytes)
                rows, nbytes = [], 0
            rows.append((ordinal, bytes(key), bytes(value)))
            nbytes += size
            position = encode_cursor(ordinal, bytes(key))
    if rows:
        yield Page(rows, position, nbytes)
