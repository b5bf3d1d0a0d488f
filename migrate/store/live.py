"""The live rows of bbg's tables, read the same way on both engines.

Every handle of a store -- a read-only view, a store handle, a write transaction -- offers

* ``live_get(table, key) -> bytes | None`` and
* ``live_rows(table, *, prefix=b"", after=None, limit=None) -> Iterator[(key, value)]``
  (keys starting with ``prefix``, strictly after ``after``, in byte order: bbg's own
  ``scan_bounds``),

over the tables bbg knows (:data:`migrate.store.bbgdb.PARTITIONS`; the SQLite engine keeps
the five application tables).  Code above the store reads rows only through these, so it
does not know whether a SQLite file or a Fjall keyspace answers.  This module holds the
SQLite implementation; the Fjall one reads the keyspace (:mod:`migrate.store.keyspace`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from bbg_core.errors import StoreError
from migrate.store.codec import ARCHIVE_ORDER

_TABLES = frozenset(ARCHIVE_ORDER)


class LiveReader(Protocol):
    """What a handle offers to read bbg's rows (see the module docstring)."""

    @property
    def path(self) -> Any: ...

    def live_get(self, table: str, key: bytes) -> bytes | None: ...

    def live_rows(self, table: str, *, prefix: bytes = b"", after: bytes | None = None,
                  limit: int | None = None) -> Iterator[tuple[bytes, bytes]]: ...  # fmt: skip


class _Sql(Protocol):
    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...

    def rows(self, sql: str, params: Any = (), batch: int = 512) -> Iterator[tuple[Any, ...]]: ...


def _table(table: str) -> str:
    if table not in _TABLES:
        raise ValueError(f"{table!r} is not one of the tables a SQLite store keeps")
    return table


def damaged(db: Any, table: str, what: str) -> StoreError:
    """The error for a row a damaged store file holds."""
    path = getattr(db, "path", "the store")
    return StoreError(
        f"{path}: {table}: {what}; the store file is damaged. Run `bbg-migrate doctor` and "
        "restore it from a backup",
        path=str(path),
        table=table,
    )


def blob(db: Any, table: str, value: Any) -> bytes:
    """``value`` if it is bytes (a SQLite column may hold anything), else the damage error."""
    if type(value) is not bytes:
        raise damaged(db, table, f"a value is a {type(value).__name__}, not a blob")
    return value


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest key above every key that starts with ``prefix`` (None: no such key)."""
    trimmed = prefix.rstrip(b"\xff")
    if not trimmed:
        return None
    return trimmed[:-1] + bytes([trimmed[-1] + 1])


def sql_get(db: _Sql, table: str, key: bytes) -> bytes | None:
    """``live_get`` of a SQLite store."""
    row = db.one(f"SELECT value FROM {_table(table)} WHERE key = ?", (key,))
    return None if row is None else blob(db, table, row[0])


def sql_rows(db: _Sql, table: str, *, prefix: bytes = b"", after: bytes | None = None,
             limit: int | None = None) -> Iterator[tuple[bytes, bytes]]:  # fmt: skip
    """``live_rows`` of a SQLite store."""
    where: list[str] = []
    params: list[Any] = []
    low = prefix if after is None or after < prefix else after
    if low:
        where.append("key > ?" if low == after else "key >= ?")
        params.append(low)
    end = prefix_end(prefix) if prefix else None
    if end is not None:
        where.append("key < ?")
        params.append(end)
    sql = f"SELECT key, value FROM {_table(table)}"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY key"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    yield from sorted_blobs(db, table, db.rows(sql, tuple(params)))


def sorted_blobs(
    db: Any, table: str, rows: Iterator[tuple[Any, ...]]
) -> Iterator[tuple[bytes, bytes]]:
    """``rows`` checked as a damaged SQLite file can break them: two blobs each, keys
    increasing."""
    previous: bytes | None = None
    try:
        for key, value in rows:
            if type(key) is not bytes or type(value) is not bytes:
                raise damaged(db, table, f"a row holds {type(key).__name__}/"
                              f"{type(value).__name__} where two blobs belong")  # fmt: skip
            if previous is not None and key <= previous:
                raise damaged(db, table, f"key {key.hex()} is out of key order")
            previous = key
            yield key, value
    finally:
        close = getattr(rows, "close", None)
        if close is not None:
            close()  # the cursor now, not when the connection is already gone
