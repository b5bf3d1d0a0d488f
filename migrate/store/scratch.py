"""Scratch space on disk for checks over sources that cannot look a key up themselves.

A source with no point lookups (a plain dict of sorted lists, a stream) is checked with
bounded memory by spilling what the check needs into a temporary file:

* :class:`ScratchTables`: tables of ``key -> value`` copied once, then looked up by key (the
  link checks);
* :class:`ScratchSorter`: rows appended in any order, read back once in the order of their
  first value (the children of Data pairs, merged against the content keys).

Both are SQLite files in a temporary directory, removed on ``close``; losing one in a crash
costs nothing, so they keep no journal and never fsync.
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterable, Iterator
from typing import Any

from bbg_core.closing import Closing


def _scratch(prefix: str, name: str) -> tuple[tempfile.TemporaryDirectory[str], sqlite3.Connection]:
    folder = tempfile.TemporaryDirectory(prefix=prefix)
    db = sqlite3.connect(f"{folder.name}/{name}", isolation_level=None)
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    return folder, db


class ScratchTables(Closing):
    """``key -> value`` tables on disk, filled once from ``tables`` (name, rows), then read
    with :meth:`get`; a key given twice keeps its last value."""

    def __init__(self, tables: Iterable[tuple[str, Iterable[tuple[bytes, bytes]]]],
                 *, prefix: str = "bbg-scratch-") -> None:  # fmt: skip
        self._dir, self._db = _scratch(prefix, "index.sqlite3")
        self._names: list[str] = []
        self._db.execute("BEGIN")
        for table, rows in tables:
            i = len(self._names)
            self._names.append(table)
            self._db.execute(f"CREATE TABLE t{i} (key BLOB PRIMARY KEY, value BLOB) WITHOUT ROWID")
            self._db.executemany(f"INSERT OR REPLACE INTO t{i} VALUES (?, ?)", rows)
        self._db.execute("COMMIT")

    def get(self, table: str, key: bytes) -> bytes | None:
        """The value under ``key`` in ``table``, or None."""
        i = self._names.index(table)
        row = self._db.execute(f"SELECT value FROM t{i} WHERE key = ?", (key,)).fetchone()
        return None if row is None else bytes(row[0])

    def close(self) -> None:
        self._db.close()
        self._dir.cleanup()


class ScratchSorter(Closing):
    """Rows of ``width`` values appended with :meth:`add`, read back once with :meth:`sorted`
    in the order of their first value (bytes compare as memcmp)."""

    def __init__(self, width: int, *, prefix: str = "bbg-scratch-") -> None:
        self._dir, self._db = _scratch(prefix, "rows.sqlite3")
        self._width = width
        columns = ", ".join(f"c{i}" for i in range(width))
        self._db.execute(f"CREATE TABLE rows ({columns})")
        self._insert = f"INSERT INTO rows VALUES ({', '.join('?' * width)})"
        self._db.execute("BEGIN")

    def add(self, *row: Any) -> None:
        """Keep ``row`` (``width`` values: bytes, int or text)."""
        self._db.execute(self._insert, row)

    def sorted(self) -> Iterator[tuple[Any, ...]]:
        """Every row kept, ordered by its first value (call once, after the last ``add``)."""
        self._db.execute("COMMIT")
        yield from self._db.execute("SELECT * FROM rows ORDER BY c0")

    def close(self) -> None:
        self._db.close()
        self._dir.cleanup()
