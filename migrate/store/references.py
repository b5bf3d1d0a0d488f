"""What the rows of a SQLite store refer to: the reads behind ``doctor``'s content classes.

:mod:`migrate.share.content_classes` decides which content rows an import legitimately
carries beyond history commits; the rows it needs come from here, so the share layer holds
no SQL:

* :func:`non_commit_content`: the ids of content rows no history entry has as its commit
  (the rows the classes sort);
* :func:`referenced_commits`: the content values of every history entry's commit and of
  every commit a request receipt names (whose entry ``nohistory`` may have dropped);
* :func:`data_pairs`: the content values that can be Data pairs (codec byte 0, a 64-byte
  nox Model B payload or the 65-byte tagged one);
* :func:`receipt_heads`: the head commit every request receipt names;
* :func:`birth_receipts`: (key, value) of every request receipt of an index-0 entry whose
  head is its own namespace (a birth transaction's);
* :class:`FirstClass`: a private scratch map id -> class, first class wins, on disk-less
  SQLite, so its memory does not grow with the store.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator

from bbg_core.closing import Closing
from migrate.store.connection import Connection


def non_commit_content(conn: Connection) -> Iterator[bytes]:
    """Ids of content rows that no history entry has as its commit, in key order."""
    # NOT IN: one ephemeral index of the history's commits, not a history scan per row.
    for (key,) in conn.rows(
        "SELECT key FROM application_content "
        "WHERE key NOT IN (SELECT value FROM application_history) ORDER BY key"
    ):
        yield bytes(key)


def referenced_commits(conn: Connection) -> Iterator[bytes]:
    """Content values of the commits history entries and request receipts name."""
    for (value,) in conn.rows(
        "SELECT value FROM application_content WHERE key IN "
        "(SELECT value FROM application_history UNION "
        "SELECT substr(value, 41, 32) FROM application_requests WHERE length(value) = 72)"
    ):
        yield bytes(value)


def data_pairs(conn: Connection) -> Iterator[bytes]:
    """Content values with codec byte 0 and a 64- or 65-byte payload."""
    for (value,) in conn.rows(
        "SELECT value FROM application_content "
        "WHERE substr(value, 1, 1) = x'00' AND length(value) IN (65, 66)"
    ):
        yield bytes(value)


def receipt_heads(conn: Connection) -> Iterator[bytes]:
    """The head commit each request receipt names."""
    for (commit,) in conn.rows(
        "SELECT substr(value, 41, 32) FROM application_requests WHERE length(value) = 72"
    ):
        yield bytes(commit)


def birth_receipts(conn: Connection) -> Iterator[tuple[bytes, bytes]]:
    """(key, value) of the request receipts whose head is (index 0, the namespace itself)."""
    for key, value in conn.rows(
        "SELECT key, value FROM application_requests WHERE length(key) = 64 AND "
        "length(value) = 72 AND substr(value, 33, 8) = zeroblob(8) AND "
        "substr(value, 41, 32) = substr(key, 1, 32)"
    ):
        yield bytes(key), bytes(value)


class FirstClass(Closing):
    """A private scratch map id -> class (the first class given for an id wins)."""

    def __init__(self) -> None:
        self._db = sqlite3.connect("", isolation_level=None)
        self._db.execute("CREATE TABLE refs (id BLOB PRIMARY KEY, cls INTEGER) WITHOUT ROWID")

    def add(self, cls: int, ids: Iterable[bytes]) -> None:
        self._db.executemany(
            "INSERT OR IGNORE INTO refs (id, cls) VALUES (?, ?)", ((i, cls) for i in ids)
        )

    def of(self, key: bytes) -> int | None:
        row = self._db.execute("SELECT cls FROM refs WHERE id = ?", (key,)).fetchone()
        return None if row is None else int(row[0])

    def close(self) -> None:
        self._db.close()
