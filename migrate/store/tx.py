"""A write transaction on a store, and immutable puts into the five application tables.

``with store.transaction() as tx:`` opens ``BEGIN IMMEDIATE``; leaving the block commits
(or rolls back on an exception).  Inside, everything goes through ``tx``:

* ``tx.put(table, key, value)`` / ``tx.put_many(table, rows)``: immutable puts into one of
  the five application tables (same bytes = no-op, different bytes = Conflict);
* ``tx.get(table, key)``: read a row as this transaction sees it;
* ``tx.execute(sql, params)`` / ``tx.one(sql, params)``: the import/fence tables
  (used by :mod:`migrate.store.imports` and :mod:`fences`);
* ``tx.number``: the transaction number this commit will get (``bbg_storage_v1``).

A transaction that wrote nothing ends in ROLLBACK, so it never bumps the counter and can
never end in an unknown outcome.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from bbg_core.errors import Conflict, StoreError
from migrate.store.codec import ARCHIVE_ORDER, MAX_KEY_LEN
from migrate.store.connection import Connection, Params

_TABLES = frozenset(ARCHIVE_ORDER)


def check_table(table: str) -> str:
    """``table`` if it is one of the five application tables (names go into SQL text)."""
    if table not in _TABLES:
        raise ValueError(f"{table!r} is not one of the five application tables")
    return table


class Tx:
    """An open write transaction (see the module docstring)."""

    def __init__(self, conn: Connection, number: int) -> None:
        self._conn = conn
        self.number = number
        self.wrote = False

    @property
    def path(self) -> Path:
        return self._conn.path

    def execute(self, sql: str, params: Params = ()) -> sqlite3.Cursor:
        """Run one writing statement inside the transaction."""
        self.wrote = True
        return self._conn.execute(sql, params)

    def one(self, sql: str, params: Params = ()) -> tuple[Any, ...] | None:
        """The first row of a read query, or None."""
        return self._conn.one(sql, params)

    def rows(self, sql: str, params: Params = (), batch: int = 512) -> Iterator[tuple[Any, ...]]:
        """Stream a read query's rows."""
        return self._conn.rows(sql, params, batch)

    def get(self, table: str, key: bytes) -> bytes | None:
        """The value stored under ``key`` in an application table, or None."""
        row = self._conn.one(f"SELECT value FROM {check_table(table)} WHERE key = ?", (key,))
        return None if row is None else bytes(row[0])

    def put(self, table: str, key: bytes, value: bytes) -> bool:
        """Immutable put; True if the row is new, False if the same bytes were there."""
        _check_key(table, key, self.path)
        cur = self.execute(
            f"INSERT INTO {check_table(table)} (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO NOTHING",
            (key, value),
        )
        if cur.rowcount == 1:
            return True
        existing = self.get(table, key)
        if existing != value:
            raise Conflict(
                f"{self.path}: {table} already holds other bytes under key {key.hex()}; "
                "stored rows are immutable",
                path=str(self.path),
                table=table,
                key=key,
            )
        return False

    def put_many(self, table: str, rows: Iterable[tuple[bytes, bytes]]) -> int:
        """Immutable puts of many rows; returns how many were new (Conflict on a clash)."""
        check_table(table)
        batch = list(rows)
        for key, _ in batch:
            _check_key(table, key, self.path)
        if not batch:
            return 0
        before = self.total_changes()
        self.wrote = True
        self._conn.executemany(
            f"INSERT INTO {table} (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", batch
        )
        inserted = self.total_changes() - before
        if inserted != len(batch):
            # Some keys were present already: each must hold exactly these bytes.
            for key, value in batch:
                if self.get(table, key) != value:
                    raise Conflict(
                        f"{self.path}: {table} already holds other bytes under key "
                        f"{key.hex()}; stored rows are immutable",
                        path=str(self.path),
                        table=table,
                        key=key,
                    )
        return inserted

    def scratch(self, sql: str, params: Params = ()) -> None:
        """Run a statement on a TEMP table: it changes no stored row, so it does not count
        as a write (a transaction that only did this still ends in ROLLBACK)."""
        self._conn.execute(sql, params)

    def scratch_many(self, sql: str, rows: Any) -> None:
        """:meth:`scratch` for each parameter row."""
        self._conn.executemany(sql, rows)

    def executemany(self, sql: str, rows: Any) -> None:
        """Run one writing statement for each parameter row."""
        self.wrote = True
        self._conn.executemany(sql, rows)

    def total_changes(self) -> int:
        """SQLite's running count of changed rows on this connection."""
        row = self._conn.one("SELECT total_changes()")
        assert row is not None
        return int(row[0])


def _check_key(table: str, key: bytes, path: Path) -> None:
    if not key or len(key) > MAX_KEY_LEN:
        raise StoreError(
            f"{path}: {table} key of {len(key)} bytes (keys are 1..{MAX_KEY_LEN} bytes)",
            path=str(path),
            table=table,
            key=key,
        )
