"""bbg's ``last_transaction`` on the SQLite engine: the change id of each write transaction.

bbg (cyberia-to/bbg ``rs/src/storage/database/mod.rs`` ``Database::transaction``,
``change_id``) gives every non-empty transaction an id over its changes and keeps the id of
the last one as ``bbg_storage_v1["last_transaction"]``; a transfer seal binds it as
``prior``.  The Fjall engine writes that key itself, from its batch
(:func:`migrate.store.bbgdb.with_markers`).  A SQLite store records the same id, computed by
the same function (:func:`migrate.store.bbgdb.change_id_of_sorted`), over the same changes:

* the rows of the five application tables, under the partition of the same name;
* the status marker (table ``bbg_import_v1``'s row) as ``bbg_import_v1["status"]``;
* the transfer seal (table ``bbg_import_v1_export``) as ``bbg_import_v1["application-export"]``
  = target ‖ nonce ‖ prior ‖ manifest (from :mod:`migrate.store.export`).

**Where the changes come from.** As on the Fjall engine, from the write transaction itself:
its :class:`~migrate.store.tx.Tx` tells its :class:`Changes` every change it makes to those
rows, keyed by (partition, key) so the last change of a key wins:

* an immutable put (``put``, ``put_many``) that added a row: the row; one whose bytes were
  already there changed nothing and is no change (as on the Fjall engine);
* ``set_head`` and ``write_status``: always a change, even with the same bytes (an
  overwritten row; the Fjall engine records every ``set_head`` and status write too);
* a delete that removed a row (retention): a removal;
* the seal: the 128-byte value;
* an activation's bulk copy (``INSERT … SELECT`` of an import's staged rows): the staged
  keys not yet in the table, i.e. exactly the rows the copy adds (:meth:`Changes.bulk`).

**Memory, and the one TEMP table.** No trigger copies rows, and a transaction runs no DDL or
``PRAGMA`` for the id (whether the storage row has the column is known once per handle).
Changes are held in memory up to :data:`SPILL_BYTES` (keys and values, 8 MiB).  Two kinds
of transaction go past that to
one TEMP table of the connection (:func:`_spill_table`, its rows kept only until the id is
computed), and only they touch it:

* one whose held changes exceed the budget (a large ``apply`` or put loop): the held
  changes go there with their values, in order, so the last change still wins;
* an activation: its ``INSERT … SELECT`` copies an import's staged rows inside SQLite and may
  be a whole 1 GB import, which must not pass through memory, nor through Python twice.
  Streaming those rows through the Tx instead would read every byte into Python once more;
  a trigger on the table would copy every value.  One ``INSERT … SELECT`` records the keys
  the copy adds (the staged keys not yet in the table), without values: the value of such a
  key is the row as the transaction leaves it, read when the id is computed (a later
  change of that key in the same transaction overrides it, as held changes are moved there
  first and later ones after).

With the table in use the id is hashed from one ordered query per partition (joined with the
live table for a copy's keys), in pieces (:func:`bbgdb.change_id_of_sorted`), so memory stays
bounded whatever the size of the transaction.

:meth:`Changes.finish`, just before ``COMMIT``, computes the id when there was a change and
keeps it in ``bbg_storage_v1``'s column ``bbg_last_transaction``.  One SQLite transaction is
one id, as one Fjall batch is (``apply``'s several ledger entries in one SQLite transaction
too).

The column's value: 32 bytes (the id), empty (no transaction changed bbg's tables yet: a
store made with this column), NULL or no column (unknown: a store written before this
release, a restored store -- snapshot/1 does not carry it -- or a built store whose rows were
loaded outside a transaction).  :func:`recorded` reads it; the next transaction that changes
bbg's tables records a known id again.  Outside this table nothing changes: event/1,
snapshot/1 (its storage record names its two columns), digests and receipts.  The records
of a Fjall store never record one (``Store.bbg_tables``): there bbg's key is the truth.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from migrate.store import bbgdb

COLUMN = "bbg_last_transaction"
#: "unknown": the store keeps no id (see the module docstring).
UNKNOWN = "unknown"
#: Bytes of changes (keys, values and a per-change allowance) held in memory before they go
#: to the TEMP table (a file, read through SQLite's page cache).  Small: an ``apply`` of a
#: long stream is one transaction, and its memory must stay bounded by one event, not grow
#: with the stream (tests/share/test_stream_hostile.py; 64 MiB let 16 events of 3 MiB each
#: stay in memory).
SPILL_BYTES = 8 << 20
_PER_CHANGE = 96  # the dict entry, tuple and bytes objects of one held change
_SPILL = "temp.bbg_migrate_changes"
#: The partitions whose changes count, in bbg's order (name bytes), with their SQLite table
#: (None: the partition is no table of that name; its changes are never a bulk copy's).
_PARTITIONS: tuple[tuple[str, str | None], ...] = tuple(
    sorted([(t, t) for t in bbgdb.APPLICATION_TABLES] + [(bbgdb.MIGRATION, None)])
)


class Changes:
    """The changes of one SQLite write transaction to bbg's rows (see the module docstring).

    ``db`` is the transaction's connection; ``storage`` the store handle's cache of whether
    the storage row has :data:`COLUMN` (a dict shared by the handle's transactions)."""

    def __init__(self, db: Any, storage: dict[str, bool]) -> None:
        self._db = db
        self._storage = storage
        self._budget = SPILL_BYTES
        self._held: dict[tuple[str, bytes], bytes | None] = {}
        self._held_bytes = 0
        self._spilled = False

    def put(self, partition: str, key: bytes, value: bytes | None) -> None:
        """``partition[key]`` is now ``value`` (None: removed) in this transaction."""
        entry = (partition, key)
        if entry not in self._held:
            self._held_bytes += len(key) + _PER_CHANGE
        self._held[entry] = value
        if value is not None:
            self._held_bytes += len(value)
        if self._held_bytes > self._budget:
            self._spill()

    def put_rows(self, partition: str, rows: list[tuple[bytes, bytes]]) -> None:
        """:meth:`put` of each ``(key, value)`` (a page of rows: one call, not one each)."""
        held, size = self._held, 0
        for key, value in rows:
            entry = (partition, key)
            if entry not in held:
                size += len(key) + _PER_CHANGE
            held[entry] = value
            size += len(value)
        self._held_bytes += size
        if self._held_bytes > self._budget:
            self._spill()

    def bulk(self, table: str, keys_sql: str, params: tuple[Any, ...]) -> None:
        """A bulk copy into ``table`` is about to add the rows whose keys ``keys_sql`` (one
        ``SELECT key … WHERE …`` with ``params``) selects: recorded by key, their values read
        from ``table`` when the id is computed."""
        self._spill()  # what was held happened before: the copy's rows override it
        self._db.scratch(
            f"INSERT INTO {_SPILL} (name, key, value, live) SELECT ?, key, NULL, 1 "
            f"FROM ({keys_sql}) WHERE true ON CONFLICT (name, key) DO UPDATE SET "
            "value = NULL, live = 1",
            (table, *params),
        )

    def _spill(self) -> None:
        if not self._spilled:
            for statement in _spill_table():
                self._db.scratch(statement)
            self._spilled = True
        if self._held:
            self._db.scratch_many(
                f"INSERT INTO {_SPILL} (name, key, value, live) VALUES (?, ?, ?, 0) "
                "ON CONFLICT (name, key) DO UPDATE SET value = excluded.value, live = 0",
                ((t, k, v) for (t, k), v in self._held.items()),
            )
            self._held.clear()
            self._held_bytes = 0

    def _sorted(self) -> Iterator[tuple[str, bytes, bytes | None]]:
        if not self._spilled:
            for (partition, key), value in sorted(self._held.items()):
                yield partition, key, value
            return
        self._spill()
        for partition, table in _PARTITIONS:
            value_sql, join = "c.value", ""
            if table is not None:  # a bulk copy's key: the row as the transaction leaves it
                value_sql = "CASE WHEN c.live THEN l.value ELSE c.value END"
                join = f" LEFT JOIN main.{table} AS l ON c.live AND l.key = c.key"
            for key, value in self._db.rows(
                f"SELECT c.key, {value_sql} FROM {_SPILL} AS c{join} WHERE c.name = ? "
                "ORDER BY c.key",
                (partition,),
            ):
                yield partition, bytes(key), None if value is None else bytes(value)

    def finish(self) -> bytes | None:
        """Before ``COMMIT``: keep the change id of this transaction's changes (if any) as
        the store's ``last_transaction``; the id, or None when bbg's rows did not change."""
        ident = bbgdb.change_id_of_sorted(self._sorted())
        if self._spilled:
            self._db.scratch(f"DELETE FROM {_SPILL}")
        self._held.clear()
        if ident is None:
            return None
        if not self._storage.get(COLUMN):
            if has_column(self._db):
                # Committed, and the tool never drops it: known for the handle's life (a
                # column this transaction adds is not: the transaction may still roll back).
                self._storage[COLUMN] = True
            else:
                self._db.execute(f"ALTER TABLE {bbgdb.METADATA} ADD COLUMN {COLUMN} BLOB")
        self._db.execute(f"UPDATE {bbgdb.METADATA} SET {COLUMN} = ? WHERE id = 1", (ident,))
        return ident


def _spill_table() -> list[str]:
    """The TEMP table of a transaction's spilled changes (module docstring); created by the
    first transaction of a connection that needs it (``IF NOT EXISTS``: one statement per
    such transaction, and only those)."""
    return [
        f"CREATE TABLE IF NOT EXISTS {_SPILL} (name TEXT NOT NULL, key BLOB NOT NULL, "
        "value BLOB, live INTEGER NOT NULL, PRIMARY KEY (name, key)) WITHOUT ROWID"
    ]


def has_column(db: Any) -> bool:
    """Whether the store's storage row has the column (stores made before it lack it)."""
    return any(str(r[1]) == COLUMN for r in db.rows(f"PRAGMA table_info({bbgdb.METADATA})"))


def forget(db: Any) -> None:
    """Mark the id unknown (rows were written where no transaction recorded them: a restore,
    a build)."""
    if has_column(db):
        db.execute(f"UPDATE {bbgdb.METADATA} SET {COLUMN} = NULL WHERE id = 1")


def recorded(db: Any) -> bytes | None | str:
    """The store's recorded ``last_transaction``: its 32 bytes, None (no transaction changed
    bbg's tables), or :data:`UNKNOWN`."""
    if not has_column(db):
        return UNKNOWN
    row = db.one(f"SELECT {COLUMN} FROM {bbgdb.METADATA} WHERE id = 1")
    if row is None or row[0] is None:
        return UNKNOWN
    value = bytes(row[0])
    return value if value else None
