"""Rows cut into bounded pages while the checking pass reads them: the one page cutter of a
store being built on either engine.

:class:`PageLoader` passes a table's rows through unchanged (:meth:`PageLoader.tee`), cuts
them into pages of at most ``page_rows`` rows / ``page_bytes`` key+value bytes, stops
loading (rows still pass) once the bounds set by :meth:`PageLoader.limit` are exceeded, and
keeps the cursor of the last page handed on.  Where a page goes is the engine's own
(:meth:`PageLoader._deliver`): the SQLite loader's writer queue
(:class:`migrate.store.build.Loader`), or the keyspace being built
(:class:`migrate.store.keyspace_build.KeyspaceLoader`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain

from migrate.store.codec import ARCHIVE_ORDER


class PageLoader:
    """Rows into a store being built, one bounded page at a time (see the module docstring).

    ``rows`` counts the rows loaded per table (kept by the engine's delivery); ``cursor`` is
    the ordinal byte and last key of the last page handed on.
    """

    #: Keep a copy of each key and value (``bytes``) rather than the row as the pass gave it.
    COPY_ROWS = False

    def __init__(self, page_rows: int, page_bytes: int) -> None:
        self._page_rows = page_rows
        self._page_bytes = page_bytes
        self.rows: dict[str, int] = dict.fromkeys(ARCHIVE_ORDER, 0)
        self.cursor: bytes = b""
        self._left_rows = self._left_bytes = -1
        self._error: BaseException | None = None

    @property
    def complete(self) -> bool:
        """False once loading stopped at a bound or failed (the build then lacks rows)."""
        return self._error is None and not (self._left_rows == 0 and self._left_bytes == 0)

    def limit(self, max_rows: int, max_bytes: int) -> None:
        """Stop loading (rows still pass) once more than these were seen: the source is over
        a bound and will be refused, so the build need not hold it all."""
        self._left_rows, self._left_bytes = max_rows, max_bytes

    def tee(
        self, ordinal: int, rows: Iterable[tuple[bytes, bytes]]
    ) -> Iterator[tuple[bytes, bytes]]:
        """``rows`` of table ``ordinal`` (archive order), each loaded as it passes."""
        table = ARCHIVE_ORDER[ordinal]
        page_rows, page_bytes, copy = self._page_rows, self._page_bytes, self.COPY_ROWS
        batch: list[tuple[bytes, bytes]] = []
        size = 0
        for row in rows:
            n = len(row[0]) + len(row[1])
            if batch and (len(batch) >= page_rows or size + n > page_bytes):
                self._load(ordinal, table, batch, size)
                batch, size = [], 0
            batch.append((bytes(row[0]), bytes(row[1])) if copy else row)
            size += n
            yield row
        if batch:
            self._load(ordinal, table, batch, size)
        if self._error is None:
            self._ended(table)

    def tee_batches(
        self, ordinal: int, batches: Iterable[list[tuple[bytes, bytes]]]
    ) -> Iterator[list[tuple[bytes, bytes]]]:
        """:meth:`tee` for rows that come in lists: the same lists passed on, the same pages
        loaded (cut at the same rows), a list at a time where a page has room for it."""
        table = ARCHIVE_ORDER[ordinal]
        page_rows, page_bytes, copy = self._page_rows, self._page_bytes, self.COPY_ROWS
        page: list[tuple[bytes, bytes]] = []
        size = 0
        for rows in batches:
            mine = rows
            if copy and {*map(type, chain.from_iterable(rows))} - {bytes}:
                mine = [(bytes(k), bytes(v)) for k, v in rows]  # bytes are kept as they are
            start, end = 0, len(mine)
            while start < end:
                if page and len(page) >= page_rows:
                    self._load(ordinal, table, page, size)
                    page, size = [], 0
                stop = min(end, start + page_rows - len(page))
                chunk = mine[start:stop]
                taken = sum(map(len, chain.from_iterable(chunk)))
                if size + taken <= page_bytes:  # all of them fit: no page ends among them
                    page += chunk
                    size += taken
                    start = stop
                    continue
                for i in range(start, stop):  # a page ends at the row that does not fit
                    n = len(mine[i][0]) + len(mine[i][1])
                    if page and (len(page) >= page_rows or size + n > page_bytes):
                        self._load(ordinal, table, page, size)
                        page, size = [], 0
                    page.append(mine[i])
                    size += n
                start = stop
            yield rows
        if page:
            self._load(ordinal, table, page, size)
        if self._error is None:
            self._ended(table)

    def _ended(self, table: str) -> None:
        """Every row of ``table`` was handed on (nothing to do by default)."""

    def _load(self, ordinal: int, table: str, batch: list[tuple[bytes, bytes]],
              size: int) -> None:  # fmt: skip
        """Hand on one page (``size``: its key+value bytes, counted as the rows passed)."""
        if self._error is not None:
            return  # the pass goes on: what it finds wrong with the source is said first
        if self._left_rows >= 0:
            self._left_rows -= len(batch)
            self._left_bytes -= size
            if self._left_rows < 0 or self._left_bytes < 0:
                self._left_rows = self._left_bytes = 0
                return
        if self._deliver(table, batch):
            self.cursor = bytes([ordinal]) + bytes(batch[-1][0])

    def _deliver(self, table: str, batch: list[tuple[bytes, bytes]]) -> bool:
        """Hand one page of ``table`` to the engine; False when it was not taken (an error
        kept for :meth:`check`)."""
        raise NotImplementedError

    def finish(self) -> None:
        """Wait until every page is loaded (nothing runs in the background by default)."""

    def check(self) -> None:
        """Raise what loading met."""
        self.finish()
        if self._error is not None:
            raise self._error


__all__ = ["PageLoader"]
