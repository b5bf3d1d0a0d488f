"""The content keys a stream (``apply``, ``restore``) carried, and the line that carried each.

Kept in a TEMP table of the write transaction's own SQLite connection, not in Python, so the
memory a stream's check uses does not grow with the stream: the check
(:class:`migrate.share.verify.ContentLedger`) reads the rows back from the transaction in key
order, and maps a failing row's position back to its line.  A TEMP table changes no stored row
(:meth:`migrate.store.tx.Tx.scratch`).
"""

from __future__ import annotations

from collections.abc import Iterator

from migrate.store.codec import CONTENT
from migrate.store.tx import Tx

_TABLE = "temp.bbg_stream_content"


class StreamKeys:
    """The stream's content keys with their first line, in the transaction ``tx``."""

    def __init__(self, tx: Tx) -> None:
        self._tx = tx
        tx.scratch(
            "CREATE TEMP TABLE IF NOT EXISTS bbg_stream_content "
            "(key BLOB PRIMARY KEY, line INTEGER NOT NULL) WITHOUT ROWID"
        )
        tx.scratch(f"DELETE FROM {_TABLE}")

    def add(self, key: bytes, line: int) -> None:
        """Record that ``line`` carried ``key`` (the first line that did is kept)."""
        self._tx.scratch(f"INSERT OR IGNORE INTO {_TABLE} (key, line) VALUES (?, ?)", (key, line))

    def add_many(self, keys: list[bytes], line: int) -> None:
        """:meth:`add` for each of ``keys``."""
        self._tx.scratch_many(
            f"INSERT OR IGNORE INTO {_TABLE} (key, line) VALUES (?, ?)", [(k, line) for k in keys]
        )

    def content_rows(self, before: int) -> Iterator[tuple[bytes, bytes]]:
        """The content rows of the keys carried on lines below ``before``, in key order, as
        the transaction sees them (one at a time: a value may be 16 MiB).  On the Fjall
        engine the rows are in the keyspace and the transaction's overlay, not in the records'
        (empty) tables: each key is looked up through the transaction."""
        from migrate.store.keyspace import FjallTx

        if isinstance(self._tx, FjallTx):
            for (key,) in self._tx.rows(
                f"SELECT key FROM {_TABLE} WHERE line < ? ORDER BY key", (before,)
            ):
                value = self._tx.get(CONTENT, bytes(key))
                if value is not None:
                    yield bytes(key), value
            return
        for key, value in self._tx.rows(
            f"SELECT c.key, c.value FROM {_TABLE} AS s JOIN application_content AS c "
            "ON c.key = s.key WHERE s.line < ? ORDER BY s.key",
            (before,),
            batch=1,
        ):
            yield bytes(key), bytes(value)

    def line_at(self, before: int, position: int) -> int | None:
        """The line of the ``position``-th key (0-based, key order) among those carried on
        lines below ``before``; None past the end."""
        row = self._tx.one(
            f"SELECT line FROM {_TABLE} WHERE line < ? ORDER BY key LIMIT 1 OFFSET ?",
            (before, position),
        )
        return None if row is None else int(row[0])
