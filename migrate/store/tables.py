"""The five application tables of a store (live or staged) as sorted row sources.

Both classes satisfy :class:`migrate.rules.links.SortedTables` (``rows`` in key order, ``get``
point lookups), so :func:`migrate.rules.links.validate_links` and
:func:`migrate.store.digest.archive_digest` run unchanged over a store, over an import's
staging area, or over a legacy file read by another module.  Use them inside
``store.snapshot()`` (live) or a transaction (staged) so all tables come from one state.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from bbg_core.errors import StoreError
from migrate.store import ledger
from migrate.store.codec import ORDINAL, Head
from migrate.store.tx import check_table


def _damaged(db: Any, table: str, what: str) -> StoreError:
    path = getattr(db, "path", "the store")
    return StoreError(
        f"{path}: {table}: {what}; the store file is damaged. Run `bbg-migrate doctor` and "
        "restore it from a backup",
        path=str(path),
        table=table,
    )


def _sorted_blobs(
    db: Any, table: str, rows: Iterator[tuple[Any, ...]]
) -> Iterator[tuple[bytes, bytes]]:
    """``rows`` checked as a damaged file can break them: two blobs each, keys increasing."""
    previous: bytes | None = None
    try:
        for key, value in rows:
            if type(key) is not bytes or type(value) is not bytes:
                raise _damaged(db, table, f"a row holds {type(key).__name__}/"
                               f"{type(value).__name__} where two blobs belong")  # fmt: skip
            if previous is not None and key <= previous:
                raise _damaged(db, table, f"key {key.hex()} is out of key order")
            previous = key
            yield key, value
    finally:
        close = getattr(rows, "close", None)
        if close is not None:
            close()  # the cursor now, not when the connection is already gone


def _blob(db: Any, table: str, value: Any) -> bytes:
    if type(value) is not bytes:
        raise _damaged(db, table, f"a value is a {type(value).__name__}, not a blob")
    return value


class _Db(Protocol):
    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...

    def rows(self, sql: str, params: Any = (), batch: int = 512) -> Iterator[tuple[Any, ...]]: ...


class StoreTables:
    """The live five tables of a store."""

    def __init__(self, db: _Db) -> None:
        self._db = db
        self._has_retention: bool | None = None

    def rows(self, table: str) -> Iterator[tuple[bytes, bytes]]:
        """Every row of ``table`` in key (memcmp) order."""
        yield from _sorted_blobs(
            self._db, table,
            self._db.rows(f"SELECT key, value FROM {check_table(table)} ORDER BY key"),
        )  # fmt: skip

    def get(self, table: str, key: bytes) -> bytes | None:
        """The value under ``key``, or None."""
        row = self._db.one(f"SELECT value FROM {check_table(table)} WHERE key = ?", (key,))
        return None if row is None else _blob(self._db, table, row[0])

    def _retention(self) -> bool:
        if self._has_retention is None:
            self._has_retention = self._db.one(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                (ledger.BOUNDARIES,),
            ) is not None
        return self._has_retention

    def boundary(self, namespace: bytes) -> tuple[int, Head] | None:
        """The retained boundary of a ``nohistory`` namespace (see :mod:`migrate.rules.links`)."""
        return ledger.boundary_of(self._db, namespace) if self._retention() else None  # type: ignore[arg-type]

    def excised(self, content_id: bytes) -> bool:
        """True if ``content_id`` was excised from this store."""
        if not self._retention():
            return False
        return ledger.is_excised(self._db, "content", content_id) is not None  # type: ignore[arg-type]


class StagedTables:
    """The rows one import has staged for the five tables (inert until activation)."""

    def __init__(self, db: _Db, import_id: str) -> None:
        self._db = db
        self.import_id = import_id

    def rows(self, table: str) -> Iterator[tuple[bytes, bytes]]:
        """Every staged row of ``table`` in key order."""
        yield from _sorted_blobs(
            self._db, table,
            self._db.rows(
                "SELECT key, value FROM bbg_import_v1_staged WHERE import_id = ? AND tbl = ? "
                "ORDER BY key",
                (self.import_id, ORDINAL[check_table(table)]),
            ),
        )  # fmt: skip

    def get(self, table: str, key: bytes) -> bytes | None:
        """The staged value under ``key``, or None."""
        row = self._db.one(
            "SELECT value FROM bbg_import_v1_staged WHERE import_id = ? AND tbl = ? AND key = ?",
            (self.import_id, ORDINAL[check_table(table)], key),
        )
        return None if row is None else _blob(self._db, table, row[0])
