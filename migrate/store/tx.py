"""A write transaction on a store, and immutable puts into the five application tables.

``with store.transaction() as tx:`` opens ``BEGIN IMMEDIATE``; leaving the block commits
(or rolls back on an exception).  Inside, everything goes through ``tx``:

* ``tx.put(table, key, value)`` / ``tx.put_many(table, rows)``: immutable puts into one of
  the five application tables (same bytes = no-op, different bytes = Conflict);
* ``tx.get(table, key)``: read a row as this transaction sees it;
* ``tx.delete(table, key)``: remove a row (retention: the only removal from the five tables);
* ``tx.execute(sql, params)`` / ``tx.one(sql, params)``: the import/fence tables
  (used by :mod:`migrate.store.imports` and :mod:`fences`);
* ``tx.number``: the ledger transaction number this commit will get (``bbg_storage_v1``);
* the ledger entry being built (:mod:`migrate.store.ledger`): ``tx.mark(kind)`` names what it
  did, ``tx.note_head`` / ``tx.note_rows`` / ``tx.note_event`` record what it changed;
  ``tx.next_entry(origin)`` starts another ledger transaction inside the same SQLite
  transaction (``apply``: one per source transaction).

Every change these methods make to bbg's rows (the five tables, the status marker, the seal)
is told to ``tx.bbg`` when the store records bbg's change id (:mod:`migrate.store.bbg_changes`);
the five tables and the status row are written nowhere else inside a transaction.

A transaction that wrote nothing ends in ROLLBACK, so it never bumps the counter, appends no
ledger row and can never end in an unknown outcome.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from bbg_core.errors import Conflict, StoreError
from migrate.store import ledger, live, markers
from migrate.store.bbg_changes import Changes
from migrate.store.bbgdb import MIGRATION, STATUS
from migrate.store.codec import (
    ARCHIVE_ORDER,
    CLAIMS,
    CONTENT,
    HEADS,
    HISTORY,
    MAX_KEY_LEN,
    ORDINAL,
    Head,
)
from migrate.store.connection import Connection, Params

_TABLES = frozenset(ARCHIVE_ORDER)
_NOTED = frozenset({"application_content", "application_unique_claims"})


def check_table(table: str) -> str:
    """``table`` if it is one of the five application tables (names go into SQL text)."""
    if table not in _TABLES:
        raise ValueError(f"{table!r} is not one of the five application tables")
    return table


class Tx:
    """An open write transaction (see the module docstring)."""

    def __init__(
        self, conn: Connection, number: int, *, kind: str = "write", ref: str | None = None,
        ledgered: bool = True,
    ) -> None:  # fmt: skip
        self._conn = conn
        self.number = number
        self.wrote = False
        # The ledger entry being built (False: a v1 store being upgraded, or restore).
        self.ledgered = ledgered
        self.kind = kind
        self.ref = ref
        self.events: list[dict[str, Any]] = []
        self.origin: tuple[int, int] | None = None
        self.entry_wrote = False
        self.last_written: int | None = None
        self.at: int | None = None
        self.discarded = False
        # What the transaction is about (request, namespace, import): errors name it.
        self.context: dict[str, Any] = {}
        #: Its changes to bbg's rows, for bbg's change id (None: not recorded).
        self.bbg: Changes | None = None

    # -- the ledger entry ---------------------------------------------------------------
    def mark(self, kind: str, ref: str | None = None) -> None:
        """Say what this transaction does; the highest-ranked kind wins (ledger.KIND_RANK)."""
        if ledger.KIND_RANK[kind] > ledger.KIND_RANK.get(self.kind, 0):
            self.kind = kind
        if ref is not None and self.ref is None:
            self.ref = ref

    def note_head(self, namespace: bytes, before: Head | None, after: Head,
                  request: bytes | None = None) -> None:  # fmt: skip
        """Record that this entry moved ``namespace``'s head (the first ``before`` is kept)."""
        if not self.ledgered:
            return
        self.execute(
            f"INSERT INTO {ledger.HEADS} (tx, namespace, before, after, request) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (tx, namespace) DO UPDATE SET "
            "after = excluded.after, request = NULL",
            (self.number, namespace, None if before is None else before.encode(),
             after.encode(), request),
        )  # fmt: skip

    def note_rows(self, table: str, keys: Iterable[bytes]) -> None:
        """Record content/claim rows this entry added (not commits of its history entries)."""
        if not self.ledgered:
            return
        ordinal = ORDINAL[table]
        self.executemany(
            f"INSERT INTO {ledger.ROWS} (tx, tbl, key) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [(self.number, ordinal, k) for k in keys],
        )

    def note_event(self, doc: dict[str, Any]) -> None:
        """Record a fence, generation, import or retention event of this entry."""
        self.wrote = self.entry_wrote = True
        self.events.append(doc)

    def discard(self) -> None:
        """Roll the whole transaction back at the end of its block (a dry run: the same code
        ran, nothing is kept)."""
        self.discarded = True

    def close_entry(self) -> None:
        """Append the ledger row of the current entry if it changed anything."""
        if not self.entry_wrote:
            return
        if self.ledgered:
            self.at = ledger.append(
                self._conn, self.number, self.kind, self.ref, self.events, self.origin
            )
        self.last_written = self.number
        self.entry_wrote = False

    def next_entry(self, kind: str, origin: tuple[int, int] | None, ref: str | None = None) -> None:
        """Close the current entry and start the next ledger transaction (same SQLite one)."""
        if self.entry_wrote:
            self.close_entry()
            self.number += 1
        self.kind, self.ref, self.origin, self.events = kind, ref, origin, []

    @property
    def path(self) -> Path:
        return self._conn.path

    # -- the fence and generation records (:mod:`migrate.store.markers`, for fences/) -----
    def read_status(self) -> tuple[str | None, str]:
        """``(status marker or None, generation column)``."""
        return markers.read_status(self)

    def fence_record(self, namespace: bytes) -> dict[str, Any] | None:
        """The fence of ``namespace``, or None."""
        return markers.fence_record(self, namespace)

    def write_status(self, marker: str, generation: str) -> None:
        """Set the status marker in this transaction."""
        markers.write_status(self, marker, generation)
        if self.bbg is not None:
            self.bbg.marker(STATUS, marker.encode())

    def note_change(self, partition: str, key: bytes, value: bytes | None) -> None:
        """Record a change of bbg's ``partition[key]`` to ``value`` (None: removed) that this
        transaction made otherwise than by its methods above (the seal,
        :mod:`migrate.store.export`); a row of the five tables is recorded by key, its value
        read when the id is computed."""
        if self.bbg is None:
            return
        if partition == MIGRATION:
            self.bbg.marker(key, value)
        else:
            self.bbg.rows(partition, (key,))

    def put_fence(self, namespace: bytes, import_id: str, reason: str,
                  value: bytes | None = None) -> bool:  # fmt: skip
        """Fence ``namespace`` in this transaction; True if it was not fenced before (the
        SQLite engine keeps the import and reason; bbg's ``value`` is a Fjall key's)."""
        return markers.put_fence(self, namespace, import_id, reason)

    def execute(self, sql: str, params: Params = ()) -> sqlite3.Cursor:
        """Run one writing statement inside the transaction (one that changed no row, e.g.
        an ``INSERT … ON CONFLICT DO NOTHING`` that found its row, is not a write)."""
        cur = self._conn.execute(sql, params)
        if cur.rowcount != 0:
            self.wrote = self.entry_wrote = True
        return cur

    def one(self, sql: str, params: Params = ()) -> tuple[Any, ...] | None:
        """The first row of a read query, or None."""
        return self._conn.one(sql, params)

    def rows(self, sql: str, params: Params = (), batch: int = 512) -> Iterator[tuple[Any, ...]]:
        """Stream a read query's rows."""
        return self._conn.rows(sql, params, batch)

    def get(self, table: str, key: bytes) -> bytes | None:
        """The value stored under ``key`` in an application table, or None."""
        return self.live_get(check_table(table), key)

    def live_get(self, table: str, key: bytes) -> bytes | None:
        """The value under ``key`` in ``table`` as this transaction sees it, or None."""
        return live.sql_get(self._conn, table, key)

    def live_rows(self, table: str, *, prefix: bytes = b"", after: bytes | None = None,
                  limit: int | None = None) -> Iterator[tuple[bytes, bytes]]:  # fmt: skip
        """The rows of ``table`` as this transaction sees them, in key order."""
        return live.sql_rows(self._conn, table, prefix=prefix, after=after, limit=limit)

    def set_head(self, namespace: bytes, head: Head) -> None:
        """Write ``namespace``'s head (the one row of the five tables that is overwritten)."""
        value = head.encode()
        self.execute(
            "INSERT INTO application_heads (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (namespace, value),
        )
        if self.bbg is not None:  # overwritten: a change even with the same bytes
            self.bbg.rows(HEADS, (namespace,))

    def delete(self, table: str, key: bytes) -> int:
        """Remove ``key`` from an application table; 1 if it was there, else 0."""
        removed = self.execute(f"DELETE FROM {check_table(table)} WHERE key = ?", (key,)).rowcount
        if removed and self.bbg is not None:
            self.bbg.rows(table, (key,))
        return int(removed)

    def put(self, table: str, key: bytes, value: bytes, *, note: bool = True) -> bool:
        """Immutable put; True if the row is new, False if the same bytes were there.

        A new content or claim row is recorded in the ledger entry (``note=False``: the caller
        records it otherwise, e.g. the commit content of a history entry it adds)."""
        _check_key(table, key, self.path)
        cur = self._conn.execute(
            f"INSERT INTO {check_table(table)} (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO NOTHING",
            (key, value),
        )
        if cur.rowcount == 1:
            self.wrote = self.entry_wrote = True
            if self.bbg is not None:
                self.bbg.rows(table, (key,))
            if note and table in _NOTED:
                self.note_rows(table, [key])
            elif table == "application_heads":
                self.note_head(key, None, Head.decode(value))
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
        noted = table in _NOTED and self.ledgered
        present: set[bytes] = set()
        # Which keys exist already: only the others are this entry's new rows (and changes).
        if noted or (table == "application_heads" and self.ledgered) or self.bbg is not None:
            for i in range(0, len(batch), 500):
                keys = [k for k, _ in batch[i : i + 500]]
                marks = ", ".join("?" for _ in keys)
                present.update(bytes(r[0]) for r in self._conn.rows(
                    f"SELECT key FROM {table} WHERE key IN ({marks})", keys))  # fmt: skip
        inserted = self._conn.executemany(
            f"INSERT INTO {table} (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", batch
        )
        if inserted:
            self.wrote = self.entry_wrote = True
            if self.bbg is not None:
                self.bbg.rows(table, (k for k, _ in batch if k not in present))
            if noted:
                self.note_rows(table, [k for k, _ in batch if k not in present])
            elif table == "application_heads" and self.ledgered:
                for k, v in batch:
                    if k not in present:
                        self.note_head(k, None, Head.decode(v))
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

    def publish_staged(
        self, import_id: str, table_done: Callable[[str], None] | None = None
    ) -> dict[str, int]:
        """Copy ``import_id``'s staged rows into the five tables (immutable puts: Conflict,
        nothing copied, when a key holds other bytes) and note the moved heads and new rows
        in the ledger entry; returns new rows per table."""
        moved: list[tuple[bytes, Head | None, Head]] = []
        for key, value in self.rows(
            "SELECT key, value FROM bbg_import_v1_staged WHERE import_id = ? AND tbl = ? "
            "ORDER BY key",
            (import_id, ORDINAL[HEADS]),
        ):
            after = Head.decode(bytes(value))
            row = self.one("SELECT value FROM application_heads WHERE key = ?", (bytes(key),))
            before = None if row is None else Head.decode(bytes(row[0]))
            if before != after:
                moved.append((bytes(key), before, after))
        if self.ledgered:
            for table in (CONTENT, CLAIMS):
                not_commits = (
                    " AND s.key NOT IN (SELECT value FROM bbg_import_v1_staged "
                    "WHERE import_id = ? AND tbl = ?)" if table == CONTENT else ""
                )  # fmt: skip
                params: tuple[Any, ...] = (self.number, ORDINAL[table], import_id,
                                           ORDINAL[table])  # fmt: skip
                if table == CONTENT:
                    params += (import_id, ORDINAL[HISTORY])
                self.execute(
                    "INSERT INTO bbg_ledger_v1_rows (tx, tbl, key) SELECT ?, ?, s.key "
                    "FROM bbg_import_v1_staged AS s WHERE s.import_id = ? AND s.tbl = ? "
                    f"AND s.key NOT IN (SELECT key FROM {table}){not_commits} "
                    "ON CONFLICT DO NOTHING",
                    params,
                )
        inserted: dict[str, int] = {}
        for ordinal, table in enumerate(ARCHIVE_ORDER):
            clash = self.one(
                f"SELECT s.key FROM bbg_import_v1_staged AS s JOIN {table} AS l ON l.key = s.key "
                "WHERE s.import_id = ? AND s.tbl = ? AND l.value != s.value LIMIT 1",
                (import_id, ordinal),
            )
            if clash is not None:
                raise Conflict(
                    f"{self.path}: activating import {import_id}: {table} already holds other "
                    f"bytes under key {bytes(clash[0]).hex()}",
                    path=str(self.path),
                    table=table,
                    key=bytes(clash[0]),
                    import_id=import_id,
                )
            if self.bbg is not None:  # the rows this copy adds (module bbg_changes)
                self.bbg.bulk(
                    table,
                    "SELECT key FROM bbg_import_v1_staged WHERE import_id = ? AND tbl = ? "
                    f"AND key NOT IN (SELECT key FROM {table})",
                    (import_id, ordinal),
                )
            cur = self.execute(
                f"INSERT INTO {table} (key, value) SELECT key, value FROM bbg_import_v1_staged "
                "WHERE import_id = ? AND tbl = ? ORDER BY key ON CONFLICT (key) DO NOTHING",
                (import_id, ordinal),
            )
            inserted[table] = max(cur.rowcount, 0)
            if table_done is not None:
                table_done(table)
        for ns, before, after in moved:
            self.note_head(ns, before, after)
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
        self.wrote = self.entry_wrote = True
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
