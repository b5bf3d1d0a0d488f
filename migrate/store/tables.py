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

from migrate.store import ledger
from migrate.store.codec import ORDINAL, Head
from migrate.store.live import LiveReader, blob, sorted_blobs
from migrate.store.tx import check_table


class _Db(Protocol):
    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...

    def rows(self, sql: str, params: Any = (), batch: int = 512) -> Iterator[tuple[Any, ...]]: ...


class _LiveDb(_Db, LiveReader, Protocol):
    """A handle that reads both the live rows and the toolkit's records."""


class StoreTables:
    """The live five tables of a store (on either engine: :mod:`migrate.store.live`)."""

    def __init__(self, db: _LiveDb) -> None:
        self._db = db
        self._has_retention: bool | None = None

    def rows(self, table: str) -> Iterator[tuple[bytes, bytes]]:
        """Every row of ``table`` in key (memcmp) order."""
        return self._db.live_rows(check_table(table))

    def get(self, table: str, key: bytes) -> bytes | None:
        """The value under ``key``, or None."""
        return self._db.live_get(check_table(table), key)

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
        yield from sorted_blobs(
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
        return None if row is None else blob(self._db, table, row[0])
